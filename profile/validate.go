package profile

import (
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// Limits are a service's field limits (§4.2). The specification only
// recommends values, which services publish and enforce as policy; a
// payload over a limit is rejected with invalid_event like any other rule
// violation.
//
// A nil *Limits means the recommended values. Within a Limits value, a zero
// field also means its recommended value and a negative field means no
// limit. Limits is a plain value, safe to share once built.
type Limits struct {
	// NameLength is the most Unicode scalar values in name (128).
	NameLength int
	// DescriptionLength is the most Unicode scalar values in description
	// (2048).
	DescriptionLength int
	// Capabilities is the most capabilities (64).
	Capabilities int
	// ServiceEndpoints is the most service endpoints (32).
	ServiceEndpoints int
	// Links is the most links (64).
	Links int
	// Delegations is the most delegation hints (32).
	Delegations int
	// ExtraSize is the most bytes of extra in RFC 8785 form (32 KiB).
	ExtraSize int
}

// RecommendedLimits returns the limits §4.2 recommends.
func RecommendedLimits() *Limits {
	return &Limits{
		NameLength:        128,
		DescriptionLength: 2048,
		Capabilities:      64,
		ServiceEndpoints:  32,
		Links:             64,
		Delegations:       32,
		ExtraSize:         32 << 10,
	}
}

// NoLimits returns limits that limit nothing: the structural rules only.
// Verifying an update some service already accepted uses it, because that
// service's limits may be larger than the recommended ones.
func NoLimits() *Limits {
	return &Limits{-1, -1, -1, -1, -1, -1, -1}
}

// resolve fills zero fields with the recommended values.
func (l *Limits) resolve() Limits {
	r := *RecommendedLimits()
	if l == nil {
		return r
	}
	pick := func(v, def int) int {
		if v == 0 {
			return def
		}
		return v
	}
	return Limits{
		NameLength:        pick(l.NameLength, r.NameLength),
		DescriptionLength: pick(l.DescriptionLength, r.DescriptionLength),
		Capabilities:      pick(l.Capabilities, r.Capabilities),
		ServiceEndpoints:  pick(l.ServiceEndpoints, r.ServiceEndpoints),
		Links:             pick(l.Links, r.Links),
		Delegations:       pick(l.Delegations, r.Delegations),
		ExtraSize:         pick(l.ExtraSize, r.ExtraSize),
	}
}

// over reports whether n exceeds limit (negative = unlimited).
func over(n, limit int) bool { return limit >= 0 && n > limit }

// Validate checks every rule of §4 that the value itself can show, for a
// payload signed by actor, under lim (nil = recommended limits):
//
//   - id is actor's Agent ID; name is non-empty;
//   - avatar_url, service endpoint URLs and principal ids are HTTPS URLs;
//     link URLs are http or https URLs;
//   - capabilities, endpoint protocols and delegation scopes are unique
//     non-empty strings; endpoints are unique by (type, url), links by
//     (url, rel); endpoint types, link names and rels are non-empty (rel
//     values outside the defined ones are fine);
//   - delegation ids follow the Agent Delegation ID grammar; every
//     delegation has a principal; principal members beyond id, type and
//     name do not repeat those;
//   - extra is a JSON object; strings are valid UTF-8;
//   - the counts and lengths of lim.
//
// Closedness (no undefined members, no nulls) is a property of JSON text
// and is checked by ParsePayload. The first violation is returned as an
// *identity.Error with code invalid_event naming the field.
func (p *Payload) Validate(actor identity.AgentID, lim *Limits) error {
	if fe := p.check(actor, lim.resolve()); fe != nil {
		return fe.toError(identity.CodeInvalidEvent, "profile payload")
	}
	return nil
}

func (p *Payload) check(actor identity.AgentID, lim Limits) *FieldError {
	switch {
	case p.ID.IsZero():
		return &FieldError{"/id", "is required"}
	case p.ID != actor:
		return &FieldError{"/id", "is not the event actor " + actor.String()}
	}
	if fe := nonEmpty("/name", p.Name); fe != nil {
		return fe
	}
	if over(utf8.RuneCountInString(p.Name), lim.NameLength) {
		return &FieldError{"/name", "is longer than " + strconv.Itoa(lim.NameLength) + " characters"}
	}
	if p.Description != nil {
		if fe := validString("/description", *p.Description); fe != nil {
			return fe
		}
		if over(utf8.RuneCountInString(*p.Description), lim.DescriptionLength) {
			return &FieldError{"/description", "is longer than " + strconv.Itoa(lim.DescriptionLength) + " characters"}
		}
	}
	if p.AvatarURL != nil {
		if fe := checkURL("/avatar_url", *p.AvatarURL, false); fe != nil {
			return fe
		}
	}
	if p.Provider != nil {
		if fe := validString("/provider", *p.Provider); fe != nil {
			return fe
		}
	}
	if over(len(p.Capabilities), lim.Capabilities) {
		return tooMany("/capabilities", lim.Capabilities)
	}
	if fe := uniqueStrings("/capabilities", p.Capabilities); fe != nil {
		return fe
	}
	if over(len(p.ServiceEndpoints), lim.ServiceEndpoints) {
		return tooMany("/service_endpoints", lim.ServiceEndpoints)
	}
	seenEP := make(map[[2]string]bool, len(p.ServiceEndpoints))
	for i, ep := range p.ServiceEndpoints {
		base := "/service_endpoints/" + strconv.Itoa(i)
		if fe := nonEmpty(base+"/type", ep.Type); fe != nil {
			return fe
		}
		if fe := checkURL(base+"/url", ep.URL, false); fe != nil {
			return fe
		}
		if fe := uniqueStrings(base+"/protocols", ep.Protocols); fe != nil {
			return fe
		}
		key := [2]string{ep.Type, ep.URL}
		if seenEP[key] {
			return &FieldError{base, "repeats the type and url of an earlier service endpoint"}
		}
		seenEP[key] = true
	}
	if over(len(p.Links), lim.Links) {
		return tooMany("/links", lim.Links)
	}
	seenLink := make(map[[2]string]bool, len(p.Links))
	for i, l := range p.Links {
		base := "/links/" + strconv.Itoa(i)
		if fe := nonEmpty(base+"/name", l.Name); fe != nil {
			return fe
		}
		if fe := checkURL(base+"/url", l.URL, true); fe != nil {
			return fe
		}
		if fe := nonEmpty(base+"/rel", l.Rel); fe != nil {
			return fe
		}
		key := [2]string{l.URL, l.Rel}
		if seenLink[key] {
			return &FieldError{base, "repeats the url and rel of an earlier link"}
		}
		seenLink[key] = true
	}
	if over(len(p.Delegations), lim.Delegations) {
		return tooMany("/delegations", lim.Delegations)
	}
	for i := range p.Delegations {
		if fe := p.Delegations[i].check("/delegations/" + strconv.Itoa(i)); fe != nil {
			return fe
		}
	}
	if p.Extra != nil {
		if fe := checkExtra(p.Extra, lim.ExtraSize); fe != nil {
			return fe
		}
	}
	return nil
}

func (d *Delegation) check(base string) *FieldError {
	if d.ID != nil && !validDelegationID(*d.ID) {
		return &FieldError{base + "/id", "is not an Agent Delegation ID (1–128 of A-Z a-z 0-9 . _ ~ -, not . or ..)"}
	}
	pr := &d.Principal
	if pr.ID == "" && pr.Type == nil && pr.Name == nil && pr.Other == nil {
		return &FieldError{base + "/principal", "is required (an object with an HTTPS id)"}
	}
	if fe := checkURL(base+"/principal/id", pr.ID, false); fe != nil {
		return fe
	}
	if pr.Type != nil {
		if fe := validString(base+"/principal/type", *pr.Type); fe != nil {
			return fe
		}
	}
	if pr.Name != nil {
		if fe := validString(base+"/principal/name", *pr.Name); fe != nil {
			return fe
		}
	}
	if pr.Other != nil {
		if fe := checkPrincipalOther(base+"/principal", pr.Other); fe != nil {
			return fe
		}
	}
	if d.Relationship != nil {
		if fe := validString(base+"/relationship", *d.Relationship); fe != nil {
			return fe
		}
	}
	return uniqueStrings(base+"/scopes", d.Scopes)
}

// checkPrincipalOther checks the open members of a principal: one valid
// JSON object that does not define id, type or name a second time.
func checkPrincipalOther(base string, v jsontext.Value) *FieldError {
	if err := strictjson.Validate(v); err != nil || v.Kind() != '{' {
		return &FieldError{base, "has open members that are not one valid JSON object"}
	}
	d := strictjson.NewDecoder(v)
	d.ReadToken() // '{'
	for d.PeekKind() == '"' {
		tok, _ := d.ReadToken()
		switch name := tok.String(); name {
		case "id", "type", "name":
			return &FieldError{base + "/" + name, "is defined twice"}
		}
		d.SkipValue()
	}
	return nil
}

func checkExtra(v jsontext.Value, limit int) *FieldError {
	if err := strictjson.Validate(v); err != nil {
		return &FieldError{"/extra", "is not valid JSON: " + err.Error()}
	}
	if v.Kind() != '{' {
		return &FieldError{"/extra", "must be a JSON object"}
	}
	if limit >= 0 {
		canon, err := strictjson.Canonicalize(v)
		if err != nil {
			return &FieldError{"/extra", "cannot be canonicalized: " + err.Error()}
		}
		if len(canon) > limit {
			return &FieldError{"/extra", "is larger than " + strconv.Itoa(limit) + " bytes"}
		}
	}
	return nil
}

func tooMany(ptr string, limit int) *FieldError {
	return &FieldError{ptr, "has more than " + strconv.Itoa(limit) + " items"}
}

func validString(ptr, s string) *FieldError {
	if !utf8.ValidString(s) {
		return &FieldError{ptr, "is not valid UTF-8"}
	}
	return nil
}

func nonEmpty(ptr, s string) *FieldError {
	if s == "" {
		return &FieldError{ptr, "must be a non-empty string"}
	}
	return validString(ptr, s)
}

// uniqueStrings checks an array of unique non-empty strings, naming the
// first offending item.
func uniqueStrings(ptr string, ss []string) *FieldError {
	seen := make(map[string]bool, len(ss))
	for i, s := range ss {
		item := ptr + "/" + strconv.Itoa(i)
		if fe := nonEmpty(item, s); fe != nil {
			return fe
		}
		if seen[s] {
			return &FieldError{item, "repeats an earlier item " + quoteTrunc(s)}
		}
		seen[s] = true
	}
	return nil
}

// validDelegationID is the Agent Delegation ID grammar
// ^[A-Za-z0-9._~-]{1,128}$ minus "." and "..".
func validDelegationID(s string) bool {
	if len(s) == 0 || len(s) > 128 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '~' || c == '-') {
			return false
		}
	}
	return true
}

// checkURL checks an absolute https URL, or an http or https URL when
// allowHTTP. The schema's rule is format "uri" plus a case-sensitive
// scheme prefix; "uri" is taken literally: only RFC 3986 characters,
// well-formed percent escapes, and a non-empty host, so a value is never
// something a browser would first have to repair.
func checkURL(ptr, s string, allowHTTP bool) *FieldError {
	want := "an HTTPS URL"
	if allowHTTP {
		want = "an http or https URL"
	}
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok && allowHTTP {
		rest, ok = strings.CutPrefix(s, "http://")
	}
	if !ok {
		return &FieldError{ptr, "must be " + want + " (got " + quoteTrunc(s) + ")"}
	}
	if !uriChars(rest) {
		return &FieldError{ptr, "must be " + want + " made of RFC 3986 characters"}
	}
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" {
		return &FieldError{ptr, "must be " + want + " with a host"}
	}
	return nil
}

// uriChars reports whether s has only RFC 3986 characters (unreserved,
// reserved, and %XX escapes).
func uriChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-._~:/?#[]@!$&'()*+,;=", c) >= 0:
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			i += 2
		default:
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

package profile

import (
	"encoding"
	"errors"
	"reflect"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// Payload is the payload of a profile.update event (§4.1): the whole
// profile, which replaces the previous one entirely.
//
// Presence is part of what was signed, so the type keeps it: optional
// strings are pointers (nil = absent; Go 1.26's new("text") makes a
// pointer inline), optional arrays and objects are nil when absent and
// non-nil — possibly empty — when present. Marshalling a parsed Payload
// therefore yields the signed payload again, up to member order and
// insignificant spelling (its RFC 8785 form is identical).
//
// A Payload is a plain value with no internal synchronization.
type Payload struct {
	// ID is the agent's Agent ID; it must equal the event actor.
	// NewUpdate fills it from the signer when it is zero.
	ID identity.AgentID `json:"id"`
	// Name is the display name; required and non-empty.
	Name string `json:"name"`
	// Description is free text.
	Description *string `json:"description,omitzero"`
	// AvatarURL is an HTTPS URL of an image.
	AvatarURL *string `json:"avatar_url,omitzero"`
	// Provider is the self-declared provider, operator or runtime.
	Provider *string `json:"provider,omitzero"`
	// Capabilities are self-declared tags: unique, non-empty.
	Capabilities []string `json:"capabilities,omitzero"`
	// ServiceEndpoints are unique by (Type, URL).
	ServiceEndpoints []ServiceEndpoint `json:"service_endpoints,omitzero"`
	// Links are unique by (URL, Rel).
	Links []Link `json:"links,omitzero"`
	// Delegations are hints only, never proof of representation.
	Delegations []Delegation `json:"delegations,omitzero"`
	// Extra is application data: a JSON object kept exactly as given.
	Extra jsontext.Value `json:"extra,omitzero"`
}

// ServiceEndpoint is one item of service_endpoints (closed object).
type ServiceEndpoint struct {
	// Type is a non-empty endpoint type, e.g. "agent-api".
	Type string `json:"type"`
	// URL is an HTTPS URL.
	URL string `json:"url"`
	// Protocols are unique non-empty protocol names, e.g.
	// "agent-discourse/1.0".
	Protocols []string `json:"protocols,omitzero"`
}

// Link is one item of links (closed object).
type Link struct {
	// Name is a non-empty label.
	Name string `json:"name"`
	// URL is an http or https URL.
	URL string `json:"url"`
	// Rel is a non-empty relation. The Rel… constants are the defined
	// values; the vocabulary is open and any other value is valid.
	Rel string `json:"rel"`
}

// The link relations §4.1 defines. Others are allowed.
const (
	RelHomepage      = "homepage"
	RelDocumentation = "documentation"
	RelSourceCode    = "source_code"
	RelSocial        = "social"
	RelBrowser       = "browser"
)

// Delegation is a delegation hint (§4.3, closed object). It is metadata
// only: to learn whether the agent represents the principal, resolve the
// principal with the Agent Delegation protocol and verify what it returns.
type Delegation struct {
	// ID is an Agent Delegation ID: 1–128 characters of [A-Za-z0-9._~-],
	// not "." or "..".
	ID *string `json:"id,omitzero"`
	// Principal describes whom the agent claims to act for; required.
	Principal Principal `json:"principal"`
	// Relationship is free text, e.g. "primary_delegate".
	Relationship *string `json:"relationship,omitzero"`
	// Scopes are unique non-empty strings.
	Scopes []string `json:"scopes,omitzero"`
}

// Principal is a delegation principal descriptor. Unlike the rest of the
// payload it is open: members other than id, type and name are kept in
// Other and signed as they are.
type Principal struct {
	// ID is the principal's HTTPS URL; required.
	ID string `json:"id"`
	// Type is free text, e.g. "person".
	Type *string `json:"type,omitzero"`
	// Name is free text.
	Name *string `json:"name,omitzero"`
	// Other holds the remaining members as one JSON object, in their
	// original order; nil when there are none. It must not repeat id,
	// type or name.
	Other jsontext.Value `json:",embed"`
}

// ParsePayload strictly decodes and validates a profile.update payload for
// the given actor: strict JSON (no duplicate members, valid Unicode, safe
// numbers), the closed payload shape (unknown members and nulls rejected,
// except inside extra and the open members of a principal), and every rule
// of Validate under lim (nil = recommended limits).
//
// Errors are *identity.Error values with code invalid_event that name the
// field (see FieldError and FieldPointer).
func ParsePayload(b []byte, actor identity.AgentID, lim *Limits) (*Payload, error) {
	p := new(Payload)
	if fe := decodeClosed(b, p, payloadRequired); fe != nil {
		return nil, fe.toError(identity.CodeInvalidEvent, "profile payload")
	}
	if err := p.Validate(actor, lim); err != nil {
		return nil, err
	}
	return p, nil
}

var payloadRequired = []string{"id", "name"}

// decodeClosed decodes one JSON object into v (a *Payload or a document
// wire struct) under the profile rules that a Go value can no longer show:
// strict JSON, an object at the root, the required member names present,
// no null where a defined field is (json would read it as "absent"), and
// no undefined members.
func decodeClosed(b []byte, v any, required []string) *FieldError {
	if err := strictjson.Validate(b); err != nil {
		ptr := ""
		var se *strictjson.Error
		if errors.As(err, &se) {
			ptr = se.Pointer
		}
		return &FieldError{Pointer: ptr, Reason: "malformed JSON: " + err.Error()}
	}
	present, fe := scanObject(b)
	if fe != nil {
		return fe
	}
	for _, name := range required {
		if !present[name] {
			return &FieldError{Pointer: "/" + name, Reason: "is required"}
		}
	}
	if err := json.Unmarshal(b, v, json.RejectUnknownMembers(true)); err != nil {
		return semanticFieldError(err)
	}
	return nil
}

// scanObject walks a valid JSON text, requires an object at the root,
// rejects null outside the open parts and reports the top-level member
// names.
func scanObject(b []byte) (map[string]bool, *FieldError) {
	d := strictjson.NewDecoder(b)
	present := map[string]bool{}
	for first := true; ; first = false {
		tok, err := d.ReadToken()
		if err != nil {
			break // only io.EOF: b already passed Validate
		}
		kind := tok.Kind()
		if first && kind != '{' {
			return nil, &FieldError{Reason: "is not a JSON object"}
		}
		switch kind {
		case '"':
			// An odd member count at depth 1 means tok was a name.
			if d.StackDepth() == 1 {
				if _, n := d.StackIndex(1); n%2 == 1 {
					present[tok.String()] = true
				}
			}
		case 'n':
			if ptr := d.StackPointer(); !nullAllowed(ptr) {
				return nil, &FieldError{Pointer: string(ptr), Reason: "must not be null"}
			}
		}
	}
	return present, nil
}

// nullAllowed reports whether a null at ptr sits inside an open part of
// the payload: inside extra, or in a principal member other than id, type
// and name.
func nullAllowed(ptr jsontext.Pointer) bool {
	var toks []string
	for t := range ptr.Tokens() {
		toks = append(toks, t)
		if len(toks) > 4 {
			break
		}
	}
	switch {
	case len(toks) >= 2 && toks[0] == "extra":
		return true
	case len(toks) >= 4 && toks[0] == "delegations" && toks[2] == "principal":
		switch toks[3] {
		case "id", "type", "name":
			return false
		}
		return true
	}
	return false
}

// semanticFieldError turns a json unmarshal error into a FieldError at the
// pointer json reports.
func semanticFieldError(err error) *FieldError {
	var se *json.SemanticError
	if !errors.As(err, &se) {
		return &FieldError{Reason: "malformed: " + err.Error()}
	}
	ptr := string(se.JSONPointer)
	switch {
	case errors.Is(se.Err, json.ErrUnknownName):
		return &FieldError{Pointer: ptr, Reason: "is not a field defined by " + Protocol}
	case se.Err != nil && se.JSONKind != '"' && se.JSONKind != 0 && jsonTypeOf(se.GoType) == "a string":
		return &FieldError{Pointer: ptr, Reason: "must be a string, not a JSON " + strictjson.KindName(byte(se.JSONKind))}
	case se.Err != nil:
		var ie *identity.Error
		if errors.As(se.Err, &ie) && ie.Code == identity.CodeInvalidActor {
			return &FieldError{Pointer: ptr, Reason: "is not a valid Agent ID (" + ie.Error() + ")"}
		}
		return &FieldError{Pointer: ptr, Reason: "invalid value: " + se.Err.Error()}
	}
	return &FieldError{Pointer: ptr, Reason: "must be " + jsonTypeOf(se.GoType) + ", not a JSON " + strictjson.KindName(byte(se.JSONKind))}
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// jsonTypeOf names the JSON type a Go type decodes from.
func jsonTypeOf(t reflect.Type) string {
	switch {
	case t == nil:
		return "of another JSON type"
	case reflect.PointerTo(t).Implements(textUnmarshaler):
		return "a string"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonTypeOf(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Int, reflect.Int64:
		return "an integer"
	}
	return "of another JSON type"
}

// quoteTrunc quotes at most 64 bytes of untrusted text for a message.
func quoteTrunc(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "…"
	}
	return strconv.Quote(s)
}

package adp

import (
	"bytes"
	"net/url"
	"regexp"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// DiscoveryPath is where a host serves its discovery document (§16.1).
const DiscoveryPath = "/.well-known/agent-discourse"

// Discovery is the seed draft's ADP discovery document (§16.1, §5.2),
// served at [DiscoveryPath]. It is not the later Identity-style document
// ([identity.Discovery] wants a "service" member this draft does not have):
// the seed names the host and lists the API and SSE endpoints instead.
//
// A discovery document is a service document, to which Agent Identity's
// "keep unknown members" guidance applies (§6), and the seed-era kernel
// schema leaves it, its profile and its endpoints open. So members this
// draft does not define are kept in the Extra fields rather than refused,
// and encoding a Discovery with json v2 writes them back.
type Discovery struct {
	// Protocol is always Protocol ("agent-discourse/1.0").
	Protocol string `json:"protocol"`
	// Host names the host, such as "al.ink"; required and non-empty.
	Host string `json:"host"`
	// Features lists optional host features (§16.1): "rooms",
	// "join-requests", "registered-packs", "external-packs" and so on.
	// Unique, non-empty; unknown ones are to be ignored.
	Features []string `json:"features,omitzero"`
	// RegisteredPacks lists the registered packs the host has built in,
	// such as "adp:reactions/1.0"; unique. A host declaring the
	// "registered-packs" feature MUST serve every one it lists.
	RegisteredPacks []string `json:"registered_packs,omitzero"`
	// Profile is the host's Agent Profile resolver (§5.2); nil if absent.
	Profile *DiscoveryProfile `json:"profile,omitzero"`
	// Endpoints holds the API and SSE base URLs; nil if absent.
	Endpoints *DiscoveryEndpoints `json:"endpoints,omitzero"`
	// Extra holds members this draft does not define.
	Extra map[string]jsontext.Value `json:",embed"`
}

// DiscoveryProfile is the profile member of the discovery document (§5.2):
// how the host resolves Agent Profiles. Every member is optional.
type DiscoveryProfile struct {
	// Mode says whether profile resolution is local, external, optional or
	// required by local policy (§5.2), for example "external". The draft
	// fixes no list of values, so any string is kept.
	Mode string `json:"mode,omitzero"`
	// Service is the origin of the profile service ("https://…").
	Service identity.Origin `json:"service,omitzero"`
	// Protocol is the profile protocol, such as "agent-profile/1.0".
	Protocol string `json:"protocol,omitzero"`
	// Extra holds members this draft does not define.
	Extra map[string]jsontext.Value `json:",embed"`
}

// DiscoveryEndpoints is the endpoints member of the discovery document:
// absolute URLs under which the host serves its HTTP API (§16) and its
// SSE streams (§17), such as "https://api.al.ink/v1".
type DiscoveryEndpoints struct {
	API string `json:"api,omitzero"`
	SSE string `json:"sse,omitzero"`
	// Extra holds members this draft does not define, unchecked.
	Extra map[string]jsontext.Value `json:",embed"`
}

// HasFeature reports whether the document lists the feature.
func (d *Discovery) HasFeature(name string) bool {
	for _, f := range d.Features {
		if f == name {
			return true
		}
	}
	return false
}

// registeredPackRE is the kernel schema's pattern for registered_packs.
var registeredPackRE = regexp.MustCompile(`^adp:[a-z0-9-]+/[0-9]+\.[0-9]+$`)

// ParseDiscovery strictly parses a discovery document (§16.1): strict JSON
// (internal/strictjson: no duplicate names, safe numbers, valid UTF-8), an
// object; protocol exactly "agent-discourse/1.0"; host a non-empty
// string; features unique non-empty strings; registered_packs unique
// "adp:<name>/<major>.<minor>" ids; profile, if present, an object whose
// mode and protocol are strings and whose service is an origin valid under
// opts; endpoints, if present, an object whose api and sse are absolute
// URLs with an origin valid under opts and no userinfo, query or
// fragment.
// Members the draft does not define — at the top level, in profile and in
// endpoints — are kept in [Discovery.Extra]. Errors are *[identity.Error]
// values with code invalid_request, as for [identity.ParseDiscovery].
func ParseDiscovery(b []byte, opts *identity.OriginOptions) (*Discovery, error) {
	bad := func(msg string, err error) (*Discovery, error) {
		return nil, &identity.Error{Code: identity.CodeInvalidRequest, Message: "invalid ADP discovery document: " + msg, Err: err}
	}
	var w struct {
		Protocol        jsontext.Value            `json:"protocol"`
		Host            jsontext.Value            `json:"host"`
		Features        jsontext.Value            `json:"features"`
		RegisteredPacks jsontext.Value            `json:"registered_packs"`
		Profile         jsontext.Value            `json:"profile"`
		Endpoints       jsontext.Value            `json:"endpoints"`
		Extra           map[string]jsontext.Value `json:",embed"`
	}
	if k := jsontext.Value(bytes.TrimLeft(b, " \t\r\n")).Kind(); k != '{' {
		return bad("not a JSON object", nil)
	}
	if err := strictjson.UnmarshalOpen(b, &w); err != nil {
		return bad("malformed", err)
	}
	d := &Discovery{Extra: w.Extra}
	var err error
	if d.Protocol, err = strictjson.String(w.Protocol); err != nil || d.Protocol != Protocol {
		return bad("protocol is not "+Protocol, err)
	}
	if d.Host, err = strictjson.String(w.Host); err != nil || d.Host == "" {
		return bad("host is not a non-empty string", err)
	}
	if d.Features, err = uniqueStrings(w.Features, func(s string) bool { return s != "" }); err != nil {
		return bad("features are not unique non-empty strings", err)
	}
	if d.RegisteredPacks, err = uniqueStrings(w.RegisteredPacks, registeredPackRE.MatchString); err != nil {
		return bad("registered_packs are not unique registered pack ids", err)
	}
	if len(w.Profile) > 0 {
		if d.Profile, err = parseDiscoveryProfile(w.Profile, opts); err != nil {
			return bad("profile", err)
		}
	}
	if len(w.Endpoints) > 0 {
		if d.Endpoints, err = parseDiscoveryEndpoints(w.Endpoints, opts); err != nil {
			return bad("endpoints", err)
		}
	}
	return d, nil
}

// uniqueStrings decodes an optional array of unique strings that each
// satisfy ok.
func uniqueStrings(v jsontext.Value, ok func(string) bool) ([]string, error) {
	if len(v) == 0 {
		return nil, nil
	}
	if v.Kind() != '[' {
		return nil, strictjson.ErrWrongKind
	}
	d := strictjson.NewDecoder(v)
	if _, err := d.ReadToken(); err != nil {
		return nil, err
	}
	out := []string{}
	seen := map[string]bool{}
	for d.PeekKind() != ']' {
		item, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		s, err := strictjson.String(item)
		if err != nil {
			return nil, err
		}
		if !ok(s) || seen[s] {
			return nil, identity.Errorf(identity.CodeInvalidRequest, "item %q is not allowed or repeated", clip(s))
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, nil
}

func parseDiscoveryProfile(v jsontext.Value, opts *identity.OriginOptions) (*DiscoveryProfile, error) {
	var w struct {
		Mode     jsontext.Value            `json:"mode"`
		Service  jsontext.Value            `json:"service"`
		Protocol jsontext.Value            `json:"protocol"`
		Extra    map[string]jsontext.Value `json:",embed"`
	}
	if v.Kind() != '{' {
		return nil, strictjson.ErrWrongKind
	}
	if err := strictjson.UnmarshalOpen(v, &w); err != nil {
		return nil, err
	}
	p := &DiscoveryProfile{Extra: w.Extra}
	var err error
	if len(w.Mode) > 0 {
		if p.Mode, err = strictjson.String(w.Mode); err != nil {
			return nil, identity.Wrap(identity.CodeInvalidRequest, "mode", err)
		}
	}
	if len(w.Protocol) > 0 {
		if p.Protocol, err = strictjson.String(w.Protocol); err != nil {
			return nil, identity.Wrap(identity.CodeInvalidRequest, "protocol", err)
		}
	}
	if len(w.Service) > 0 {
		s, err := strictjson.String(w.Service)
		if err == nil {
			p.Service, err = identity.ParseOrigin(s, opts)
		}
		if err != nil {
			return nil, identity.Wrap(identity.CodeInvalidRequest, "service", err)
		}
	}
	return p, nil
}

func parseDiscoveryEndpoints(v jsontext.Value, opts *identity.OriginOptions) (*DiscoveryEndpoints, error) {
	var w struct {
		API   jsontext.Value            `json:"api"`
		SSE   jsontext.Value            `json:"sse"`
		Extra map[string]jsontext.Value `json:",embed"`
	}
	if v.Kind() != '{' {
		return nil, strictjson.ErrWrongKind
	}
	if err := strictjson.UnmarshalOpen(v, &w); err != nil {
		return nil, err
	}
	e := &DiscoveryEndpoints{Extra: w.Extra}
	for _, f := range []struct {
		name string
		raw  jsontext.Value
		dst  *string
	}{{"api", w.API, &e.API}, {"sse", w.SSE, &e.SSE}} {
		if len(f.raw) == 0 {
			continue
		}
		s, err := strictjson.String(f.raw)
		if err == nil {
			err = checkEndpointURL(s, opts)
		}
		if err != nil {
			return nil, identity.Wrap(identity.CodeInvalidRequest, f.name, err)
		}
		*f.dst = s
	}
	return e, nil
}

// checkEndpointURL accepts an absolute http(s) URL without userinfo or
// fragment whose origin is valid under opts (https, or loopback http when
// opts allow it).
func checkEndpointURL(s string, opts *identity.OriginOptions) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.User != nil || u.Fragment != "" || u.Opaque != "" || !u.IsAbs() || u.RawQuery != "" {
		return identity.ErrOriginPath
	}
	_, err = identity.OriginOf(u, opts)
	return err
}

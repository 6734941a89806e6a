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

// Discovery is a host's ADP discovery document, served at
// [DiscoveryPath], in the shape of the draft the host serves; Draft says
// which. The two shapes are told apart by their members:
//
//   - the seed's (§16.1, §5.2) names the host ("host") and lists the API
//     and SSE endpoints; its profile has mode, service and protocol;
//   - the 2026-09-24 draft's (§15.1) is an Agent Identity discovery
//     document: a "service" origin, which room.create's host names, and
//     no "host"; its endpoints are "rooms" (which each room URL extends
//     with /{room_id}) and "my_rooms"; its profile has service and
//     required.
//
// A discovery document is a service document, to which Agent Identity's
// "keep unknown members" guidance applies (§6), and the kernel schemas
// leave it, its profile and its endpoints open. So members a draft does
// not define are kept in the Extra fields rather than refused, and
// encoding a Discovery with json v2 writes them back.
type Discovery struct {
	// Draft is the draft whose shape the document has (not a member).
	Draft Draft `json:"-"`
	// Protocol is always Protocol ("agent-discourse/1.0").
	Protocol string `json:"protocol"`
	// Host names the host, such as "al.ink": required and non-empty in
	// the seed's document (seed draft only).
	Host string `json:"host,omitzero"`
	// Service is the host API origin, which room.create's host names:
	// required in the 2026-09-24 draft's document (2026-09-24 draft
	// only).
	Service identity.Origin `json:"service,omitzero"`
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

// DiscoveryProfile is the profile member of the discovery document (seed
// §5.2, 2026-09-24 §4.2): how the host resolves Agent Profiles. Every
// member is optional.
type DiscoveryProfile struct {
	// Mode says whether profile resolution is local, external, optional or
	// required by local policy (§5.2), for example "external". The draft
	// fixes no list of values, so any string is kept (seed draft only).
	Mode string `json:"mode,omitzero"`
	// Service is the origin of the profile service ("https://…").
	Service identity.Origin `json:"service,omitzero"`
	// Protocol is the profile protocol, such as "agent-profile/1.0"
	// (seed draft only).
	Protocol string `json:"protocol,omitzero"`
	// Required says the host requires a resolvable Agent Profile
	// (2026-09-24 draft only; Agent Profile §8).
	Required bool `json:"required,omitzero"`
	// Extra holds members this draft does not define.
	Extra map[string]jsontext.Value `json:",embed"`
}

// DiscoveryEndpoints is the endpoints member of the discovery document:
// in the seed, absolute URLs under which the host serves its HTTP API
// (§16) and its SSE streams (§17), such as "https://api.al.ink/v1"; in
// the 2026-09-24 draft (§15.1), the URL of the room collection, such as
// "https://api.al.ink/v1/rooms", and of the agent's rooms.
type DiscoveryEndpoints struct {
	API string `json:"api,omitzero"` // seed draft only
	SSE string `json:"sse,omitzero"` // seed draft only
	// Rooms is where POST creates rooms and GET lists discoverable ones;
	// each room URL extends it with /{room_id} (2026-09-24 draft only).
	Rooms string `json:"rooms,omitzero"`
	// MyRooms is GET /v1/me/rooms (2026-09-24 draft only).
	MyRooms string `json:"my_rooms,omitzero"`
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

// ParseDiscovery strictly parses a discovery document of either draft and
// says which in [Discovery.Draft]: a document with a "service" member and
// no "host" member is the 2026-09-24 draft's (§15.1, see
// parseLaterDiscovery); any other is the seed's (§16.1): strict JSON
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
	if _, service := w.Extra["service"]; service && len(w.Host) == 0 {
		return parseLaterDiscovery(b, opts)
	}
	d := &Discovery{Draft: Draft20260704, Extra: w.Extra}
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
		if d.Profile, err = parseDiscoveryProfile(w.Profile, opts, false); err != nil {
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

// parseDiscoveryProfile parses the profile member of a discovery document;
// later: of the 2026-09-24 draft's, which has required.
func parseDiscoveryProfile(v jsontext.Value, opts *identity.OriginOptions, later bool) (*DiscoveryProfile, error) {
	var w struct {
		Mode     jsontext.Value            `json:"mode"`
		Service  jsontext.Value            `json:"service"`
		Protocol jsontext.Value            `json:"protocol"`
		Required jsontext.Value            `json:"required"`
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
	if len(w.Required) > 0 && !later {
		// The seed's profile has no required member: kept as unknown.
		if p.Extra == nil {
			p.Extra = map[string]jsontext.Value{}
		}
		p.Extra["required"] = w.Required
	} else if len(w.Required) > 0 {
		switch string(w.Required) {
		case "true":
			p.Required = true
		case "false":
		default:
			return nil, identity.NewError(identity.CodeInvalidRequest, "required is not a boolean")
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

// parseLaterDiscovery parses the 2026-09-24 draft's discovery document
// (§15.1): an Agent Identity discovery document ([identity.ParseDiscovery]:
// strict JSON, service an origin valid under opts, endpoints absolute URLs
// on origins valid under opts, unique non-empty features), whose protocol
// is exactly Protocol, whose registered_packs are unique registered pack
// ids, and whose profile, if present, is an object with service an origin
// valid under opts and required a boolean. Members the draft does not
// define are kept in the Extra fields.
func parseLaterDiscovery(b []byte, opts *identity.OriginOptions) (*Discovery, error) {
	bad := func(msg string, err error) (*Discovery, error) {
		return nil, &identity.Error{Code: identity.CodeInvalidRequest, Message: "invalid ADP discovery document (2026-09-24 draft): " + msg, Err: err}
	}
	doc, err := identity.ParseDiscovery(b, opts)
	if err != nil {
		return nil, err
	}
	if doc.Protocol != Protocol {
		return bad("protocol is not "+Protocol, nil)
	}
	d := &Discovery{Draft: Draft20260924, Protocol: doc.Protocol, Service: doc.Service, Features: doc.Features}
	extra := doc.Extra
	if raw, ok := extra["registered_packs"]; ok {
		if d.RegisteredPacks, err = uniqueStrings(raw, registeredPackRE.MatchString); err != nil {
			return bad("registered_packs are not unique registered pack ids", err)
		}
	}
	if raw, ok := extra["profile"]; ok {
		if d.Profile, err = parseDiscoveryProfile(raw, opts, true); err != nil {
			return bad("profile", err)
		}
	}
	for name := range extra {
		if name == "registered_packs" || name == "profile" {
			continue
		}
		if d.Extra == nil {
			d.Extra = map[string]jsontext.Value{}
		}
		d.Extra[name] = extra[name]
	}
	if doc.Endpoints != nil {
		e := &DiscoveryEndpoints{}
		for name, u := range doc.Endpoints {
			switch name {
			case "rooms":
				e.Rooms = u
			case "my_rooms":
				e.MyRooms = u
			default:
				if e.Extra == nil {
					e.Extra = map[string]jsontext.Value{}
				}
				e.Extra[name], _ = jsontext.AppendQuote(nil, u)
			}
		}
		d.Endpoints = e
	}
	return d, nil
}

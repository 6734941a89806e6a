package identity

import (
	"errors"
	"strings"
)

// MaxAgentURLRoutes is the largest number of route parameters an Agent URL
// may carry (Identity §3.5).
const MaxAgentURLRoutes = 8

// Reasons an Agent URL is rejected (Identity §3.5). ParseAgentURL returns an
// *Error with code invalid_request that wraps one of them, or the
// invalid_actor error of a malformed Agent ID.
var (
	ErrAgentURLCharacter = errors.New("agent url: character not allowed (non-ASCII, space, fragment or percent-encoding)")
	ErrAgentURLPath      = errors.New("agent url: path is not /<protocol>/<resource>")
	ErrAgentURLQuery     = errors.New("agent url: query is not 1 to 8 route parameters")
	ErrAgentURLRoute     = errors.New("agent url: route is not a unique serialized https origin")
)

// AgentURL names an agent, optionally one protocol resource it owns, and
// optionally where to reach it:
//
//	did:agent:<key>[/<protocol>/<resource>][?route=<origin>[&route=<origin>]…]
//
// Routes are unauthenticated hints in order of preference; they are not
// part of the URL's identity. Two Agent URLs are equal when their Stable
// forms are equal. Protocol fields that identify an actor (actor, kid, iss,
// sub) carry an AgentID, never an Agent URL.
type AgentURL struct {
	ID AgentID
	// Protocol is the lowercase protocol name (reserved: mail, knowledge,
	// profile, delegation, discourse); "" when the URL has no path.
	Protocol string
	// Resource is the protocol's resource name, of [A-Za-z0-9_-]; "" when
	// the URL has no path.
	Resource string
	// Routes are the serialized HTTPS origins of the route parameters.
	Routes []Origin
}

// ParseAgentURL parses s with every rule of Identity §3.5: a full Agent ID
// before the first '/' or '?'; either no path or exactly two non-empty
// segments (a lowercase a–z protocol name and a resource of
// [A-Za-z0-9_-]); either no query or 1–8 unique route parameters, each a
// serialized HTTPS origin, and no other parameter; printable ASCII only,
// without fragment, percent-encoding, trailing slash or empty segment.
func ParseAgentURL(s string) (AgentURL, error) {
	var u AgentURL
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '#' || c == '%' {
			return u, agentURLError(s, ErrAgentURLCharacter)
		}
	}
	rest, query, hasQuery := strings.Cut(s, "?")
	idText, path, hasPath := strings.Cut(rest, "/")
	id, err := ParseAgentID(idText)
	if err != nil {
		return u, Wrap(CodeInvalidRequest, "agent url "+truncQuote(s), err)
	}
	u.ID = id
	if hasPath {
		proto, res, ok := strings.Cut(path, "/")
		if !ok || !validProtocolName(proto) || !validResource(res) {
			return AgentURL{}, agentURLError(s, ErrAgentURLPath)
		}
		u.Protocol, u.Resource = proto, res
	}
	if hasQuery {
		routes, err := parseRoutes(query)
		if err != nil {
			return AgentURL{}, agentURLError(s, err)
		}
		u.Routes = routes
	}
	return u, nil
}

func parseRoutes(query string) ([]Origin, error) {
	params := strings.Split(query, "&")
	if len(params) > MaxAgentURLRoutes {
		return nil, ErrAgentURLQuery
	}
	routes := make([]Origin, 0, len(params))
	for _, p := range params {
		v, ok := strings.CutPrefix(p, "route=")
		if !ok {
			return nil, ErrAgentURLQuery
		}
		o, err := ParseOrigin(v, nil)
		if err != nil || containsOrigin(routes, o) {
			return nil, ErrAgentURLRoute
		}
		routes = append(routes, o)
	}
	return routes, nil
}

func containsOrigin(list []Origin, o Origin) bool {
	for _, x := range list {
		if x == o {
			return true
		}
	}
	return false
}

func agentURLError(s string, reason error) error {
	return Wrap(CodeInvalidRequest, "agent url "+truncQuote(s), reason)
}

// validProtocolName reports whether s is a lowercase ASCII protocol name.
func validProtocolName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

func validResource(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Validate checks that u would format to a valid Agent URL: a non-zero ID,
// Protocol and Resource both empty or both valid, and at most eight unique
// HTTPS routes.
func (u AgentURL) Validate() error {
	s := u.String()
	if u.ID.IsZero() {
		return agentURLError(s, ErrAgentIDLength)
	}
	if (u.Protocol != "" || u.Resource != "") && (!validProtocolName(u.Protocol) || !validResource(u.Resource)) {
		return agentURLError(s, ErrAgentURLPath)
	}
	if len(u.Routes) > MaxAgentURLRoutes {
		return agentURLError(s, ErrAgentURLQuery)
	}
	for i, r := range u.Routes {
		if r.Scheme() != "https" || containsOrigin(u.Routes[:i], r) {
			return agentURLError(s, ErrAgentURLRoute)
		}
	}
	return nil
}

// Stable returns the URL without its query: the form that identifies the
// agent or resource, and the one to compare.
func (u AgentURL) Stable() string {
	s := u.ID.String()
	if u.Protocol != "" || u.Resource != "" {
		s += "/" + u.Protocol + "/" + u.Resource
	}
	return s
}

// String formats u, routes included. It does not validate; see Validate.
func (u AgentURL) String() string {
	var b strings.Builder
	b.WriteString(u.Stable())
	for i, r := range u.Routes {
		if i == 0 {
			b.WriteString("?route=")
		} else {
			b.WriteString("&route=")
		}
		b.WriteString(r.String())
	}
	return b.String()
}

// MarshalText implements encoding.TextMarshaler; it fails when Validate does.
func (u AgentURL) MarshalText() ([]byte, error) {
	if err := u.Validate(); err != nil {
		return nil, err
	}
	return []byte(u.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseAgentURL.
func (u *AgentURL) UnmarshalText(b []byte) error {
	v, err := ParseAgentURL(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}

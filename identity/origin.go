package identity

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// Reasons an origin is rejected (Identity §4.4). ParseOrigin and OriginOf
// return an *Error with code invalid_request that wraps one of them.
var (
	ErrOriginScheme   = errors.New("origin: scheme is not https")
	ErrOriginUserinfo = errors.New("origin: has userinfo")
	ErrOriginPath     = errors.New("origin: has a path, query or fragment")
	ErrOriginHost     = errors.New("origin: host is not in serialized form")
	ErrOriginPort     = errors.New("origin: port is not in serialized form")
)

// Origin is a serialized web origin as Agent Identity uses it (§4.4):
// "https://" + host + ":port" only when the port is not 443. It is the
// audience of request tokens, the service of a discovery document and the
// route of an Agent URL, and origins compare by exact string equality.
//
// Origin is comparable; two valid origins are the same origin exactly when
// they are ==. The zero value is not a valid origin; see IsZero.
type Origin struct {
	s string
}

// OriginOptions relaxes origin validation. A nil *OriginOptions is strict.
type OriginOptions struct {
	// AllowLoopbackHTTP also accepts plain-HTTP loopback origins for local
	// development: http://127.0.0.1, http://[::1] and http://localhost, each
	// with an optional port (serialized without :80). Never enable it for
	// origins read from the network in production: it lets a token or a
	// discovery document name a service reached without TLS.
	AllowLoopbackHTTP bool
}

func (o *OriginOptions) allowHTTP() bool { return o != nil && o.AllowLoopbackHTTP }

// ParseOrigin validates s as a serialized origin. The rule is the one of
// Identity §4.4: s is valid exactly when parsing it as a URL and serializing
// its origin reproduces s, so every spelling a URL parser would rewrite —
// upper case, ":443", a leading-zero port, shorthand IPv4 such as
// "https://127.1", uncompressed IPv6, a trailing slash — is rejected rather
// than normalized.
//
// The host is a lowercase ASCII domain name, a dotted-quad IPv4 address or a
// bracketed IPv6 address in WHATWG's compressed form (net/netip). Domain
// labels are made of a-z, 0-9, '-' and '_'; internationalized names must be
// given as A-labels ("xn--…"), which must survive the WHATWG "domain to
// ASCII" step unchanged (UTS #46 through golang.org/x/net/idna: valid
// Punycode of an NFC, non-ASCII label of code points valid for lookup,
// re-encoding to the same text). Empty labels (including a trailing dot) are
// refused. This is a subset of what a WHATWG URL parser reproduces: it
// leaves out hosts with other ASCII punctuation ("a!b") and absolute names
// with a trailing dot, which no service should use as its origin.
func ParseOrigin(s string, opts *OriginOptions) (Origin, error) {
	scheme, rest := "https", ""
	switch {
	case strings.HasPrefix(s, "https://"):
		rest = s[len("https://"):]
	case strings.HasPrefix(s, "http://") && opts.allowHTTP():
		scheme, rest = "http", s[len("http://"):]
	default:
		return Origin{}, originError(s, ErrOriginScheme)
	}
	if strings.ContainsAny(rest, "/?#") {
		return Origin{}, originError(s, ErrOriginPath)
	}
	if strings.Contains(rest, "@") {
		return Origin{}, originError(s, ErrOriginUserinfo)
	}
	host, port, hasPort := splitHostPort(rest)
	if !validHost(host) {
		return Origin{}, originError(s, ErrOriginHost)
	}
	if hasPort && !validPort(port, scheme) {
		return Origin{}, originError(s, ErrOriginPort)
	}
	if scheme == "http" && host != "127.0.0.1" && host != "[::1]" && host != "localhost" {
		return Origin{}, originError(s, ErrOriginScheme)
	}
	return Origin{s: s}, nil
}

// MustParseOrigin is ParseOrigin with strict options for constants in tests
// and examples; it panics on error.
func MustParseOrigin(s string) Origin {
	o, err := ParseOrigin(s, nil)
	if err != nil {
		panic(err)
	}
	return o
}

// OriginOf returns the origin of an absolute URL, the value a client puts
// in a request token's aud for that URL. Userinfo, path, query and fragment
// are dropped; the scheme and host are lowercased, a default port is
// dropped, a port's leading zeros are removed and an IPv6 address is
// written in compressed form. Any other rewriting a browser would do (IDN
// to A-label, shorthand IPv4) is not attempted: such URLs are rejected.
// The result is validated with ParseOrigin and opts.
func OriginOf(u *url.URL, opts *OriginOptions) (Origin, error) {
	if u == nil {
		return Origin{}, originError("", ErrOriginHost)
	}
	scheme := strings.ToLower(u.Scheme)
	if u.Opaque != "" || (scheme != "https" && scheme != "http") {
		return Origin{}, originError(scheme+":", ErrOriginScheme)
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return Origin{}, originError(u.Host, ErrOriginHost)
		}
		host = "[" + formatIPv6(a) + "]"
	}
	s := scheme + "://" + host
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return Origin{}, originError(u.Host, ErrOriginPort)
		}
		if !(scheme == "https" && n == 443) && !(scheme == "http" && n == 80) {
			s += ":" + strconv.FormatUint(n, 10)
		}
	}
	return ParseOrigin(s, opts)
}

func originError(s string, reason error) error {
	return Wrap(CodeInvalidRequest, "origin "+truncQuote(s), reason)
}

// truncQuote quotes at most 64 bytes of untrusted text for an error message.
func truncQuote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "…"
	}
	return strconv.Quote(s)
}

// String returns the serialized origin, or "" for the zero value.
func (o Origin) String() string { return o.s }

// IsZero reports whether o is the zero value (no origin).
func (o Origin) IsZero() bool { return o.s == "" }

// Scheme returns "https", or "http" for a loopback development origin.
func (o Origin) Scheme() string {
	scheme, _, _ := strings.Cut(o.s, "://")
	return scheme
}

// Host returns the host and, when not the default, ":port" — the Host
// field of the equivalent url.URL.
func (o Origin) Host() string {
	_, host, _ := strings.Cut(o.s, "://")
	return host
}

// URL returns a new URL with the origin's scheme and host and an empty path.
func (o Origin) URL() *url.URL {
	return &url.URL{Scheme: o.Scheme(), Host: o.Host()}
}

// MarshalText implements encoding.TextMarshaler. The zero value is an error.
func (o Origin) MarshalText() ([]byte, error) {
	if o.s == "" {
		return nil, originError("", ErrOriginHost)
	}
	return []byte(o.s), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with strict
// ParseOrigin (HTTPS only).
func (o *Origin) UnmarshalText(b []byte) error {
	v, err := ParseOrigin(string(b), nil)
	if err != nil {
		return err
	}
	*o = v
	return nil
}

// splitHostPort splits an authority that has no userinfo.
func splitHostPort(a string) (host, port string, hasPort bool) {
	if strings.HasPrefix(a, "[") {
		if i := strings.IndexByte(a, ']'); i >= 0 {
			host, rest := a[:i+1], a[i+1:]
			if rest == "" {
				return host, "", false
			}
			if rest[0] != ':' {
				return a, "", false // invalid host: text after ']'
			}
			return host, rest[1:], true
		}
		return a, "", false
	}
	host, port, hasPort = strings.Cut(a, ":")
	return host, port, hasPort
}

// validPort reports whether p is a serialized port: decimal, no leading
// zero, at most 65535, not the scheme's default.
func validPort(p, scheme string) bool {
	if p == "" || len(p) > 5 || (len(p) > 1 && p[0] == '0') {
		return false
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || strings.TrimLeft(p, "0123456789") != "" {
		return false
	}
	return !(scheme == "https" && n == 443) && !(scheme == "http" && n == 80)
}

func validHost(h string) bool {
	if h == "" {
		return false
	}
	if h[0] == '[' {
		if len(h) < 3 || h[len(h)-1] != ']' {
			return false
		}
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		return err == nil && a.Is6() && a.Zone() == "" && formatIPv6(a) == h[1:len(h)-1]
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if !validLabel(l) {
			return false
		}
	}
	// A host whose last label looks like a number is an IPv4 address to a
	// URL parser (WHATWG "ends in a number"); only the dotted quad it
	// serializes to is valid.
	if last := labels[len(labels)-1]; isDecimal(last) || strings.HasPrefix(last, "0x") && isHex(last[2:]) {
		a, err := netip.ParseAddr(h)
		return err == nil && a.Is4() && a.String() == h
	}
	// The WHATWG "domain to ASCII" step: the host must already be its own
	// result, which holds A-labels to full UTS #46 validity (they decode,
	// to NFC, to code points valid for lookup, pass the Bidi and joiner
	// rules, and re-encode to the same text).
	a, err := urlIDNA.ToASCII(h)
	return err == nil && a == h
}

// urlIDNA is UTS #46 processing as the WHATWG URL standard's "domain to
// ASCII" runs it (beStrict false): non-transitional, CheckHyphens false,
// CheckBidi and CheckJoiners true, UseSTD3ASCIIRules false and
// VerifyDnsLength false. A *idna.Profile is safe for concurrent use.
var urlIDNA = idna.New(
	idna.MapForLookup(), // mapping and label validation; sets the STD3 rules and hyphen checks, undone below
	idna.Transitional(false),
	idna.BidiRule(),
	idna.CheckJoiners(true),
	idna.CheckHyphens(false),
	idna.StrictDomainName(false),
	idna.VerifyDNSLength(false),
)

// maxALabel bounds an A-label's length: Punycode decoding is quadratic in
// it, and 1 KiB is far above DNS's 63 bytes.
const maxALabel = 1 << 10

// validLabel applies this package's own, narrower rules before IDNA: ASCII
// letters in lower case, digits, '-' and '_' only (WHATWG would also keep
// other punctuation such as '!'), no empty label (WHATWG would keep
// "a..b" and a trailing dot), and a bounded A-label.
func validLabel(l string) bool {
	if l == "" || len(l) > maxALabel {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func isDecimal(s string) bool {
	return s != "" && strings.TrimLeft(s, "0123456789") == ""
}

func isHex(s string) bool { return strings.TrimLeft(s, "0123456789abcdef") == "" }

// formatIPv6 writes an IPv6 address the way the WHATWG URL standard
// serializes it. That is RFC 5952, which netip implements, except for
// IPv4-mapped addresses: WHATWG writes their last 32 bits as two hex pieces
// ("::ffff:7f00:1"), never as a dotted quad.
func formatIPv6(a netip.Addr) string {
	if !a.Is4In6() {
		return a.String()
	}
	b := a.As16()
	return "::ffff:" + strconv.FormatUint(uint64(b[12])<<8|uint64(b[13]), 16) +
		":" + strconv.FormatUint(uint64(b[14])<<8|uint64(b[15]), 16)
}

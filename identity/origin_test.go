package identity_test

import (
	"errors"
	"net/url"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/identity"
)

func TestParseOriginRules(t *testing.T) {
	valid := []string{
		"https://a.example",
		"https://a_b.example",
		"https://1.2.3.example",
		"https://255.255.255.255:65535",
		"https://0.0.0.0",
		"https://[::]",
		"https://[2001:db8::1]:8443",
		"https://[1:0:0:2::3]",           // first longest zero run is compressed
		"https://[1::4:0:0:7:8]",         // first of two equal runs
		"https://[::ffff:7f00:1]",        // IPv4-mapped, in hex as WHATWG writes it
		"https://xn--mnchen-3ya.de",      // münchen
		"https://xn--fiqs8s",             // 中国
		"https://xn--i-7iq.ws",           // i❤
		"https://xn--tda.example",        // ü
		"https://localhost",              // HTTPS loopback needs no option
		"https://example.com:1",          // smallest non-zero port
		"https://example.com:80",         // 80 is not https's default
		"https://a-.example",             // hyphen rules are not checked by URL parsers
		"https://x.xn--nxasmq6b.example", // A-label in the middle
	}
	for _, s := range valid {
		t.Run("valid/"+s, func(t *testing.T) {
			o, err := identity.ParseOrigin(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if o.String() != s || o.Scheme() != "https" || "https://"+o.Host() != s {
				t.Errorf("got %q scheme %q host %q", o, o.Scheme(), o.Host())
			}
			if u := o.URL(); u.String() != s {
				t.Errorf("URL() = %q", u)
			}
		})
	}
	invalid := []struct {
		in     string
		reason error
	}{
		{"", identity.ErrOriginScheme},
		{"HTTPS://a.example", identity.ErrOriginScheme},
		{"https:a.example", identity.ErrOriginScheme},
		{"wss://a.example", identity.ErrOriginScheme},
		{"http://localhost:8080", identity.ErrOriginScheme}, // no option
		{"https://", identity.ErrOriginHost},
		{"https://:8443", identity.ErrOriginHost},
		{"https://a.example:", identity.ErrOriginPort},
		{"https://a.example:65536", identity.ErrOriginPort},
		{"https://a.example:99999", identity.ErrOriginPort},
		{"https://a.example:+80", identity.ErrOriginPort},
		{"https://a.example:0x50", identity.ErrOriginPort},
		{"https://a.example:00", identity.ErrOriginPort},
		{"https://a.example:8443:1", identity.ErrOriginPort},
		{"https://[::1]:443", identity.ErrOriginPort},
		{"https://a.example:443", identity.ErrOriginPort},
		{"https://a.example/", identity.ErrOriginPath},
		{"https://a.example\\", identity.ErrOriginHost},
		{"https://a.example?", identity.ErrOriginPath},
		{"https://a.example#", identity.ErrOriginPath},
		{"https://@a.example", identity.ErrOriginUserinfo},
		{"https://u:p@a.example", identity.ErrOriginUserinfo},
		{"https://A.example", identity.ErrOriginHost},
		{"https://a.example.", identity.ErrOriginHost},
		{"https://.a.example", identity.ErrOriginHost},
		{"https://a..example", identity.ErrOriginHost},
		{"https://a example", identity.ErrOriginHost},
		{"https://a%41.example", identity.ErrOriginHost},
		{"https://a\t.example", identity.ErrOriginHost},
		{"https://ä.example", identity.ErrOriginHost},
		{"https://a!.example", identity.ErrOriginHost},
		{"https://1.2.3", identity.ErrOriginHost},
		{"https://1.2.3.4.5", identity.ErrOriginHost},
		{"https://example.123", identity.ErrOriginHost},
		{"https://example.0x1f", identity.ErrOriginHost},
		{"https://0x7f.0.0.1", identity.ErrOriginHost},
		{"https://127.0.0.01", identity.ErrOriginHost},
		{"https://256.0.0.1", identity.ErrOriginHost},
		{"https://2130706433", identity.ErrOriginHost},
		{"https://[::1", identity.ErrOriginHost},
		{"https://::1", identity.ErrOriginHost},
		{"https://[]", identity.ErrOriginHost},
		{"https://[::1]x", identity.ErrOriginHost},
		{"https://[0:0:0:0:0:0:0:1]", identity.ErrOriginHost},
		{"https://[::0:1]", identity.ErrOriginHost},
		{"https://[::0001]", identity.ErrOriginHost},
		{"https://[::FFFF:7f00:1]", identity.ErrOriginHost},
		{"https://[::ffff:127.0.0.1]", identity.ErrOriginHost},
		{"https://[1:0:0:2:0:0:0:3]", identity.ErrOriginHost}, // longest run not compressed
		{"https://[1:0::2:3:4:5:6]", identity.ErrOriginHost},  // run of one compressed... and wrong
		{"https://[fe80::1%25eth0]", identity.ErrOriginHost},
		{"https://[127.0.0.1]", identity.ErrOriginHost},
		{"https://xn--", identity.ErrOriginHost},
		{"https://xn--a", identity.ErrOriginHost},            // decodes to U+0080, a control
		{"https://xn--abc-", identity.ErrOriginHost},         // decodes to ASCII only
		{"https://xn---abc.example", identity.ErrOriginHost}, // empty basic part before delimiter
		{"https://xn--99999999999", identity.ErrOriginHost},  // overflows
		{"https://xn--wca.example", identity.ErrOriginHost},  // decodes to upper-case Ü
	}
	for _, c := range invalid {
		t.Run("invalid/"+c.in, func(t *testing.T) {
			o, err := identity.ParseOrigin(c.in, nil)
			if !errors.Is(err, identity.ErrInvalidRequest) {
				t.Fatalf("ParseOrigin(%q) = %q, %v; want invalid_request", c.in, o, err)
			}
			if !errors.Is(err, c.reason) {
				t.Errorf("error %v, want reason %v", err, c.reason)
			}
		})
	}
}

func TestParseOriginLoopbackHTTP(t *testing.T) {
	loop := &identity.OriginOptions{AllowLoopbackHTTP: true}
	for _, s := range []string{
		"http://127.0.0.1:8080",
		"http://[::1]:3000",
		"http://localhost:1",
		"http://localhost:0",
		"http://localhost",
		"http://127.0.0.1:443",
	} {
		t.Run("valid/"+s, func(t *testing.T) {
			if _, err := identity.ParseOrigin(s, nil); !errors.Is(err, identity.ErrOriginScheme) {
				t.Errorf("strict ParseOrigin accepted or misreported: %v", err)
			}
			if _, err := identity.ParseOrigin(s, &identity.OriginOptions{}); err == nil {
				t.Error("zero OriginOptions accepted plain HTTP")
			}
			o, err := identity.ParseOrigin(s, loop)
			if err != nil {
				t.Fatal(err)
			}
			if o.String() != s || o.Scheme() != "http" {
				t.Errorf("got %q scheme %q", o, o.Scheme())
			}
		})
	}
	for _, c := range []struct {
		in     string
		reason error
	}{
		{"http://example.com:8080", identity.ErrOriginScheme},
		{"http://127.0.0.2:8080", identity.ErrOriginScheme},
		{"http://[::2]:8080", identity.ErrOriginScheme},
		{"http://localhost.example:8080", identity.ErrOriginScheme},
		{"http://LOCALHOST:8080", identity.ErrOriginHost},
		{"http://127.0.0.1:80", identity.ErrOriginPort},
		{"http://127.0.0.1:08080", identity.ErrOriginPort},
		{"http://127.1:8080", identity.ErrOriginHost},
		{"http://[0:0:0:0:0:0:0:1]:8080", identity.ErrOriginHost},
		{"http://localhost:8080/", identity.ErrOriginPath},
		{"HTTP://localhost:8080", identity.ErrOriginScheme},
	} {
		t.Run("invalid/"+c.in, func(t *testing.T) {
			_, err := identity.ParseOrigin(c.in, loop)
			if !errors.Is(err, identity.ErrInvalidRequest) || !errors.Is(err, c.reason) {
				t.Errorf("ParseOrigin(%q) = %v, want %v", c.in, err, c.reason)
			}
		})
	}
}

func TestOriginOf(t *testing.T) {
	loop := &identity.OriginOptions{AllowLoopbackHTTP: true}
	cases := []struct {
		in, want string
		opts     *identity.OriginOptions
	}{
		{"https://api.example.com/v1/rooms?x=1#y", "https://api.example.com", nil},
		{"HTTPS://API.Example.COM:443/", "https://api.example.com", nil},
		{"https://user:pw@h.example:0443/x", "https://h.example", nil},
		{"https://h.example:08443", "https://h.example:8443", nil},
		{"https://h.example:0", "https://h.example:0", nil},
		{"https://[0:0::1]:8443/x", "https://[::1]:8443", nil},
		{"https://[2001:DB8:0:0:0:0:0:1]", "https://[2001:db8::1]", nil},
		{"https://xn--nxasmq6b.example/a", "https://xn--nxasmq6b.example", nil},
		{"http://127.0.0.1:8080/events", "http://127.0.0.1:8080", loop},
		{"http://localhost:80/", "http://localhost", loop},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			u, err := url.Parse(c.in)
			if err != nil {
				t.Fatal(err)
			}
			o, err := identity.OriginOf(u, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if o.String() != c.want {
				t.Errorf("OriginOf = %q, want %q", o, c.want)
			}
		})
	}
	for _, in := range []string{
		"http://127.0.0.1:8080/", // no option
		"http://example.com/",
		"ftp://example.com/",
		"mailto:a@example.com",
		"/relative/path",
		"https:///path",
		"https://127.1/",
		"https://[fe80::1%25eth0]/",
		"https://h.example:99999/",
		"https://ä.example/",
	} {
		t.Run("invalid/"+in, func(t *testing.T) {
			u, err := url.Parse(in)
			if err != nil {
				t.Skip("url.Parse rejects it already")
			}
			if o, err := identity.OriginOf(u, nil); !errors.Is(err, identity.ErrInvalidRequest) {
				t.Errorf("OriginOf(%q) = %q, %v", in, o, err)
			}
		})
	}
	if _, err := identity.OriginOf(nil, nil); err == nil {
		t.Error("OriginOf(nil) succeeded")
	}
}

func TestOriginText(t *testing.T) {
	var v struct {
		Service identity.Origin `json:"service"`
	}
	if err := json.Unmarshal([]byte(`{"service":"https://a.example:8443"}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.Service != identity.MustParseOrigin("https://a.example:8443") {
		t.Errorf("decoded %q", v.Service)
	}
	b, err := json.Marshal(&v)
	if err != nil || string(b) != `{"service":"https://a.example:8443"}` {
		t.Errorf("Marshal = %s, %v", b, err)
	}
	for _, bad := range []string{`{"service":"https://a.example/"}`, `{"service":"http://localhost:1"}`} {
		if err := json.Unmarshal([]byte(bad), &v); !errors.Is(err, identity.ErrInvalidRequest) {
			t.Errorf("Unmarshal(%s) = %v", bad, err)
		}
	}
	var zero identity.Origin
	if !zero.IsZero() || zero.String() != "" {
		t.Error("zero Origin")
	}
	if _, err := zero.MarshalText(); err == nil {
		t.Error("zero Origin marshaled")
	}
}

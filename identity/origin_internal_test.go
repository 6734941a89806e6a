package identity

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

// Punycode samples (RFC 3492 §7.1 and others), cross-checked with an
// independent RFC 3492 implementation. Each U-label's A-label is a valid
// origin host, and the IDNA profile produces exactly that A-label.
var punySamples = []struct{ u, p string }{
	{"他们为什么不说中文", "ihqwcrb4cv8a8dqg056pqjye"},
	{"ليهمابتكلموشعربي", "mgbcah9ar9a4efegftvvn"},
	{"почемужеонинеговорятпорусски", "b1abfaaepdrnnbgefbadotcwatmq2g4l"},
	{"3年b組金八先生", "3b-ww4c5e180e575a65lsy2b"},
	{"pročprostěnemluvíčesky", "proprostnemluvesky-uyb24dma41a"},
	{"😀", "e28h"},
	{"a-b-ü-c", "a-b--c-6ya"},
	{"münchen", "mnchen-3ya"},
}

func TestPunycodeSamples(t *testing.T) {
	for _, s := range punySamples {
		if got, err := urlIDNA.ToASCII(s.u); err != nil || got != "xn--"+s.p {
			t.Errorf("ToASCII(%q) = %q, %v; want xn--%s", s.u, got, err, s.p)
		}
		if !validHost("xn--" + s.p) {
			t.Errorf("xn--%s refused", s.p)
		}
		if got, err := urlIDNA.ToUnicode("xn--" + s.p); err != nil || got != s.u {
			t.Errorf("ToUnicode(xn--%s) = %q, %v", s.p, got, err)
		}
	}
	// A private-use code point is not valid in a domain name; its
	// well-formed Punycode (bn32g is U+10FFFD) is refused.
	if validHost("xn--bn32g") {
		t.Error("xn--bn32g (U+10FFFD) accepted")
	}
	// The A-label bound.
	if validHost("xn--" + strings.Repeat("a", maxALabel)) {
		t.Error("over-long A-label accepted")
	}
}

func TestFormatIPv6MatchesNetip(t *testing.T) {
	// Outside the IPv4-mapped range WHATWG and RFC 5952 agree.
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		var a [16]byte
		for i := 0; i < 16; i += 2 {
			if r.IntN(2) == 0 {
				a[i], a[i+1] = byte(r.IntN(256)), byte(r.IntN(256))
			}
		}
		addr := netip.AddrFrom16(a)
		if addr.Is4In6() {
			continue
		}
		if got, want := formatIPv6(addr), addr.String(); got != want {
			t.Fatalf("formatIPv6 = %s, netip = %s", got, want)
		}
	}
	for in, want := range map[string]string{
		"::ffff:127.0.0.1": "::ffff:7f00:1",
		"::ffff:0.0.0.0":   "::ffff:0:0",
		"::ffff:1.2.0.0":   "::ffff:102:0",
		"::ffff:0.0.1.2":   "::ffff:0:102",
	} {
		if got := formatIPv6(netip.MustParseAddr(in)); got != want {
			t.Errorf("formatIPv6(%s) = %s, want %s", in, got, want)
		}
	}
}

package identity

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
)

// Punycode samples (RFC 3492 §7.1 and others), cross-checked with an
// independent RFC 3492 implementation.
var punySamples = []struct{ u, p string }{
	{"他们为什么不说中文", "ihqwcrb4cv8a8dqg056pqjye"},
	{"ليهمابتكلموشعربي", "mgbcah9ar9a4efegftvvn"},
	{"почемужеонинеговорятпорусски", "b1abfaaepdrnnbgefbadotcwatmq2g4l"},
	{"3年b組金八先生", "3b-ww4c5e180e575a65lsy2b"},
	{"pročprostěnemluvíčesky", "proprostnemluvesky-uyb24dma41a"},
	{"😀", "e28h"},
	{"a-b-ü-c", "a-b--c-6ya"},
	{"münchen", "mnchen-3ya"},
	{"\U0010FFFD", "bn32g"},
}

func TestPunycodeSamples(t *testing.T) {
	for _, s := range punySamples {
		if got := punyEncode([]rune(s.u)); got != s.p {
			t.Errorf("encode %q = %q, want %q", s.u, got, s.p)
		}
		got, ok := punyDecode(s.p)
		if !ok || string(got) != s.u {
			t.Errorf("decode %q = %q, %v", s.p, string(got), ok)
		}
	}
}

func TestPunycodeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		in := make([]rune, 1+r.IntN(12))
		for i := range in {
			switch r.IntN(3) {
			case 0:
				in[i] = rune('a' + r.IntN(26))
			case 1:
				in[i] = rune(0x80 + r.IntN(0x800))
			default:
				in[i] = rune(0x1000 + r.IntN(0x10F000))
				if in[i] >= 0xD800 && in[i] <= 0xDFFF {
					in[i] = 'z'
				}
			}
		}
		p := punyEncode(in)
		out, ok := punyDecode(p)
		if !ok || !slices.Equal(in, out) {
			t.Fatalf("round trip %q -> %q -> %q, %v", string(in), p, string(out), ok)
		}
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
		if got, want := formatIPv6(a), addr.String(); got != want {
			t.Fatalf("formatIPv6 = %s, netip = %s", got, want)
		}
	}
	if got := formatIPv6(netip.MustParseAddr("::ffff:127.0.0.1").As16()); got != "::ffff:7f00:1" {
		t.Errorf("mapped address = %s", got)
	}
}

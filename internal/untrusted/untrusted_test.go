package untrusted

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 64, "short"},
		{"abcdef", 3, "abc…"},
		{"ééé", 3, "é…"},           // 2-byte characters: never cut inside one
		{"a\xffb", 64, "a\uFFFDb"}, // invalid bytes become U+FFFD
		{"ab\xff", 3, "ab…"},       // U+FFFD is 3 bytes and does not fit
		{"日本語", 7, "日本…"},
		{"", 0, ""},
	} {
		if got := Clip(c.in, c.max); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

func TestTerminal(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, ünïcode", "plain text, ünïcode"},
		{"\x1b[2J\x1b]0;pwned\x07", `\x1b[2J\x1b]0;pwned\a`},
		{"line\nbreak\ttab\r", `line\nbreak\ttab\r`},
		{"\u202eevil", `\u202eevil`},
		{"c1\u009bcsi", `c1\u009bcsi`},
		{"bad\xffbyte", `bad\xffbyte`},
		{"del\x7f", `del\x7f`},
	} {
		if got := Terminal(c.in); got != c.want {
			t.Errorf("Terminal(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzClip: whatever the input, Clip stays valid UTF-8 within its
// bound, and Terminal's output has no control character left.
func FuzzClip(f *testing.F) {
	for _, s := range []string{"", "abc", "ééé", "\x1b[31m", "a\xffb", "\u202e"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n > 1<<16 || n < -1<<16 {
			return
		}
		out := Clip(s, n)
		if !utf8.ValidString(out) {
			t.Fatalf("Clip(%q, %d) = %q: invalid UTF-8", s, n, out)
		}
		body, _ := strings.CutSuffix(out, Ellipsis)
		if len(body) > max(n, 1) {
			t.Fatalf("Clip(%q, %d) = %q: over the bound", s, n, out)
		}
		term := Terminal(s)
		if !utf8.ValidString(term) {
			t.Fatalf("Terminal(%q) = %q: invalid UTF-8", s, term)
		}
		for _, r := range term {
			if unsafeRune(r) {
				t.Fatalf("Terminal(%q) = %q: kept %U", s, term, r)
			}
		}
	})
}

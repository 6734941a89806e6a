// Package untrusted shapes untrusted text (a peer's message, a room ID, a
// host's error text) before it goes into an error message, an HTTP error
// body or a terminal: bounded in length, valid UTF-8, never cut inside a
// character, and with control characters made visible where a terminal
// would act on them.
package untrusted

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Ellipsis marks text that [Clip] cut.
const Ellipsis = "…"

// Clip returns s as valid UTF-8 (each invalid byte becomes U+FFFD) of
// at most max bytes of s's text, cut at a character boundary and followed
// by [Ellipsis] when anything was cut. max < 1 means 1.
func Clip(s string, max int) string {
	if max < 1 {
		max = 1
	}
	if len(s) <= max && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		// An invalid byte decodes as RuneError of width 1; it is written as
		// the 3-byte replacement character and counted as such.
		n := utf8.RuneLen(r)
		if b.Len()+n > max {
			b.WriteString(Ellipsis)
			return b.String()
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Terminal returns s with every character a terminal could act on
// escaped in Go's \x, \u notation: C0 controls (newline and tab
// included), DEL, C1 controls, and the Unicode bidirectional and
// zero-width formatting characters that can reorder or hide what is shown.
// Invalid UTF-8 bytes become \x escapes. Printable text is unchanged.
func Terminal(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case unsafeRune(r):
			q := strconv.QuoteToASCII(string(r))
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Line is [Terminal] applied to [Clip]: untrusted text for one line of
// terminal output, at most max bytes before escaping.
func Line(s string, max int) string { return Terminal(Clip(s, max)) }

func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == 0x200b, r == 0x200c, r == 0x200d, r == 0x200e, r == 0x200f, // zero-width, LRM, RLM
		r >= 0x202a && r <= 0x202e, // LRE … RLO
		r >= 0x2066 && r <= 0x2069, // LRI … PDI
		r == 0x2028, r == 0x2029,   // line and paragraph separators
		r == 0xfeff: // zero-width no-break space
		return true
	}
	return false
}

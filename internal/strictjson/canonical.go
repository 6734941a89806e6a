package strictjson

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// IsCanonical reports whether v, a value that already passed Validate, is
// byte for byte its own RFC 8785 form. Most signed JSON on the wire was
// produced by a canonicalizer, so this one-pass check lets the hot path
// skip re-canonicalizing. It may answer false for some canonical inputs
// (names with escapes or non-ASCII characters are left to Canonicalize);
// it never answers true for a non-canonical one, which FuzzIsCanonical
// pins against Canonicalize.
func IsCanonical(v []byte) bool {
	c := canonChecker{b: v}
	return c.value() && c.i == len(v)
}

type canonChecker struct {
	b []byte
	i int
}

func (c *canonChecker) value() bool {
	if c.i >= len(c.b) {
		return false
	}
	switch c.b[c.i] {
	case '{':
		return c.object()
	case '[':
		c.i++
		if c.peek(']') {
			c.i++
			return true
		}
		for {
			if !c.value() {
				return false
			}
			if c.peek(',') {
				c.i++
				continue
			}
			if c.peek(']') {
				c.i++
				return true
			}
			return false
		}
	case '"':
		_, ok := c.str(false)
		return ok
	case 't':
		return c.lit("true")
	case 'f':
		return c.lit("false")
	case 'n':
		return c.lit("null")
	}
	return c.number()
}

func (c *canonChecker) peek(b byte) bool { return c.i < len(c.b) && c.b[c.i] == b }

func (c *canonChecker) lit(s string) bool {
	if bytes.HasPrefix(c.b[c.i:], []byte(s)) {
		c.i += len(s)
		return true
	}
	return false
}

func (c *canonChecker) object() bool {
	c.i++
	if c.peek('}') {
		c.i++
		return true
	}
	var prev []byte
	for first := true; ; first = false {
		name, ok := c.str(true)
		// Names must be strictly increasing; ASCII-only names without
		// escapes compare the same in UTF-16 and bytes.
		if !ok || (!first && bytes.Compare(prev, name) >= 0) || !c.peek(':') {
			return false
		}
		prev = name
		c.i++
		if !c.value() {
			return false
		}
		if c.peek(',') {
			c.i++
			continue
		}
		if c.peek('}') {
			c.i++
			return true
		}
		return false
	}
}

// str checks a string token for minimal escaping and returns its raw
// content. For names (asciiName) any escape or non-ASCII byte gives up.
func (c *canonChecker) str(asciiName bool) ([]byte, bool) {
	if !c.peek('"') {
		// A name must start here: white space before it is not
		// canonical (value only checks this for values).
		return nil, false
	}
	start := c.i + 1
	if !asciiName {
		// Most strings have no escape: find the closing quote and look
		// for a backslash before it, both with the vectorized byte
		// search, instead of stepping through every byte.
		if q := bytes.IndexByte(c.b[start:], '"'); q >= 0 && bytes.IndexByte(c.b[start:start+q], '\\') < 0 {
			c.i = start + q + 1
			return c.b[start : start+q], true
		}
	}
	for i := start; i < len(c.b); i++ {
		ch := c.b[i]
		switch {
		case ch == '"':
			c.i = i + 1
			return c.b[start:i], true
		case ch == '\\':
			if asciiName || i+1 >= len(c.b) {
				return nil, false
			}
			switch c.b[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				// Only control characters without a short form are
				// written \u00xx, in lowercase hex.
				if i+5 >= len(c.b) || string(c.b[i+2:i+4]) != "00" {
					return nil, false
				}
				hex := c.b[i+4 : i+6]
				n, err := strconv.ParseUint(string(hex), 16, 8)
				if err != nil || n >= 0x20 || bytes.ContainsAny(hex, "ABCDEF") ||
					n == '\b' || n == '\f' || n == '\n' || n == '\r' || n == '\t' {
					return nil, false
				}
				i += 5
			default:
				return nil, false
			}
		case ch >= utf8.RuneSelf && asciiName:
			return nil, false
		}
	}
	return nil, false
}

func (c *canonChecker) number() bool {
	start := c.i
	integer := true
	for c.i < len(c.b) {
		switch ch := c.b[c.i]; {
		case ch >= '0' && ch <= '9' || ch == '-':
		case ch == '.' || ch == 'e' || ch == 'E' || ch == '+':
			integer = false
		default:
			goto done
		}
		c.i++
	}
done:
	n := c.b[start:c.i]
	if len(n) == 0 {
		return false
	}
	if integer {
		digits := bytes.TrimPrefix(n, []byte("-"))
		// No leading zero, no negative zero; the number policy keeps
		// integers below 1e21, where RFC 8785 switches to exponents.
		return len(digits) > 0 && (digits[0] != '0' || len(n) == 1)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f == 0 {
		return false
	}
	return bytes.Equal(jsontext.AppendFloat(nil, f, 64), n)
}

package strictjson

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// IsCanonical reports whether v is one JSON value that satisfies the
// package policy (what Validate accepts) and is byte for byte its own
// RFC 8785 form. It needs no prior Validate: in one pass it checks the
// grammar, UTF-8, the number policy and the order of member names, which
// in canonical form are strictly increasing and therefore unique. Most
// signed JSON on the wire was produced by a canonicalizer, so this lets
// the hot path skip both the general strict parse and re-canonicalizing.
//
// It may answer false for some canonical inputs (names with escapes or
// non-ASCII characters, nesting deeper than maxCanonicalDepth), which
// callers then read with the general parser; it never answers true for
// input Validate refuses or whose canonical form differs, which
// FuzzIsCanonical pins against the jsontext reference.
func IsCanonical(v []byte) bool {
	c := canonChecker{b: v}
	return c.value(0) && c.i == len(v)
}

// CanonicalMember locates a top-level member found by CanonicalObject in
// the object's bytes: its name's bytes, between the quotes (a name
// IsCanonical accepts has no escape), and its value's.
type CanonicalMember struct {
	NameStart, NameEnd int
	Start, End         int
}

// CanonicalObject reports whether b begins with a JSON object that
// IsCanonical accepts, and returns its length and its top-level members,
// in dst's storage when it has room. What follows the object is not read.
func CanonicalObject(dst []CanonicalMember, b []byte) ([]CanonicalMember, int, bool) {
	c := canonChecker{b: b}
	if !c.peek('{') {
		return nil, 0, false
	}
	if dst == nil {
		dst = make([]CanonicalMember, 0, 8)
	}
	ms, ok := c.object(1, dst[:0])
	if !ok {
		return nil, 0, false
	}
	return ms, c.i, true
}

// maxCanonicalDepth bounds the nesting the checker follows (it recurses
// once per level); deeper text is left to the general parser, whose own
// bound is higher.
const maxCanonicalDepth = 512

type canonChecker struct {
	b []byte
	i int
}

// value checks the value at c.i, inside depth levels of arrays and
// objects.
func (c *canonChecker) value(depth int) bool {
	if c.i >= len(c.b) {
		return false
	}
	switch c.b[c.i] {
	case '{':
		if depth >= maxCanonicalDepth {
			return false
		}
		_, ok := c.object(depth+1, nil)
		return ok
	case '[':
		if depth >= maxCanonicalDepth {
			return false
		}
		c.i++
		if c.peek(']') {
			c.i++
			return true
		}
		for {
			if !c.value(depth + 1) {
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

// object checks the object at c.i, which is at the given depth; with
// members not nil, it appends the object's members to it.
func (c *canonChecker) object(depth int, members []CanonicalMember) ([]CanonicalMember, bool) {
	c.i++
	if c.peek('}') {
		c.i++
		return members, true
	}
	var prev []byte
	for first := true; ; first = false {
		nameStart := c.i + 1
		name, ok := c.str(true)
		// Names must be strictly increasing, which also makes them
		// unique; ASCII-only names without escapes compare the same in
		// UTF-16 and bytes.
		if !ok || (!first && bytes.Compare(prev, name) >= 0) || !c.peek(':') {
			return nil, false
		}
		prev = name
		c.i++
		start := c.i
		if !c.value(depth) {
			return nil, false
		}
		if members != nil {
			members = append(members, CanonicalMember{NameStart: nameStart, NameEnd: nameStart + len(name), Start: start, End: c.i})
		}
		if c.peek(',') {
			c.i++
			continue
		}
		if c.peek('}') {
			c.i++
			return members, true
		}
		return nil, false
	}
}

// str checks a string token: valid UTF-8, no raw control character, and
// minimal escaping; it returns the raw content. For names (asciiName) any
// escape or non-ASCII byte gives up.
func (c *canonChecker) str(asciiName bool) ([]byte, bool) {
	if !c.peek('"') {
		// A name must start here: white space before it is not
		// canonical (value only checks this for values).
		return nil, false
	}
	start := c.i + 1
	for i := start; i < len(c.b); i++ {
		// Skip the bytes that stand for themselves, the most of any
		// string, a table look-up each.
		for i < len(c.b) && plain[c.b[i]] {
			i++
		}
		if i == len(c.b) {
			break
		}
		ch := c.b[i]
		switch {
		case ch == '"':
			c.i = i + 1
			return c.b[start:i], true
		case ch < 0x20:
			return nil, false // a control character must be escaped
		case ch == '\\':
			if asciiName || i+1 >= len(c.b) {
				return nil, false
			}
			switch c.b[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				// Only control characters without a short form are
				// written \u00xx, in lowercase hex; so no surrogate
				// escape is canonical.
				if i+5 >= len(c.b) || string(c.b[i+2:i+4]) != "00" {
					return nil, false
				}
				hi, lo := c.b[i+4], c.b[i+5]
				if hi != '0' && hi != '1' || !(lo >= '0' && lo <= '9' || lo >= 'a' && lo <= 'f') {
					return nil, false
				}
				switch n := (hi-'0')<<4 | hexDigit(lo); n {
				case '\b', '\f', '\n', '\r', '\t':
					return nil, false
				}
				i += 5
			default:
				return nil, false
			}
		case ch >= utf8.RuneSelf:
			if asciiName {
				return nil, false
			}
			// Invalid UTF-8, surrogates encoded in UTF-8 included, is
			// refused (RFC 7493 §2.1).
			r, size := utf8.DecodeRune(c.b[i:])
			if r == utf8.RuneError && size == 1 {
				return nil, false
			}
			i += size - 1
		}
	}
	return nil, false
}

// plain marks the bytes a canonical string holds as themselves with no
// further check: printable ASCII but the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// hexDigit is the value of a lowercase hex digit.
func hexDigit(b byte) byte {
	if b >= 'a' {
		return b - 'a' + 10
	}
	return b - '0'
}

// number checks a number token against the JSON grammar, the number
// policy and the RFC 8785 form.
func (c *canonChecker) number() bool {
	start := c.i
	c.peekSkip('-')
	if c.peekSkip('0') {
		// A leading zero stands alone (RFC 8259 §6).
		if c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
			return false
		}
	} else if !c.digits() {
		return false
	}
	integer := true
	if c.peekSkip('.') {
		integer = false
		if !c.digits() {
			return false
		}
	}
	if c.peekSkip('e') || c.peekSkip('E') {
		integer = false
		if !c.peekSkip('+') {
			c.peekSkip('-')
		}
		if !c.digits() {
			return false
		}
	}
	n := c.b[start:c.i]
	if integer {
		// No negative zero (RFC 8785 writes 0); the number policy keeps
		// integers below 1e21, where RFC 8785 switches to exponents.
		_, ok := parseSafeInt(n)
		return ok && string(n) != "-0"
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f == 0 || math.Abs(f) > MaxSafeInteger {
		return false
	}
	var buf [32]byte
	return bytes.Equal(jsontext.AppendFloat(buf[:0], f, 64), n)
}

// peekSkip consumes the byte b if it is next.
func (c *canonChecker) peekSkip(b byte) bool {
	if c.peek(b) {
		c.i++
		return true
	}
	return false
}

// digits consumes a run of at least one decimal digit.
func (c *canonChecker) digits() bool {
	start := c.i
	for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
		c.i++
	}
	return c.i > start
}

// Package strictjson holds the one JSON policy every signed or untrusted byte
// in the SDK goes through: I-JSON (RFC 7493) strictness plus the protocol's
// number rule, and RFC 8785 canonicalization.
//
// Policy:
//   - exactly one JSON value, nothing but whitespace after it;
//   - valid UTF-8, no unpaired surrogate escapes, no duplicate member names
//     at any depth (compared after unescaping);
//   - every number has magnitude ≤ 2^53−1. Integers outside that range lose
//     precision under JCS and must not be signed; a non-integer literal of
//     that size is an integer in IEEE 754 anyway, and overflowing literals
//     (1e400) would be saturated by the canonicalizer, so both are refused.
//     Smaller non-integer numbers are legal and canonicalize per RFC 8785.
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// MaxSafeInteger is 2^53−1, the largest integer every JSON implementation
// represents exactly.
const MaxSafeInteger = 1<<53 - 1

// Sentinel reasons; an *Error wraps one of them (or a jsontext error).
var (
	ErrUnsafeNumber   = errors.New("number outside ±(2^53−1)")
	ErrNotInteger     = errors.New("not an integer literal")
	ErrTrailingData   = errors.New("data after the JSON value")
	ErrEmpty          = errors.New("no JSON value")
	ErrWrongKind      = errors.New("wrong JSON kind")
	ErrNegativeOrZero = errors.New("integer must be positive")
	ErrNegativeZero   = fmt.Errorf("%w: -0", ErrNotInteger)
)

// Error locates a policy violation inside a JSON text.
type Error struct {
	Pointer string // RFC 6901 pointer to the offending value, "" for the root
	Err     error
}

// Error formats the violation with its location.
func (e *Error) Error() string {
	if e.Pointer == "" {
		return "json: " + e.Err.Error()
	}
	return fmt.Sprintf("json at %s: %v", e.Pointer, e.Err)
}

// Unwrap returns the reason.
func (e *Error) Unwrap() error { return e.Err }

// NewDecoder returns a jsontext decoder over b with the strict defaults
// (duplicate names and invalid UTF-8 rejected). The number policy is not
// applied by the decoder; use CheckNumber on number values.
func NewDecoder(b []byte) *jsontext.Decoder {
	return jsontext.NewDecoder(bytes.NewBuffer(b))
}

// Decoder is a pooled strict decoder: creating a jsontext decoder costs
// more than decoding a small value, so hot paths reuse them.
type Decoder struct {
	*jsontext.Decoder
	in bytes.Buffer
}

var decoders = sync.Pool{New: func() any {
	d := new(Decoder)
	d.Decoder = jsontext.NewDecoder(&d.in)
	return d
}}

// GetDecoder is NewDecoder from a pool. Values the decoder returns alias b,
// not the decoder, so they stay valid after Release. Every GetDecoder must
// be paired with one Release, after which d must not be used.
func GetDecoder(b []byte) *Decoder {
	d := decoders.Get().(*Decoder)
	d.in = *bytes.NewBuffer(b)
	d.Reset(&d.in)
	return d
}

// Release returns d to the pool, dropping its reference to the input.
func (d *Decoder) Release() {
	d.in = bytes.Buffer{}
	d.Reset(&d.in)
	decoders.Put(d)
}

// Validate checks that b is exactly one JSON value that satisfies the policy.
func Validate(b []byte) error {
	d := GetDecoder(b)
	defer d.Release()
	if err := Walk(d.Decoder); err != nil {
		return err
	}
	return End(d.Decoder)
}

// Walk consumes exactly one JSON value from d, checking every number against
// the policy. The decoder itself enforces duplicates and UTF-8.
func Walk(d *jsontext.Decoder) error {
	depth := d.StackDepth()
	for {
		if d.PeekKind() == '0' {
			v, err := d.ReadValue()
			if err != nil {
				return wrapSyntax(d, err)
			}
			if err := CheckNumber(v); err != nil {
				return &Error{Pointer: string(d.StackPointer()), Err: err}
			}
		} else if _, err := d.ReadToken(); err != nil {
			if err == io.EOF {
				err = ErrEmpty
			}
			return wrapSyntax(d, err)
		}
		if d.StackDepth() == depth {
			return nil
		}
	}
}

// End requires that nothing but whitespace follows in d.
func End(d *jsontext.Decoder) error {
	if d.PeekKind() != 0 {
		return &Error{Err: ErrTrailingData}
	}
	if _, err := d.ReadToken(); err != io.EOF {
		if err == nil {
			err = ErrTrailingData
		}
		return wrapSyntax(d, err)
	}
	return nil
}

func wrapSyntax(d *jsontext.Decoder, err error) error {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return &Error{Pointer: string(se.JSONPointer), Err: err}
	}
	return &Error{Pointer: string(d.StackPointer()), Err: err}
}

// CheckNumber applies the number policy to one raw JSON number.
func CheckNumber(raw []byte) error {
	if isIntLiteral(raw) {
		if _, ok := parseSafeInt(raw); !ok {
			return ErrUnsafeNumber
		}
		return nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) || math.Abs(f) > MaxSafeInteger {
		return ErrUnsafeNumber
	}
	return nil
}

// ParseInt parses a raw JSON number that must be a plain integer literal
// (no fraction or exponent, no leading zero, not "-0") within ±(2^53−1).
// It checks the literal's grammar itself, so raw need not be validated
// first.
//
// "-0" is refused (ErrNegativeZero): the protocols' integer fields
// (created_at, nonce, seq, …) are non-negative, canonicalization writes -0
// as 0, and some parsers read it as IEEE negative zero, so a signed "-0"
// would mean different things to different receivers.
func ParseInt(raw []byte) (int64, error) {
	digits := bytes.TrimPrefix(raw, []byte("-"))
	if !isIntLiteral(raw) || len(digits) > 1 && digits[0] == '0' {
		return 0, ErrNotInteger
	}
	if string(raw) == "-0" {
		return 0, ErrNegativeZero
	}
	n, ok := parseSafeInt(raw)
	if !ok {
		return 0, ErrUnsafeNumber
	}
	return n, nil
}

func isIntLiteral(raw []byte) bool {
	return len(raw) > 0 && !bytes.ContainsAny(raw, ".eE")
}

// parseSafeInt parses a grammatically valid JSON integer literal.
func parseSafeInt(raw []byte) (int64, bool) {
	neg := raw[0] == '-'
	digits := raw
	if neg {
		digits = raw[1:]
	}
	if len(digits) == 0 || len(digits) > 16 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if n > MaxSafeInteger {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// Canonicalize returns the RFC 8785 form of a value that already passed
// Validate. The input is not modified.
func Canonicalize(v []byte) ([]byte, error) {
	out := jsontext.Value(bytes.Clone(v))
	if err := out.Canonicalize(); err != nil {
		return nil, err
	}
	return out, nil
}

// CanonicalizeValidated is Canonicalize for input that Validate (or an
// equivalent strict walk) already accepted: it skips the duplicate-name
// and UTF-8 bookkeeping that the first pass did. On unvalidated input its
// output is unspecified.
func CanonicalizeValidated(v []byte) ([]byte, error) {
	out := jsontext.Value(bytes.Clone(v))
	if err := out.Canonicalize(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)); err != nil {
		return nil, err
	}
	return out, nil
}

// Unmarshal validates b and decodes it into v with json v2, rejecting
// unknown members (names match case-sensitively).
func Unmarshal(b []byte, v any) error {
	if err := Validate(b); err != nil {
		return err
	}
	return json.Unmarshal(b, v, json.RejectUnknownMembers(true))
}

// UnmarshalOpen is Unmarshal without RejectUnknownMembers, for documents
// whose schema is open (service documents, discovery).
func UnmarshalOpen(b []byte, v any) error {
	if err := Validate(b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// String decodes v, which must be exactly one JSON string, strictly
// (escapes, surrogates, UTF-8). It needs no prior Validate.
func String(v []byte) (string, error) {
	if jsontext.Value(v).Kind() != '"' {
		return "", ErrWrongKind
	}
	// Unquote into a buffer on the stack: the one allocation is the
	// string itself (record and event members are short).
	var buf [128]byte
	b, err := jsontext.AppendUnquote(buf[:0], v)
	return string(b), err
}

// Int decodes v, which must be exactly one JSON integer literal within
// ±(2^53−1) (see ParseInt). It needs no prior Validate.
func Int(v []byte) (int64, error) {
	if jsontext.Value(v).Kind() != '0' {
		return 0, ErrWrongKind
	}
	return ParseInt(v)
}

// Depth returns the nesting depth of v, which must be valid JSON text: 0
// for a scalar, 1 for an array or object holding only scalars, and one more
// for each level of arrays or objects inside. It scans the bytes once and
// allocates nothing.
func Depth(v []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte cannot end the string
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}

// WalkIn is Walk for a decoder whose whole input is buf, at the offset
// start where the next value begins. When a scan of the raw bytes finds
// the value's end and every number in it within the policy, the decoder
// reads the value whole (jsontext.Decoder.ReadValue: the same grammar,
// duplicate and UTF-8 checks), which costs far less than token by token;
// otherwise Walk reads it, and reports the first violation exactly.
func WalkIn(d *jsontext.Decoder, buf []byte, start int) error {
	if !numbersSafe(buf, start) {
		return Walk(d)
	}
	if _, err := d.ReadValue(); err != nil {
		if err == io.EOF {
			err = ErrEmpty
		}
		return wrapSyntax(d, err)
	}
	return nil
}

// numbersSafe scans the value starting at b[i] (raw, not yet validated)
// and reports whether it ends and every number literal in it passes
// CheckNumber. Strings are skipped whole, brackets counted; on valid JSON
// it sees exactly the number tokens a decoder sees.
func numbersSafe(b []byte, i int) bool {
	depth := 0
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			if i = stringEnd(b, i); i < 0 {
				return false
			}
		case c == '{' || c == '[':
			depth++
			i++
			continue
		case c == '}' || c == ']':
			if depth--; depth < 0 {
				return false
			}
			i++
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
				j++
			}
			if CheckNumber(b[i:j]) != nil {
				return false
			}
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':':
			i++
			continue
		default: // true, false, null, or not JSON (the decoder decides)
			i++
			for i < len(b) && b[i] >= 'a' && b[i] <= 'z' {
				i++
			}
		}
		if depth == 0 {
			return true
		}
	}
	return false
}

// KindName names the JSON type of a value by its first byte, as
// jsontext.Kind spells it ('{', '[', '"', '0', 't', 'f', 'n'), for error
// messages: "object", "array", "string", "number", "boolean", "null", or
// "value" for anything else.
func KindName(k byte) string {
	switch k {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "value"
}

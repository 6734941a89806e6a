package strictjson

import (
	"bytes"
	"errors"

	"github.com/go-json-experiment/json/jsontext"
)

// Member is one top-level member of a JSON object found by SplitObject.
type Member struct {
	Name  string
	Value []byte // raw, NOT yet validated
}

// ErrStructure reports malformed JSON structure found by SplitObject.
var ErrStructure = errors.New("malformed JSON object")

// linearNames is how many members are checked for duplicates by a linear
// scan; past it a set takes over, so an object with millions of members
// (a hostile answer) costs linear time, not quadratic.
const linearNames = 16

// seenName reports whether name is already a member of out, keeping *seen
// as the set of out's names once out has linearNames members.
func seenName(out []Member, seen *map[string]struct{}, name string) bool {
	if len(out) < linearNames {
		for _, m := range out {
			if m.Name == name {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]struct{}, 2*len(out))
		for _, m := range out {
			(*seen)[m.Name] = struct{}{}
		}
	}
	if _, dup := (*seen)[name]; dup {
		return true
	}
	(*seen)[name] = struct{}{}
	return false
}

// SplitObject splits a JSON object into its top-level members without
// validating the member values, so that a caller with a strict parser for a
// large member (a signed envelope inside a record) reads those bytes once.
//
// It checks everything outside the values: one object, whitespace and
// separators in the right places, names that are valid JSON strings,
// unique after unescaping, and nothing after the object. The caller MUST
// validate every Value (Validate, or a parser that is at least as strict);
// only then is the whole text validated. Value boundaries are found by
// matching brackets outside strings, which is exact for valid values and
// harmless for invalid ones: a wrong boundary makes the value fail its
// validation.
func SplitObject(b []byte) ([]Member, error) { return SplitObjectAt(nil, b, "", nil) }

// SplitObjectAt is SplitObject returning the members in dst's storage,
// when it has room (a caller that does not keep them can pass a buffer on
// its stack), except that the value of the member named
// name is not scanned for its end: parse reads it from the start of the
// bytes it is given (the value and everything after it) and returns the
// length of the value it parsed. The member's Value is those bytes. An
// error of parse is returned as is. With a nil parse it is SplitObject.
//
// A caller whose strict parser for one large member can stop at the
// value's end thus reads those bytes once, not twice. For valid JSON the
// members are those SplitObject returns; on an error the two may report
// different failures, so a caller that must name the first failure as
// SplitObject would re-runs SplitObject then.
func SplitObjectAt(dst []Member, b []byte, name string, parse func([]byte) (int, error)) ([]Member, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, &Error{Err: ErrWrongKind}
	}
	i = skipWS(b, i+1)
	out := dst[:0]
	var seen map[string]struct{}
	if i < len(b) && b[i] == '}' {
		return out, endOnly(b, i+1)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, &Error{Err: ErrStructure}
		}
		end := stringEnd(b, i)
		if end < 0 {
			return nil, &Error{Err: ErrStructure}
		}
		// A record's own member names need no unquoting (they are
		// ASCII without escapes); any other name is unquoted, which
		// validates it. Interned first: the set may keep the name, and a
		// conversion made for it would allocate for every member of
		// every record.
		key := knownName(b[i+1 : end-1])
		if key == "" {
			var buf [32]byte
			mname, err := jsontext.AppendUnquote(buf[:0], b[i:end])
			if err != nil {
				return nil, &Error{Err: err}
			}
			key = intern(mname)
		}
		if out == nil {
			out = make([]Member, 0, 8)
		}
		if seenName(out, &seen, key) {
			return nil, &Error{Pointer: "/" + key, Err: ErrStructure}
		}
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, &Error{Err: ErrStructure}
		}
		i = skipWS(b, i+1)
		var vend int
		if parse != nil && key == name {
			n, err := parse(b[i:])
			if err != nil {
				return nil, err
			}
			vend = i + n
		} else if vend = valueEnd(b, i); vend < 0 {
			return nil, &Error{Pointer: "/" + key, Err: ErrStructure}
		}
		out = append(out, Member{Name: key, Value: b[i:vend]})
		i = skipWS(b, vend)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return out, endOnly(b, i+1)
		}
		return nil, &Error{Err: ErrStructure}
	}
}

func endOnly(b []byte, i int) error {
	if skipWS(b, i) != len(b) {
		return &Error{Err: ErrTrailingData}
	}
	return nil
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i].
func stringEnd(b []byte, i int) int {
	// Most strings have no escape: the first quote ends them.
	if q := bytes.IndexByte(b[i+1:], '"'); q >= 0 && bytes.IndexByte(b[i+1:i+1+q], '\\') < 0 {
		return i + 1 + q + 1
	}
	for i++; i < len(b); {
		j := bytes.IndexAny(b[i:], `"\`)
		if j < 0 {
			return -1
		}
		i += j
		if b[i] == '"' {
			return i + 1
		}
		i += 2 // skip the escaped character
	}
	return -1
}

// valueEnd returns the index just past the value starting at b[i]: a
// bracket-matched object or array, a string, or a run of literal/number
// characters.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			j := bytes.IndexAny(b[i:], `"{}[]`)
			if j < 0 {
				return -1
			}
			i += j
			switch b[i] {
			case '"':
				if i = stringEnd(b, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			default:
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	start := i
	for i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] >= 'a' && b[i] <= 'z' || b[i] == '-' || b[i] == '+' || b[i] == '.' || b[i] == 'E') {
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// intern returns name as a string, without allocating for the members of
// server records and envelopes, which SplitObject meets on every line.
func intern(name []byte) string {
	if k := knownName(name); k != "" {
		return k
	}
	return string(name)
}

// knownName returns the interned string for one of the record member
// names, "" for any other name.
func knownName(name []byte) string {
	switch string(name) {
	case "room_id":
		return "room_id"
	case "seq":
		return "seq"
	case "pre_hash":
		return "pre_hash"
	case "hash":
		return "hash"
	case "received_at":
		return "received_at"
	case "envelope":
		return "envelope"
	}
	return ""
}

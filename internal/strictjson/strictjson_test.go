package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gowebpki/jcs"
)

func TestValidate(t *testing.T) {
	good := []string{
		`{"a":"\ud83d\ude00","n":9007199254740991,"m":-9007199254740991}`,
		`{"f":1.5,"g":-0,"h":1e2,"i":[]}`, ` [1, 2] `, `"x"`, `0`,
	}
	for _, s := range good {
		if err := Validate([]byte(s)); err != nil {
			t.Errorf("Validate(%s) = %v", s, err)
		}
	}
	bad := map[string]error{
		`{"hash":"x","hash":"y"}`:              nil,
		`{"a":{"b":1,"b":2}}`:                  nil,
		`{"a":1,"\u0061":2}`:                   nil,
		`{"a":"\ud800"}`:                       nil,
		`{"a":"\udc00x"}`:                      nil,
		"{\"a\":\"\xff\"}":                     nil,
		`{"nonce":9007199254740992}`:           ErrUnsafeNumber,
		`{"n":-9007199254740992}`:              ErrUnsafeNumber,
		`{"n":1e400}`:                          ErrUnsafeNumber,
		`{"n":9007199254740992.0}`:             ErrUnsafeNumber,
		`{"n":123456789012345678901234567890}`: ErrUnsafeNumber,
		`{} {}`:                                ErrTrailingData,
		`{}x`:                                  nil,
		``:                                     ErrEmpty,
		`   `:                                  ErrEmpty,
		`{"a":1`:                               nil,
		"\ufeff{}":                             nil,
		`{"a":01}`:                             nil,
	}
	for s, want := range bad {
		err := Validate([]byte(s))
		if err == nil {
			t.Errorf("Validate(%q) accepted", s)
			continue
		}
		if want != nil && !errors.Is(err, want) {
			t.Errorf("Validate(%q) = %v, want %v", s, err, want)
		}
	}
}

func TestPointer(t *testing.T) {
	err := Validate([]byte(`{"a":[1,{"b":9007199254740993}]}`))
	var e *Error
	if !errors.As(err, &e) || e.Pointer != "/a/1/b" {
		t.Fatalf("got %#v", err)
	}
}

func TestParseInt(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "-1": -1, "9007199254740991": MaxSafeInteger} {
		if n, err := ParseInt([]byte(s)); err != nil || n != want {
			t.Errorf("ParseInt(%s) = %d, %v", s, n, err)
		}
	}
	for _, s := range []string{"1.0", "1e2", "9007199254740992", "-9007199254740992", "-0"} {
		if _, err := ParseInt([]byte(s)); err == nil {
			t.Errorf("ParseInt(%s) accepted", s)
		}
	}
	if _, err := Int([]byte("-0")); !errors.Is(err, ErrNegativeZero) || !errors.Is(err, ErrNotInteger) {
		t.Errorf("Int(-0) = %v", err)
	}
}

// FuzzCanonicalize is the differential test the issue asks for: whatever the
// strict parser accepts, jsontext and gowebpki/jcs canonicalize identically,
// and canonical output is a fixed point that re-validates.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{"a":"\ud83d\ude00","n":9007199254740991,"m":-9007199254740991}`,
		`{"b":1,"a":2,"é":3,"！":4,"😀":5,"nested":{"y":[true,false,null],"x":""}}`,
		`[1.5e-7,1e21,123456789.125,-0,0.1,"\u000f\u2028"]`,
		`{"peach":"This sorting order","péché":"is wrong according to French","pêche":"but canonicalization MUST","sin":"ignore locale"}`,
		`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if Validate(b) != nil {
			return
		}
		got, err := Canonicalize(b)
		if err != nil {
			t.Fatalf("Canonicalize failed on accepted input: %v", err)
		}
		want, err := jcs.Transform(b)
		if err != nil {
			t.Fatalf("gowebpki/jcs rejected accepted input %q: %v", b, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("canonical mismatch for %q:\njsontext %s\njcs      %s", b, got, want)
		}
		if err := Validate(got); err != nil {
			t.Fatalf("canonical output does not re-validate: %v", err)
		}
		again, _ := Canonicalize(got)
		if !bytes.Equal(again, got) {
			t.Fatal("canonical form is not a fixed point")
		}
	})
}

func TestIsCanonical(t *testing.T) {
	for _, s := range []string{`{"a":1,"b":[true,false,null],"c":"x\n\u001f"}`, `[]`, `{}`, `0`, `-1`, `1.5`, `1e-7`, `"é"`, `{"a":{"b":{}}}`,
		`9007199254740991`, `-9007199254740991`, "\"\u007f\ud7ff\"", "\"\u007f\U0010ffff\ufffd\"", `"\u0000\u001e"`, `[0,-0.5,0.5,1e-7,123.25]`} {
		if !IsCanonical([]byte(s)) {
			t.Errorf("%s: want canonical", s)
		}
	}
	for _, s := range []string{`{"b":1,"a":2}`, `{"a":1,"a":2}`, `{ "a":1}`, `{ ":0,00":0}`, `{"a":1, "b":2}`, `[1, 2]`, `1.0`, `-0`, `-0.0`, `-0e0`, `0.0`, `[-0]`, `1E2`, `"\/"`, `"\u0041"`, `"\u001F"`, `"\u000a"`, `0.10`,
		// Not strict JSON at all: the checker needs no Validate first.
		"\"\x01\"", "\"\xff\"", "\"\xed\xa0\x80\"", "\"\xc3\"", `"\ud800"`, `"\ud83d\ude00"`, `"\u00g0"`, `"\u0020"`, `"\x"`, `"abc`, `"\`, `"\u00`,
		`1-2`, `01`, `-01`, `00`, `-`, `1.`, `.5`, `1e`, `1e+`, `--1`, `+1`, `9007199254740992`, `-9007199254740992`, `1e400`, `12345678901234567`,
		`[1,]`, `[,1]`, `{"a":}`, `{"a"}`, `{"a" :1}`, `{"a":1,}`, `{,}`, `tru`, `nul`, `[`, `{`, `{"a":1`, `[1`, ``, ` `, `1 `, `[]]`, `{}}`,
		`{"\u0061":1}`, `{"é":1}`, strings.Repeat("[", maxCanonicalDepth+1) + strings.Repeat("]", maxCanonicalDepth+1)} {
		if IsCanonical([]byte(s)) {
			t.Errorf("%q: want not canonical", s)
		}
	}
	if s := strings.Repeat("[", maxCanonicalDepth) + strings.Repeat("]", maxCanonicalDepth); !IsCanonical([]byte(s)) {
		t.Errorf("%d levels: want canonical", maxCanonicalDepth)
	}
}

func TestCanonicalObject(t *testing.T) {
	b := []byte(`{"a":1,"b":{"c":[2]},"d":"x"},"rest":[`)
	ms, n, ok := CanonicalObject(nil, b)
	if !ok || n != len(`{"a":1,"b":{"c":[2]},"d":"x"}`) {
		t.Fatalf("ok %v, length %d", ok, n)
	}
	var got []string
	for _, m := range ms {
		got = append(got, string(b[m.NameStart:m.NameEnd])+"="+string(b[m.Start:m.End]))
	}
	if want := []string{"a=1", `b={"c":[2]}`, `d="x"`}; !slices.Equal(got, want) {
		t.Fatalf("members %q, want %q", got, want)
	}
	for _, s := range []string{`[1]`, `{"b":1,"a":2}`, ` {}`, `{"a":01}`, `"x"`} {
		if _, _, ok := CanonicalObject(nil, []byte(s)); ok {
			t.Errorf("%s: accepted", s)
		}
	}
}

// FuzzIsCanonical is the differential test of the canonical checker
// against the reference: what IsCanonical accepts, the jsontext-based
// strict parse (Validate) accepts and canonicalizes to the same bytes;
// what CanonicalObject accepts is such an object, members and length
// included; and canonical ASCII text is recognized.
func FuzzIsCanonical(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,false,null],"c":"x\n\u001f"}`, `{"b":1,"a":2}`, `1.5`, `"\u00e9"`, `{"é":1,"z":2}`, `[1e-7,0.1,100]`,
		"\"\xed\xa0\x80\"", `"\ud800"`, `9007199254740992`, `{"a":1,"a":1}`, `-0`, `01`, `{"a":[{"b":"\u001f"}],"c":-1.5e-7}x`} {
		f.Add([]byte(s))
	}
	// The identity vectors: every event, canonical and not.
	var vectors struct {
		Events []struct {
			Event jsontext.Value `json:"event"`
			JCS   string         `json:"jcs"`
		} `json:"events"`
	}
	raw, err := os.ReadFile("../../identity/testdata/identity-1.0.vectors.json")
	if err != nil {
		f.Fatal(err)
	}
	if err := json.Unmarshal(raw, &vectors); err != nil {
		f.Fatal(err)
	}
	for _, e := range vectors.Events {
		f.Add([]byte(e.Event))
		f.Add([]byte(e.JCS))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if IsCanonical(b) {
			if err := Validate(b); err != nil {
				t.Fatalf("IsCanonical(%q) but Validate refuses it: %v", b, err)
			}
			if canon, err := Canonicalize(b); err != nil || !bytes.Equal(canon, b) {
				t.Fatalf("IsCanonical(%q) but canonical form is %q (%v)", b, canon, err)
			}
		}
		if ms, n, ok := CanonicalObject(nil, b); ok {
			obj := b[:n]
			if !IsCanonical(obj) || obj[0] != '{' {
				t.Fatalf("CanonicalObject accepted %q, which IsCanonical refuses", obj)
			}
			want, err := SplitObject(obj)
			if err != nil || len(want) != len(ms) {
				t.Fatalf("CanonicalObject found %d members in %q, SplitObject %d (%v)", len(ms), obj, len(want), err)
			}
			for i, m := range ms {
				if string(obj[m.NameStart:m.NameEnd]) != want[i].Name || !bytes.Equal(obj[m.Start:m.End], want[i].Value) {
					t.Fatalf("member %d: %q=%q, want %q=%q", i, obj[m.NameStart:m.NameEnd], obj[m.Start:m.End], want[i].Name, want[i].Value)
				}
			}
		}
		if Validate(b) != nil {
			return
		}
		canon, err := Canonicalize(b)
		if err != nil {
			t.Fatal(err)
		}
		if !IsCanonical(canon) && !bytes.ContainsAny(canon, "\\\u0080") && asciiOnly(canon) && Depth(canon) <= maxCanonicalDepth {
			t.Fatalf("canonical ASCII text %q not recognized", canon)
		}
	})
}

func asciiOnly(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// FuzzSplitObject: SplitObject plus Validate of every value accepts exactly
// the objects Validate accepts, with the same members.
func FuzzSplitObject(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":{"c":[1,"}"]},"d":"x\"y"}`, ` { } `, `{"a":1,"a":2}`, `{"a":[}`, `{"a":1}x`, `{"\u0061":true,"b":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		whole := Validate(b) == nil
		var obj map[string]jsontext.Value
		trimmed := bytes.TrimSpace(b)
		isObject := whole && trimmed[0] == '{' && json.Unmarshal(b, &obj) == nil
		members, err := SplitObject(b)
		parts := err == nil
		for _, m := range members {
			if Validate(m.Value) != nil {
				parts = false
			}
		}
		if parts != isObject {
			t.Fatalf("split+validate=%v, validate object=%v for %q", parts, isObject, b)
		}
		if parts {
			if len(members) != len(obj) {
				t.Fatalf("%d members, want %d", len(members), len(obj))
			}
			for _, m := range members {
				if !bytes.Equal(bytes.TrimSpace(obj[m.Name]), m.Value) {
					t.Fatalf("member %q = %q, want %q", m.Name, m.Value, obj[m.Name])
				}
			}
		}
	})
}

func TestParseIntGrammar(t *testing.T) {
	for _, s := range []string{"01", "-01", "00", "1-2", "-", "", "+1", "1 "} {
		if _, err := ParseInt([]byte(s)); err == nil {
			t.Errorf("ParseInt(%q) accepted", s)
		}
	}
}

// Negative zero written as JSON text (a Go constant -0.0 is +0, so it must
// come from the text or math.Copysign): RFC 8785 serializes it as 0, as
// gowebpki/jcs does, and the integer decoder refuses it.
func TestNegativeZero(t *testing.T) {
	for _, s := range []string{`-0`, `-0.0`, `-0e0`, `-0.000e-5`, `[-0.0,{"a":-0}]`} {
		got, err := Canonicalize([]byte(s))
		if err != nil {
			t.Fatalf("Canonicalize(%s): %v", s, err)
		}
		want, err := jcs.Transform([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || bytes.Contains(got, []byte("-")) {
			t.Errorf("Canonicalize(%s) = %s, jcs %s", s, got, want)
		}
	}
	if nz := math.Copysign(0, -1); !math.Signbit(nz) {
		t.Fatal("math.Copysign(0, -1) is not negative zero")
	} else if got := jsontext.Value(fmt.Appendf(nil, "%g", nz)); string(got) != "-0" {
		t.Fatalf("%%g of negative zero = %s", got)
	} else if c, err := Canonicalize(got); err != nil || string(c) != "0" {
		t.Errorf("Canonicalize(%s) = %s, %v", got, c, err)
	}
	if _, err := ParseInt([]byte("-0")); !errors.Is(err, ErrNegativeZero) {
		t.Errorf("ParseInt(-0) = %v", err)
	}
}

func TestDepth(t *testing.T) {
	for s, want := range map[string]int{
		`1`: 0, `"[{"`: 0, `[]`: 1, `{"a":1}`: 1, `{"a":[]}`: 2, `[[],[[]],{}]`: 3,
		`{"a":"\"[","b":{"c":["\\",{}]}}`: 4, ` [ { } ] `: 2,
	} {
		if got := Depth([]byte(s)); got != want {
			t.Errorf("Depth(%s) = %d, want %d", s, got, want)
		}
	}
}

// TestSplitObjectManyMembers: an object with very many members (a hostile
// answer) is split in linear time, and a duplicate far in is still found.
func TestSplitObjectManyMembers(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	const n = 100_000
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"m%d":0`, i)
	}
	start := time.Now()
	ms, err := SplitObject([]byte(b.String() + "}"))
	if err != nil || len(ms) != n {
		t.Fatalf("%d members, %v", len(ms), err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("splitting %d members took %v", n, d)
	}
	for _, dup := range []string{`,"m3":1}`, `,"m90000":1}`} {
		if _, err := SplitObject([]byte(b.String() + dup)); !errors.Is(err, ErrStructure) {
			t.Fatalf("duplicate %s: %v", dup, err)
		}
	}
}

// FuzzWalkIn: WalkIn gives Walk's verdict on every input (and the same
// number-policy reason), and stops where Walk stops.
func FuzzWalkIn(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,false,null],"c":"x\n\u001f"}`, `{"a":9007199254740993}`, `[1e400]`, `"x"`, `-0`, `{"a":1,"a":2}`,
		`{"a":"\"}"}`, `[1,2,]`, `{"a":[{"b":-1.5e-7}]}`, `{"a":"\xff"}`, `[`, `]`, ` [1] `, `{"a":tru}`, `[1.2.3]`, `[9007199254740991,-9007199254740991]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d1 := NewDecoder(b)
		err1 := Walk(d1)
		d2 := NewDecoder(b)
		err2 := WalkIn(d2, b, skipWS(b, 0))
		if (err1 == nil) != (err2 == nil) || errors.Is(err1, ErrUnsafeNumber) != errors.Is(err2, ErrUnsafeNumber) || errors.Is(err1, ErrEmpty) != errors.Is(err2, ErrEmpty) {
			t.Fatalf("Walk: %v; WalkIn: %v", err1, err2)
		}
		if err1 == nil && d1.InputOffset() != d2.InputOffset() {
			t.Fatalf("Walk stops at %d, WalkIn at %d", d1.InputOffset(), d2.InputOffset())
		}
	})
}

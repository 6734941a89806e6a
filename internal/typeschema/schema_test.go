package typeschema

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// costlyPattern compiles to just under MaxPatternInsts: the most a single
// location admits by default.
const costlyPattern = `(?:a*|b*|c*|d*|e*|f*|g*|h*){43}q`

// wantCode fails unless err is an *identity.Error with the given code.
func wantCode(t testing.TB, err error, code identity.Code) {
	t.Helper()
	var ie *identity.Error
	if !errors.As(err, &ie) || ie.Code != code {
		t.Fatalf("got %v, want code %s", err, code)
	}
}

// TestPatternInsts: costlyPattern, the largest pattern one location
// admits by default, compiles to just under the bound.
func TestPatternInsts(t *testing.T) {
	cp, err := compilePattern(costlyPattern, MaxPatternInsts)
	if err != nil || cp.insts > MaxPatternInsts || cp.insts < MaxPatternInsts*9/10 {
		t.Fatalf("costlyPattern: %d instructions, %v", cp.insts, err)
	}
}

// TestPatternCompiledOnce: the library evaluates the very programs the
// cost check admitted, compiled once, not its own copies.
func TestPatternCompiledOnce(t *testing.T) {
	cs, _, err := NewCache(0).Compile([]byte(`{"properties":{"a":{"pattern":"^x+$"},"b":{"pattern":"^x+$"}},"patternProperties":{"^x+$":{}}}`), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	a, b := cs.s.Properties["a"].Pattern, cs.s.Properties["b"].Pattern
	var pp jsonschema.Regexp
	for re := range cs.s.PatternProperties {
		pp = re
	}
	if a == nil || a != b || a != pp {
		t.Fatalf("patterns compiled separately: %p %p %p", a, b, pp)
	}
}

// TestSchemaReferencesRefusedWithoutIO: remote and file references are
// refused before the loader, a file or a server is ever touched.
func TestSchemaReferencesRefusedWithoutIO(t *testing.T) {
	testLoadHook = func(u string) { t.Errorf("loader called for %s", u) }
	defer func() { testLoadHook = nil }()

	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"type":"string"}`))
	}))
	defer srv.Close()
	// A readable file holding a valid schema: a FileLoader would succeed.
	file := filepath.Join(t.TempDir(), "leak.json")
	if err := os.WriteFile(file, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(file)

	refused := []string{
		`{"$ref":"file://` + file + `"}`,
		`{"properties":{"a":{"$ref":"file://` + file + `#/type"}}}`,
		`{"$ref":"` + srv.URL + `/schema.json"}`,
		`{"$defs":{"x":{"$ref":"https://json-schema.org/draft/2020-12/schema"}},"$ref":"#/$defs/x"}`,
		`{"$ref":"other.json"}`,
		`{"$ref":"/etc/passwd"}`,
		`{"$dynamicRef":"` + srv.URL + `/s#meta"}`,
		`{"$id":"https://a.example/root.json","$ref":"https://b.example/other.json"}`,
		`{"$id":"https://a.example/dir/root.json","$ref":"sibling.json"}`,
		`{"items":[{"$ref":"http://169.254.169.254/latest"}]}`,
		`{"$schema":"` + srv.URL + `/meta"}`,
	}
	for _, s := range refused {
		_, _, err := NewCache(0).Compile([]byte(s), DefaultLimits)
		wantCode(t, err, identity.CodeInvalidEvent)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server was hit %d times", n)
	}
	after, _ := os.Stat(file)
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("file changed")
	}
	// Internal references are fine.
	for _, s := range []string{
		`{"$defs":{"n":{"type":"object","properties":{"c":{"type":"array","items":{"$ref":"#/$defs/n"}}}}},"$ref":"#/$defs/n"}`,
		`{"$id":"https://a.example/root.json","$defs":{"x":{"$id":"x.json","type":"string"}},"properties":{"a":{"$ref":"x.json"},"b":{"$ref":"https://a.example/root.json#/$defs/x"}}}`,
		`{"properties":{"$ref":{"type":"string"}}}`,
		`{"$anchor":"top","properties":{"next":{"$ref":"#top"}}}`,
	} {
		if _, _, err := NewCache(0).Compile([]byte(s), DefaultLimits); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

// FuzzDecode: Decode, the single-pass decoder payloads are validated on,
// accepts exactly what strictjson.Validate accepts, and never panics;
// DecodeInstance refuses with Validate's very error, or with ErrTooDeep
// only past its bound, and otherwise builds the tree the schema library's
// own UnmarshalJSON builds.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,-0,"x",null,true]}`, `{"a":1,"a":2}`, `{"\u0061":1,"a":2}`, `[1e400]`, `01`, `"\ud800"`, ``, `{} {}`,
		`{"x":{"a":1.0000000000000001,"a":1e400}}`, `[[[[1E2]]],{"b":[[]]}]`, `[[[[[[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := Decode(b)
		verr := strictjson.Validate(b)
		if (err == nil) != (verr == nil) {
			t.Fatalf("Decode and strictjson.Validate disagree on %q: %v", b, err)
		}
		inst, err := DecodeInstance(b, 3)
		if errors.Is(err, ErrTooDeep) {
			if strictjson.Depth(b) <= 3 {
				t.Fatalf("DecodeInstance(%q, 3): %v", b, err)
			}
			return
		}
		if (err == nil) != (verr == nil) || err != nil && err.Error() != verr.Error() {
			t.Fatalf("DecodeInstance(%q): %v, strictjson.Validate: %v", b, err, verr)
		}
		if err != nil {
			return
		}
		if strictjson.Depth(b) > 3 {
			t.Fatalf("DecodeInstance(%q, 3) exceeded its bound", b)
		}
		ref, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil || !reflect.DeepEqual(inst, ref) {
			t.Fatalf("DecodeInstance(%q) = %#v, jsonschema.UnmarshalJSON: %#v, %v", b, inst, ref, err)
		}
	})
}

// FuzzCompile: admitting a type schema never panics and fails only with
// invalid_event or schema_unsupported (invalid_type_schema in their place
// under the profile), and the profile admits nothing the seed's rules
// refuse.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"integer","maximum":3}},"additionalProperties":false}`,
		`{"$defs":{"n":{"oneOf":[{"type":"array","items":{"$ref":"#/$defs/n"}},{"type":"number","exclusiveMinimum":0}]}},"$ref":"#/$defs/n"}`,
		`{"$defs":{"a":{"$id":"https://x.example/a"}},"$ref":"https://x.example/a"}`,
		`{"patternProperties":{"^[a-z]{2}$":{"pattern":"(?=a)"}}}`,
		`{"$ref":"#"}`,
	} {
		f.Add([]byte(s))
	}
	cache := NewCache(0)
	profile := DefaultLimits
	profile.Profile = true
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4096 {
			return
		}
		_, _, err := cache.Compile(b, DefaultLimits)
		var ie *identity.Error
		if err != nil && (!errors.As(err, &ie) || ie.Code != identity.CodeInvalidEvent && ie.Code != CodeSchemaUnsupported) {
			t.Fatalf("seed: %v", err)
		}
		_, _, perr := cache.Compile(b, profile)
		if perr != nil && (!errors.As(perr, &ie) || ie.Code != CodeInvalidTypeSchema && ie.Code != CodeSchemaUnsupported) {
			t.Fatalf("profile: %v", perr)
		}
		if perr == nil && err != nil {
			t.Fatalf("the profile admitted what the seed refuses: %v", err)
		}
	})
}

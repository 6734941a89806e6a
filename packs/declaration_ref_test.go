package packs

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/internal/typedjson"
	"github.com/agentprotocols/go-sdk/internal/typeschema"
)

// The two-pass declaration parse that the one-pass parse replaced (the tree for the
// kernel schema, then json.Unmarshal into the typed struct), kept as the
// reference FuzzParseDeclarationOnePass compares ParseDeclaration with.

func referenceParseDeclaration(b []byte, cache *SchemaCache, lim limits) (Declaration, error) {
	v, err := typeschema.Decode(b)
	if err != nil {
		return Declaration{}, identity.Wrap(identity.CodeInvalidEvent, "type declaration", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return Declaration{}, invalidEvent("type declaration must be a JSON object")
	}
	if !isImport(obj) {
		def, err := referenceParseDefinition(b, obj, cache, lim)
		return Declaration{Definition: def}, err
	}
	if se := DefaultDraft.kernel().packImport.Validate(obj); se != nil {
		return Declaration{}, schemaErr(identity.CodeInvalidEvent, "invalid pack import", se)
	}
	imp := new(Import)
	if err := json.Unmarshal(b, imp, json.RejectUnknownMembers(true)); err != nil {
		return Declaration{}, identity.Wrap(identity.CodeInvalidEvent, "pack import", err)
	}
	if imp.Use == "" { // the pack form (the kernel schema admits exactly one)
		if u, err := url.Parse(imp.Pack); err != nil || !u.IsAbs() || u.Host == "" {
			return Declaration{}, invalidEvent("pack %q is not an absolute URI", clip(imp.Pack))
		}
	}
	return Declaration{Import: imp}, nil
}

// parseDefinition validates a typeDef object (v is b decoded, or nil) and
// compiles its schema.
func referenceParseDefinition(b []byte, v any, cache *SchemaCache, lim limits) (*Definition, error) {
	if v == nil {
		var err error
		if v, err = typeschema.Decode(b); err != nil {
			return nil, identity.Wrap(identity.CodeInvalidEvent, "type definition", err)
		}
	}
	if obj, ok := v.(map[string]any); ok {
		if name, ok := obj["type"].(string); ok && !ValidTypeName(name) {
			return nil, invalidEvent("type name %q is not dotted lowercase, or is reserved (room., type., built-in)", clip(name))
		}
	}
	if se := DefaultDraft.kernel().typeDef.Validate(v); se != nil {
		return nil, schemaErr(identity.CodeInvalidEvent, "invalid type definition", se)
	}
	def := new(Definition)
	if err := json.Unmarshal(b, def, json.RejectUnknownMembers(true)); err != nil {
		return nil, identity.Wrap(identity.CodeInvalidEvent, "type definition", err)
	}
	cs, canon, err := cache.compile(def.Schema, lim)
	if err != nil {
		return nil, withContext(err, "type "+def.Type)
	}
	def.Schema, def.schema = canon, cs
	if def.Extra != nil {
		if def.Extra, err = strictjson.Canonicalize(def.Extra); err != nil {
			return nil, identity.Wrap(identity.CodeInvalidEvent, "type definition extra", err)
		}
	}
	return def, nil
}

// FuzzParseDeclarationOnePass checks that ParseDeclaration, which decodes
// the typed declaration from the parse the kernel schema evaluates,
// decides every input as the two-pass reference does: the same code and
// sentinel on refusal, deeply equal declarations on acceptance.
func FuzzParseDeclarationOnePass(f *testing.F) {
	for _, s := range declarationSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{`null`, `[]`, `{"use":"adp:reactions/1.0","types":null}`, `{"use":"adp:reactions/1.0","overrides":{}}`,
		`{"use":"adp:reactions/1.0","overrides":{"a.b":null}}`, `{"use":"adp:reactions/1.0","overrides":{"a.b":{"rate_hint":1.0}}}`,
		`{"type":"a.b","kind":"signal","title":"t","schema":{},"rate_hint":1e2}`, `{"type":"a.b","kind":"signal","title":"t","schema":{"pattern":"(?=a)"}}`,
		`{"type":"a.b","kind":"signal","title":"t","schema":{},"roles":[],"extra":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gerr := ParseDeclaration(b)
		want, werr := referenceParseDeclaration(b, defaultCache, defaultLimits)
		if g, w := codeOf(gerr), codeOf(werr); g != w {
			t.Fatalf("%q: one pass %s (%v), reference %s (%v)", b, g, gerr, w, werr)
		}
		if g, w := errors.Is(gerr, ErrSchemaUnsupported), errors.Is(werr, ErrSchemaUnsupported); g != w {
			t.Fatalf("%q: schema_unsupported: one pass %v, reference %v", b, g, w)
		}
		if werr != nil {
			return
		}
		for _, d := range []*Declaration{&got, &want} {
			if d.Definition != nil {
				c := *d.Definition
				c.schema = nil // compiled once per cache key; compared by Schema
				d.Definition = &c
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: one pass %#v, reference %#v", b, got, want)
		}
	})
}

// codeOf is "ok", the outermost §20 code, or "untyped".
func codeOf(err error) string {
	if err == nil {
		return "ok"
	}
	var ie *identity.Error
	if errors.As(err, &ie) {
		return string(ie.Code)
	}
	return "untyped"
}

// TestTapeBound checks the bound on a hostile built-in payload's tape: a
// message.create whose content holds 131,073 values records three: the
// payload object and its two members, not the content's contents.
func TestTapeBound(t *testing.T) {
	payload := []byte(`{"content_type":"application/json","content":[` + strings.Repeat("0,", 128<<10) + `0]}`)
	type message struct { // adp.Message's shape
		ContentType string         `json:"content_type"`
		Content     jsontext.Value `json:"content"`
	}
	p := typeschema.GetDecoder(len(payload))
	defer typeschema.PutDecoder(p, len(payload))
	err := DefaultDraft.checkBuiltin(p, "message.create", payload, &p.Tape, typedjson.OpaqueMembers(reflect.TypeFor[message]()))
	if err == nil {
		t.Fatal("an array content passed the kernel schema")
	}
	if n := len(p.Tape.Nodes); n != 3 {
		t.Fatalf("%d nodes on the tape, want 3", n)
	}
}

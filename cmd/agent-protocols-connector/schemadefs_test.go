package main

import (
	"bytes"
	"encoding/json"
	"os"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaDefs validates JSON against the $defs of one vendored schema
// document (the official MCP schema.json of a protocol version),
// compiling each definition once.
type schemaDefs struct {
	url string
	c   *jsonschema.Compiler

	mu   sync.Mutex
	defs map[string]*jsonschema.Schema
}

// loadSchemaDefs reads the schema document at path; url names it for
// the compiler (and in error messages).
func loadSchemaDefs(t testing.TB, path, url string) *schemaDefs {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	return &schemaDefs{url: url, c: c, defs: map[string]*jsonschema.Schema{}}
}

// check validates v against the definition named def.
func (s *schemaDefs) check(def string, v json.RawMessage) error {
	s.mu.Lock()
	sch, ok := s.defs[def]
	if !ok {
		var err error
		if sch, err = s.c.Compile(s.url + "#/$defs/" + def); err != nil {
			s.mu.Unlock()
			return err
		}
		s.defs[def] = sch
	}
	s.mu.Unlock()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(v))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// mcpSchema is the official MCP schema of one protocol version
// (testdata/mcpschema, copied from the specification repository).
var mcpSchema = func() func(t testing.TB, version string) *schemaDefs {
	var mu sync.Mutex
	loaded := map[string]*schemaDefs{}
	return func(t testing.TB, version string) *schemaDefs {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if s := loaded[version]; s != nil {
			return s
		}
		s := loadSchemaDefs(t, "testdata/mcpschema/"+version+"/schema.json", "https://modelcontextprotocol.invalid/schema/"+version+".json")
		loaded[version] = s
		return s
	}
}()

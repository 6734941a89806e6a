package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// A tiny builder for the tools' input schemas. The schemas are data (what
// tools/list shows) and are also compiled once with the one JSON Schema
// implementation the project uses, so the schema a client sees is exactly
// the one a call is judged by.

type schema = map[string]any

// object is a closed object schema: unknown members are malformed calls.
func object(props schema, required ...string) schema {
	s := schema{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		slices.Sort(required)
		s["required"] = required
	}
	return s
}

func str(desc string) schema { return schema{"type": "string", "minLength": 1, "description": desc} }

// anyStr allows the empty string (content may be empty only where ADP allows).
func anyStr(desc string) schema { return schema{"type": "string", "description": desc} }

func integer(desc string, min int64) schema {
	return schema{"type": "integer", "minimum": min, "maximum": int64(1)<<53 - 1, "description": desc}
}

func limit(def, max int) schema {
	return schema{"type": "integer", "minimum": 1, "maximum": max, "description": fmt.Sprintf("Maximum number of items to return (default %d, at most %d).", def, max)}
}

func boolean(desc string) schema { return schema{"type": "boolean", "description": desc} }

func enum(desc string, vals ...string) schema {
	return schema{"type": "string", "enum": vals, "description": desc}
}

func strings_(desc string, item schema) schema {
	return schema{"type": "array", "items": item, "maxItems": 256, "description": desc}
}

func freeObject(desc string) schema { return schema{"type": "object", "description": desc} }

// with copies props and adds more members; the shared property sets below
// stay unmodified.
func with(base schema, more schema) schema {
	out := make(schema, len(base)+len(more))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// Bounds on one call's arguments, checked before the schema evaluator
// (which recurses) sees them: the largest legitimate input, a room_create
// with type declarations, is far below both.
const (
	maxArgsBytes = 1 << 20
	maxArgsDepth = 64
)

// compiledSchema is one tool's input schema, compiled.
type compiledSchema struct {
	raw json.RawMessage
	s   *jsonschema.Schema
}

func compileSchema(name string, s schema) (*compiledSchema, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	url := "urn:agent-protocols:connector:tool:" + name
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	cs, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	return &compiledSchema{raw: raw, s: cs}, nil
}

// validate checks a call's arguments: strict JSON first (duplicate names,
// bad Unicode, unsafe integers), then the schema. A failure is a malformed
// call, reported by the caller as a JSON-RPC invalid-params error.
func (c *compiledSchema) validate(args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	if len(args) > maxArgsBytes {
		return fmt.Errorf("arguments: larger than %d bytes", maxArgsBytes)
	}
	if err := strictjson.Validate(args); err != nil {
		return fmt.Errorf("arguments: %v", err)
	}
	if strictjson.Depth(args) > maxArgsDepth {
		return fmt.Errorf("arguments: nested deeper than %d", maxArgsDepth)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("arguments: %v", err)
	}
	if err := c.s.Validate(inst); err != nil {
		return fmt.Errorf("arguments: %s", clip(strings.Join(strings.Fields(err.Error()), " ")))
	}
	return nil
}

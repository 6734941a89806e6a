package connector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/internal/typeschema"
)

// A tiny builder for the tools' input schemas. The schemas are data (what
// a framework shows a model) and are also compiled once with the one JSON
// Schema implementation the project uses, so the schema a model sees is
// exactly the one a call is judged by.

type schema = map[string]any

// object is a closed object schema: unknown members are argument errors.
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

func arrayOf(desc string, item schema) schema {
	return schema{"type": "array", "items": item, "maxItems": 256, "description": desc}
}

func freeObject(desc string) schema { return schema{"type": "object", "description": desc} }

// with copies props and adds more members; the shared property sets stay
// unmodified.
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

// compileSchema compiles one tool's input schema; raw is what Tool
// publishes.
func compileSchema(name string, s schema) (raw json.RawMessage, cs *jsonschema.Schema, err error) {
	raw, err = json.Marshal(s)
	if err != nil {
		return nil, nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, err
	}
	url := "urn:agent-protocols:connector:tool:" + name
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(url, doc); err != nil {
		return nil, nil, err
	}
	cs, err = c.Compile(url)
	if err != nil {
		return nil, nil, err
	}
	return raw, cs, nil
}

// validateArgs checks a call's arguments: size, then strict JSON
// (duplicate names, bad Unicode, unsafe integers) and depth while they are
// decoded, once, into the schema library's instance form, then the schema.
// A failure is a [*ToolError] with [CodeInvalidArguments] naming the field
// (a JSON Pointer into the arguments) and the reason, so a model can
// correct its call (MCP 2025-11-25, SEP-1303).
func validateArgs(cs *jsonschema.Schema, args json.RawMessage) error {
	if len(args) > maxArgsBytes {
		return argError("", fmt.Sprintf("arguments are larger than %d bytes", maxArgsBytes))
	}
	if t := bytes.TrimSpace(args); len(t) == 0 || string(t) == "null" {
		args = json.RawMessage("{}")
	}
	inst, err := typeschema.DecodeInstance(args, maxArgsDepth)
	if errors.Is(err, typeschema.ErrTooDeep) {
		// A strict-JSON violation anywhere in the arguments is reported
		// before their depth: the decoder stopped where they got too deep.
		err = strictjson.Validate(args)
		if err == nil {
			return argError("", fmt.Sprintf("arguments are nested deeper than %d", maxArgsDepth))
		}
	}
	if err != nil {
		return strictArgError(err)
	}
	if err := cs.Validate(inst); err != nil {
		ve, ok := err.(*jsonschema.ValidationError)
		if !ok {
			return argError("", clipMessage(err.Error()))
		}
		field, reason := firstCause(ve)
		return argError(field, clipMessage(reason))
	}
	return nil
}

// strictArgError is the argument error for arguments that are not strict
// JSON: strictjson says "json at <pointer>: <reason>".
func strictArgError(err error) error {
	field, reason := "", err.Error()
	if rest, ok := strings.CutPrefix(reason, "json at "); ok {
		if p, r, ok := strings.Cut(rest, ": "); ok && strings.HasPrefix(p, "/") {
			field, reason = p, r
		}
	}
	return argError(field, clipMessage(reason))
}

// firstCause is the first leaf of a validation error tree: the JSON
// Pointer of the offending member and the evaluator's reason. A missing
// or unexpected member is named itself, not its parent object.
func firstCause(ve *jsonschema.ValidationError) (field, reason string) {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := slices.Clone(ve.InstanceLocation)
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		if len(k.Missing) > 0 {
			loc = append(loc, k.Missing[0])
		}
	case *kind.AdditionalProperties:
		// The library lists them in map order: sorted, the field and the
		// message are the same for the same arguments.
		slices.Sort(k.Properties)
		if len(k.Properties) > 0 {
			loc = append(loc, k.Properties[0])
		}
	}
	var b strings.Builder
	for _, p := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	// A leaf's text is "at '<pointer>': <reason>".
	msg := ve.Error()
	if _, r, ok := strings.Cut(msg, "': "); ok && strings.HasPrefix(msg, "at '") {
		msg = r
	}
	return b.String(), msg
}

// outputSchema derives a result type's JSON Schema from its json names:
// the member names and JSON types a framework may rely on. It is open
// (additionalProperties is not restricted) and requires nothing, so a
// result that adds a member, or omits an omitempty one, still conforms; a
// member slice, map or pointer may be null (a nil Go value). Raw JSON
// members (jsontext.Value, json.RawMessage) are unconstrained.
//
// The root is the result itself, which a successful call never leaves
// null: a pointer result type is described by its element, so the root
// is "type": "object" as MCP requires of Tool.outputSchema (2025-11-25
// schema; clients such as the TypeScript SDK refuse the whole tools/list
// otherwise).
func outputSchema(t reflect.Type) schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return typeSchema(t, map[reflect.Type]bool{})
}

var (
	rawValueType   = reflect.TypeFor[jsontext.Value]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
)

func typeSchema(t reflect.Type, seen map[reflect.Type]bool) schema {
	if t.Kind() == reflect.Pointer {
		// A nil pointer is null unless omitted.
		s := typeSchema(t.Elem(), seen)
		if typ, ok := s["type"].(string); ok {
			s["type"] = []string{typ, "null"}
		}
		return s
	}
	if t == rawValueType || t == rawMessageType {
		return schema{}
	}
	switch t.Kind() {
	case reflect.String:
		return schema{"type": "string"}
	case reflect.Bool:
		return schema{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return schema{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return schema{"type": "number"}
	case reflect.Slice, reflect.Array:
		return schema{"type": []string{"array", "null"}, "items": typeSchema(t.Elem(), seen)}
	case reflect.Map:
		return schema{"type": []string{"object", "null"}, "additionalProperties": typeSchema(t.Elem(), seen)}
	case reflect.Struct:
		if seen[t] {
			return schema{"type": "object"}
		}
		seen[t] = true
		defer delete(seen, t)
		props := schema{}
		addFields(t, props, seen)
		return schema{"type": "object", "properties": props}
	}
	return schema{}
}

// addFields adds t's JSON members to props, flattening embedded structs
// and inline members as encoding/json and json/v2 do.
func addFields(t reflect.Type, props schema, seen map[reflect.Type]bool) {
	for f := range t.Fields() {
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if (f.Anonymous && name == "") || strings.Contains(","+opts+",", ",inline,") {
			if ft.Kind() == reflect.Struct {
				addFields(ft, props, seen)
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = typeSchema(f.Type, seen)
	}
}

// jsonNames are the JSON member names of struct type t (the inputs'
// contract with the schemas).
func jsonNames(t reflect.Type) []string {
	props := schema{}
	addFields(t, props, map[reflect.Type]bool{})
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

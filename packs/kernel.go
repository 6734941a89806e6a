package packs

import (
	_ "embed"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/typedjson"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// kernelJSON is the payload part of the seed-era kernel schema
// (agent-discourse/1.0.schema.json), corrected where the seed text differs;
// its $comment lists the corrections.
//
//go:embed kernel.schema.json
var kernelJSON []byte

const kernelURL = "urn:agentprotocols:agent-discourse:1.0:kernel"

// builtins maps the eleven built-in types (§13.2), in the table's order, to
// their payload definitions in the kernel schema.
var builtins = [...]struct{ typ, def string }{
	{"room.create", "roomCreatePayload"},
	{"room.update", "roomUpdatePayload"},
	{"room.join", "roomJoinPayload"},
	{"room.join.review", "roomJoinReviewPayload"},
	{"room.leave", "reasonPayload"},
	{"room.member.role.update", "roomMemberRoleUpdatePayload"},
	{"room.member.remove", "roomMemberRemovePayload"},
	{"room.close", "reasonPayload"},
	{"room.cancel", "reasonPayload"},
	{"type.define", "typeDeclaration"},
	{"message.create", "messageCreatePayload"},
}

type kernelSchemas struct {
	payload                           map[string]*compiledSchema
	typeDef, packImport, packDocument *compiledSchema
}

// kernel compiles the embedded kernel schema once, on first use. It panics
// if the embedded file is broken, which the tests rule out.
var kernel = sync.OnceValue(func() *kernelSchemas {
	doc, err := decodeJSON(kernelJSON)
	if err != nil {
		panic("packs: embedded kernel schema: " + err.Error())
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(kernelURL, doc); err != nil {
		panic("packs: embedded kernel schema: " + err.Error())
	}
	compile := func(def string) *compiledSchema {
		s, err := c.Compile(kernelURL + "#/$defs/" + def)
		if err != nil {
			panic("packs: embedded kernel schema: " + err.Error())
		}
		return &compiledSchema{s: s}
	}
	ks := &kernelSchemas{payload: make(map[string]*compiledSchema, len(builtins))}
	for _, b := range builtins {
		ks.payload[b.typ] = compile(b.def)
	}
	ks.typeDef = compile("typeDef")
	ks.packImport = compile("packImport")
	ks.packDocument = compile("packDocument")
	return ks
})

// BuiltinTypes returns the eleven built-in event types in §13.2 order.
func BuiltinTypes() []string {
	out := make([]string, len(builtins))
	for i, b := range builtins {
		out[i] = b.typ
	}
	return out
}

// IsBuiltin reports whether typ is one of the eleven built-in types, which
// the host state machine governs and no declaration may redefine.
func IsBuiltin(typ string) bool {
	return slices.ContainsFunc(builtins[:], func(b struct{ typ, def string }) bool { return b.typ == typ })
}

// typeNameRE is the kernel schema's eventTypeName: dotted lowercase
// segments, at least two.
var typeNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)+$`)

// ValidTypeName reports whether name may name a custom type (§13.3): dotted
// lowercase, not under the reserved room. or type. prefixes, not a built-in.
func ValidTypeName(name string) bool {
	return typeNameRE.MatchString(name) && !strings.HasPrefix(name, "room.") &&
		!strings.HasPrefix(name, "type.") && !IsBuiltin(name)
}

// ValidateBuiltin checks the payload of a built-in event type against its
// kernel schema. It returns invalid_event, with a *SchemaError locating the
// failure in Err and Data, for a payload that is not strict JSON or does
// not match, and for a type that is not built in.
//
// The schema covers structure only. Cross-field rules it cannot express
// belong to the room state machine: a topic that is blank after trimming,
// start_time < end_time, the room.update field-set rules against current
// state, membership, roles and join-request matching.
func ValidateBuiltin(typ string, payload []byte) error {
	return DecodeBuiltin(typ, payload, nil)
}

// DecodeBuiltin is [ValidateBuiltin] followed, when v is not nil, by the
// strict decoding of the payload into the value v points to (a zero
// struct of the type's payload), both from one parse of the payload: the
// parse that builds the tree the kernel schema evaluates also records what
// the typed decoding needs. The decoding has the semantics of json v2's
// Unmarshal with RejectUnknownMembers(true) (unknown members refused,
// names case-sensitive, an integer field takes only an integer literal,
// null is the zero value, jsontext.Value fields keep their bytes, the
// fields' own UnmarshalJSON and UnmarshalText methods run); its failures
// are invalid_event with the cause in Err.
func DecodeBuiltin(typ string, payload []byte, v any) error {
	p := getDecoder(len(payload))
	defer putDecoder(p, len(payload))
	var tape *typedjson.Tape
	var opaque []string
	if v != nil {
		tape = &p.tape
		if t := reflect.TypeOf(v); t.Kind() == reflect.Pointer {
			opaque = typedjson.OpaqueMembers(t.Elem())
		}
	}
	if err := checkBuiltin(p, typ, payload, tape, opaque); err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	if err := typedjson.Decode(tape, v); err != nil {
		return identity.Wrap(identity.CodeInvalidEvent, "payload", err)
	}
	return nil
}

// ParseTypeDefine is [ValidateBuiltin] of a type.define payload followed
// by [ParseDeclaration] of it, both from one parse of the payload; its
// failures are theirs.
func ParseTypeDefine(payload []byte) (Declaration, error) {
	p := getDecoder(len(payload))
	defer putDecoder(p, len(payload))
	if err := checkBuiltin(p, "type.define", payload, &p.tape, definitionOpaque()); err != nil {
		return Declaration{}, err
	}
	return parseDeclarationAt(&p.tape, 0, defaultCache, defaultLimits)
}

// checkBuiltin parses payload with p, recording it on tape if not nil
// (without the contents of the opaque top-level members), and evaluates
// the kernel schema of typ on the tree.
func checkBuiltin(p *pooledDecoder, typ string, payload []byte, tape *typedjson.Tape, opaque []string) error {
	s := kernel().payload[typ]
	if s == nil {
		return invalidEvent("%q is not a built-in event type", clip(typ))
	}
	tree, err := p.decode(payload, tape, opaque)
	if err != nil {
		return identity.Wrap(identity.CodeInvalidEvent, typ+" payload", err)
	}
	if se := s.validate(tree); se != nil {
		return schemaErr(identity.CodeInvalidEvent, typ+" payload is invalid", se)
	}
	return nil
}

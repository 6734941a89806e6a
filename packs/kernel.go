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
	"github.com/agentprotocols/go-sdk/internal/typeschema"
)

// kernelJSON is the payload part of the seed-era kernel schema
// (agent-discourse/1.0.schema.json), corrected where the seed text differs;
// its $comment lists the corrections.
//
//go:embed kernel.schema.json
var kernelJSON []byte

// kernel20260924JSON is the payload part of the 2026-09-24 draft's kernel
// schema (agent-discourse/1.0.schema.json @ d1e038b1); its $comment lists
// the two definitions it restates.
//
//go:embed kernel-2026-09-24.schema.json
var kernel20260924JSON []byte

// builtin is one row of a draft's built-in type table: the type and its
// payload definition in the draft's kernel schema.
type builtin struct{ typ, def string }

// draftTypes is what the type system of one draft fixes. Every draft has a
// row in typeRules; the fields are the rules that differ.
type draftTypes struct {
	// kernelURL names the draft's kernel schema inside its compiler.
	kernelURL string
	// kernel is the draft's kernel schema (payload definitions).
	kernel []byte
	// registered is the draft's registered packs document.
	registered []byte
	// builtins are the built-in types in the draft's table order (seed
	// §13.2: eleven; later §12.2: twelve, room.join.request added).
	builtins []builtin
	// reserved are the type-name prefixes no custom type may use (seed
	// §13.3: room., type.; later §12.3: message. too).
	reserved []string
	// digests are the pack digest algorithms (seed §13.5: sha256; later
	// §12.5: sha256 and sha3-256, hosts must support both).
	digests []string
	// profile applies the type schema profile (later §12.3.1): fragment
	// $refs only, no dynamic or recursive references or $vocabulary, and
	// I-Regexp patterns; schema failures are invalid_type_schema.
	profile bool
	// conflicts refuses duplicate names in one declaration list or pack
	// import, kind changes and subsets naming missing types with
	// type_conflict (later §12.4). The seed lets a later declaration of
	// room.create redefine an earlier one and has no code for the rest
	// (invalid_event).
	conflicts bool
}

var typeRules = [...]draftTypes{
	Draft20260704: {
		kernelURL: "urn:agentprotocols:agent-discourse:1.0:kernel", kernel: kernelJSON, registered: registeredJSON,
		builtins: []builtin{
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
		},
		reserved: []string{"room.", "type."},
		digests:  []string{"sha256"},
	},
	Draft20260924: {
		kernelURL: "urn:agentprotocols:agent-discourse:1.0:kernel:2026-09-24", kernel: kernel20260924JSON, registered: registered20260924JSON,
		builtins: []builtin{
			{"room.create", "roomCreatePayload"},
			{"room.update", "roomUpdatePayload"},
			{"room.close", "reasonPayload"},
			{"room.cancel", "reasonPayload"},
			{"type.define", "typeDeclaration"},
			{"room.join", "roomJoinPayload"},
			{"room.join.request", "roomJoinRequestPayload"},
			{"room.join.review", "roomJoinReviewPayload"},
			{"room.leave", "reasonPayload"},
			{"room.member.role.update", "roomMemberRoleUpdatePayload"},
			{"room.member.remove", "roomMemberRemovePayload"},
			{"message.create", "messageCreatePayload"},
		},
		reserved:  []string{"room.", "type.", "message."},
		digests:   []string{"sha256", "sha3-256"},
		profile:   true,
		conflicts: true,
	},
}

// rules returns d's row of typeRules.
func (d Draft) rules() *draftTypes { return &typeRules[d.index()] }

type kernelSchemas struct {
	payload                           map[string]*typeschema.Schema
	typeDef, packImport, packDocument *typeschema.Schema
}

// kernels compiles each draft's embedded kernel schema once, on first
// use. It panics if an embedded file is broken, which the tests rule out.
var kernels [len(typeRules)]func() *kernelSchemas

func init() {
	for i := range typeRules {
		if typeRules[i].kernel != nil {
			kernels[i] = sync.OnceValue(func() *kernelSchemas { return compileKernel(&typeRules[i]) })
		}
	}
}

func compileKernel(rules *draftTypes) *kernelSchemas {
	doc, err := typeschema.Decode(rules.kernel)
	if err != nil {
		panic("packs: embedded kernel schema: " + err.Error())
	}
	c, err := typeschema.CompileTrusted(rules.kernelURL, doc)
	if err != nil {
		panic("packs: embedded kernel schema: " + err.Error())
	}
	compile := func(def string) *typeschema.Schema {
		s, err := c(rules.kernelURL + "#/$defs/" + def)
		if err != nil {
			panic("packs: embedded kernel schema: " + err.Error())
		}
		return s
	}
	ks := &kernelSchemas{payload: make(map[string]*typeschema.Schema, len(rules.builtins))}
	for _, b := range rules.builtins {
		ks.payload[b.typ] = compile(b.def)
	}
	ks.typeDef = compile("typeDef")
	ks.packImport = compile("packImport")
	ks.packDocument = compile("packDocument")
	return ks
}

// kernel returns the compiled kernel schema of d.
func (d Draft) kernel() *kernelSchemas { return kernels[d.index()]() }

// BuiltinTypes returns the eleven built-in event types of the default
// draft in §13.2 order; see [Draft.BuiltinTypes].
func BuiltinTypes() []string { return DefaultDraft.BuiltinTypes() }

// BuiltinTypes returns the draft's built-in event types in the order of
// its table: eleven in the 2026-07-04 draft (§13.2), twelve in the
// 2026-09-24 draft (§12.2).
func (d Draft) BuiltinTypes() []string {
	b := d.rules().builtins
	out := make([]string, len(b))
	for i, x := range b {
		out[i] = x.typ
	}
	return out
}

// IsBuiltin reports whether typ is one of the default draft's eleven
// built-in types; see [Draft.IsBuiltin].
func IsBuiltin(typ string) bool { return DefaultDraft.IsBuiltin(typ) }

// IsBuiltin reports whether typ is a built-in type of the draft, which
// the host state machine governs and no declaration may redefine.
func (d Draft) IsBuiltin(typ string) bool {
	return slices.ContainsFunc(d.rules().builtins, func(b builtin) bool { return b.typ == typ })
}

// typeNameRE is the kernel schema's eventTypeName: dotted lowercase
// segments, at least two.
var typeNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)+$`)

// ValidTypeName reports whether name may name a custom type in the default
// draft (§13.3); see [Draft.ValidTypeName].
func ValidTypeName(name string) bool { return DefaultDraft.ValidTypeName(name) }

// ValidTypeName reports whether name may name a custom type in the draft:
// dotted lowercase, not under a reserved prefix (room. and type.; in the
// 2026-09-24 draft message. too, §12.3), not a built-in.
func (d Draft) ValidTypeName(name string) bool {
	if !typeNameRE.MatchString(name) || d.IsBuiltin(name) {
		return false
	}
	for _, p := range d.rules().reserved {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	return true
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
	return DefaultDraft.DecodeBuiltin(typ, payload, nil)
}

// ValidateBuiltin is [ValidateBuiltin] against the draft's kernel schema.
func (d Draft) ValidateBuiltin(typ string, payload []byte) error {
	return d.DecodeBuiltin(typ, payload, nil)
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
	return DefaultDraft.DecodeBuiltin(typ, payload, v)
}

// DecodeBuiltin is [DecodeBuiltin] against the draft's kernel schema.
func (d Draft) DecodeBuiltin(typ string, payload []byte, v any) error {
	p := typeschema.GetDecoder(len(payload))
	defer typeschema.PutDecoder(p, len(payload))
	var tape *typedjson.Tape
	var opaque []string
	if v != nil {
		tape = &p.Tape
		if t := reflect.TypeOf(v); t.Kind() == reflect.Pointer {
			opaque = typedjson.OpaqueMembers(t.Elem())
		}
	}
	if err := d.checkBuiltin(p, typ, payload, tape, opaque); err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	tape.Context = &draftLimits[d.index()]
	if err := typedjson.Decode(tape, v); err != nil {
		return identity.Wrap(identity.CodeInvalidEvent, "payload", err)
	}
	return nil
}

// ParseTypeDefine is [ValidateBuiltin] of a type.define payload followed
// by [ParseDeclaration] of it, both from one parse of the payload; its
// failures are theirs.
func ParseTypeDefine(payload []byte) (Declaration, error) {
	return DefaultDraft.ParseTypeDefine(payload)
}

// ParseTypeDefine is [ParseTypeDefine] in the draft.
func (d Draft) ParseTypeDefine(payload []byte) (Declaration, error) {
	p := typeschema.GetDecoder(len(payload))
	defer typeschema.PutDecoder(p, len(payload))
	if err := d.checkBuiltin(p, "type.define", payload, &p.Tape, definitionOpaque()); err != nil {
		return Declaration{}, err
	}
	return parseDeclarationAt(&p.Tape, 0, defaultCache, d.limits())
}

// checkBuiltin parses payload with p, recording it on tape if not nil
// (without the contents of the opaque top-level members), and evaluates
// the kernel schema of typ on the tree.
func (d Draft) checkBuiltin(p *typeschema.Decoder, typ string, payload []byte, tape *typedjson.Tape, opaque []string) error {
	s := d.kernel().payload[typ]
	if s == nil {
		return invalidEvent("%q is not a built-in event type", clip(typ))
	}
	tree, err := p.Decode(payload, tape, opaque)
	if err != nil {
		return identity.Wrap(identity.CodeInvalidEvent, typ+" payload", err)
	}
	if se := s.Validate(tree); se != nil {
		return schemaErr(identity.CodeInvalidEvent, typ+" payload is invalid", se)
	}
	return nil
}

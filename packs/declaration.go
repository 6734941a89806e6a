package packs

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/internal/typedjson"
	"github.com/agentprotocols/go-sdk/internal/typeschema"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Kind is an event type's permission and quota class (§13.1).
type Kind string

// The three kinds.
const (
	KindMessage Kind = "message" // discussion content; moderator and speaker by default
	KindSignal  Kind = "signal"  // lightweight responses; every member by default
	KindControl Kind = "control" // coordination state; moderator by default
)

// Role is a member's participation role (§10.1).
type Role string

// The three roles.
const (
	RoleModerator Role = "moderator"
	RoleSpeaker   Role = "speaker"
	RoleObserver  Role = "observer"
)

// Status is a type definition's lifecycle state (§13.3).
type Status string

// The three statuses. Only disabled blocks new events; deprecated is advice
// to agents.
const (
	StatusActive     Status = "active"
	StatusDeprecated Status = "deprecated"
	StatusDisabled   Status = "disabled"
)

// DefaultRoles returns the roles a kind admits when a definition lists no
// roles (§13.1, §14). The creator passes every role check regardless.
func DefaultRoles(k Kind) []Role {
	switch k {
	case KindMessage:
		return []Role{RoleModerator, RoleSpeaker}
	case KindSignal:
		return []Role{RoleModerator, RoleSpeaker, RoleObserver}
	case KindControl:
		return []Role{RoleModerator}
	}
	return nil
}

// Definition is a type definition (§13.3): an inline declaration, a type of
// a pack, or an entry of a room's materialized registry. Its JSON form is
// the typeDef object of the kernel schema and the element of the Room
// resource's types array (§16).
//
// Definitions handed out by this package are shared and must not be
// modified. Schema and Extra are in RFC 8785 canonical form.
type Definition struct {
	// Type is the event type name: dotted lowercase, see ValidTypeName.
	Type string `json:"type"`
	// Kind fixes the permission class and the freshness rule; a
	// redefinition cannot change it.
	Kind Kind `json:"kind"`
	// Title is a short human-readable name.
	Title string `json:"title"`
	// Description says what the type means in the discussion.
	Description string `json:"description,omitempty"`
	// Schema is the JSON Schema (draft 2020-12) every payload must match.
	Schema jsontext.Value `json:"schema"`
	// Roles replaces the kind's default senders; nil means DefaultRoles(Kind).
	Roles []Role `json:"roles,omitempty"`
	// Instructions are norms for agents using the type, not host rules.
	Instructions string `json:"instructions,omitempty"`
	// Version is the definition's version string.
	Version string `json:"version,omitempty"`
	// Status is "" in a declaration that omits it; materialized definitions
	// always carry it (active by default).
	Status Status `json:"status,omitempty"`
	// RateHint suggests events per agent per minute (0: none).
	RateHint int64 `json:"rate_hint,omitzero"`
	// MaxPayloadHint suggests a payload size limit in bytes (0: none).
	MaxPayloadHint int64 `json:"max_payload_hint,omitzero"`
	// Extra is opaque extension data.
	Extra jsontext.Value `json:"extra,omitzero"`

	schema *typeschema.Schema // set by every constructor in this package
}

// AllowedRoles returns Roles, or the kind's default when Roles is nil.
func (d *Definition) AllowedRoles() []Role {
	if d.Roles != nil {
		return d.Roles
	}
	return DefaultRoles(d.Kind)
}

// Allows reports whether a member with role r may send this type. The
// room creator passes every role check (§14); that is the caller's rule.
func (d *Definition) Allows(r Role) bool {
	return slices.Contains(d.AllowedRoles(), r)
}

// Import is a pack import (§13.5): a registered pack by Use, or an external
// pack by Pack URI and Digest over its raw bytes.
type Import struct {
	// Use names a registered pack, such as "adp:deliberation/1.0".
	Use string `json:"use,omitempty"`
	// Pack is the URI of an external pack document.
	Pack string `json:"pack,omitempty"`
	// Digest is "sha256:<base64url>" over the external document's bytes.
	Digest string `json:"digest,omitempty"`
	// Types, when set, imports only these types of the pack.
	Types []string `json:"types,omitempty"`
	// Overrides adjusts imported types by name. Kind and schema are not
	// overridable, so Override has no such fields.
	Overrides map[string]Override `json:"overrides,omitempty"`
}

// Override adjusts one imported type (§13.5). Zero fields keep the pack's
// value; Instructions is a pointer so that "" can clear it.
type Override struct {
	Roles          []Role  `json:"roles,omitempty"`
	Instructions   *string `json:"instructions,omitzero"`
	Status         Status  `json:"status,omitempty"`
	RateHint       int64   `json:"rate_hint,omitzero"`
	MaxPayloadHint int64   `json:"max_payload_hint,omitzero"`
}

// Declaration is one element of room.create.payload.types or the payload
// of a type.define event (§13.4): exactly one of an inline Definition or a
// pack Import.
//
// Its JSON methods parse strictly (see ParseDeclaration), so a Declaration
// can sit in a payload struct decoded with json v2.
type Declaration struct {
	Definition *Definition
	Import     *Import
}

// ParseDeclaration parses one type declaration strictly: strict JSON
// (internal/strictjson), the closed typeDef or packImport shape of the
// kernel schema, and for an inline definition a self-contained 2020-12
// schema that passes the default quotas (MaxSchemaBytes and the cost
// bounds). Failures are invalid_event, structural ones with a
// *SchemaError, except a pattern Go's RE2 cannot evaluate, which is
// schema_unsupported (ErrSchemaUnsupported).
//
// Whether a pack resolves, a subset or override names imported types, a
// redefinition keeps its kind and the room stays within MaxDefinitions are
// registry questions, answered by Registry.Declare.
func ParseDeclaration(b []byte) (Declaration, error) {
	return DefaultDraft.ParseDeclaration(b)
}

// ParseDeclaration is [ParseDeclaration] under the draft's kernel schema,
// type names and type schema rules.
func (d Draft) ParseDeclaration(b []byte) (Declaration, error) {
	return parseDeclaration(b, defaultCache, d.limits())
}

// ParseDeclarations parses a JSON array of declarations, such as
// room.create.payload.types.
func ParseDeclarations(b []byte) ([]Declaration, error) {
	return DefaultDraft.ParseDeclarations(b)
}

// ParseDeclarations is [ParseDeclarations] in the draft.
func (draft Draft) ParseDeclarations(b []byte) ([]Declaration, error) {
	if err := strictjson.Validate(b); err != nil {
		return nil, identity.Wrap(identity.CodeInvalidEvent, "types", err)
	}
	d := strictjson.NewDecoder(b)
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, invalidEvent("types must be a JSON array")
	}
	var out []Declaration
	for i := 0; d.PeekKind() != ']'; i++ {
		v, err := d.ReadValue()
		if err != nil {
			return nil, identity.Wrap(identity.CodeInvalidEvent, "types", err)
		}
		decl, err := draft.ParseDeclaration(v)
		if err != nil {
			return nil, withContext(err, fmt.Sprintf("types[%d]", i))
		}
		out = append(out, decl)
	}
	return out, nil
}

// MarshalJSON encodes the declaration as its typeDef or packImport object.
func (d Declaration) MarshalJSON() ([]byte, error) {
	switch {
	case d.Definition != nil && d.Import == nil:
		return json.Marshal(d.Definition, json.Deterministic(true))
	case d.Import != nil && d.Definition == nil:
		return json.Marshal(d.Import, json.Deterministic(true))
	}
	return nil, errors.New("packs: a Declaration needs exactly one of Definition and Import")
}

// UnmarshalJSON parses like ParseDeclaration.
func (d *Declaration) UnmarshalJSON(b []byte) error {
	decl, err := ParseDeclaration(b)
	if err != nil {
		return err
	}
	*d = decl
	return nil
}

func parseDeclaration(b []byte, cache *SchemaCache, lim limits) (Declaration, error) {
	p := typeschema.GetDecoder(len(b))
	defer typeschema.PutDecoder(p, len(b))
	if _, err := p.Decode(b, &p.Tape, definitionOpaque()); err != nil {
		return Declaration{}, identity.Wrap(identity.CodeInvalidEvent, "type declaration", err)
	}
	return parseDeclarationAt(&p.Tape, 0, cache, lim)
}

// The typed decoding of a payload holding declarations (room.create's
// types) parses each one from the payload's own parse, as UnmarshalJSON
// would from its bytes, under the draft the payload is read in (the
// tape's Context; the default draft without one).
func init() {
	typedjson.Register(func(t *typedjson.Tape, i int, d *Declaration) error {
		lim := defaultLimits
		if l, ok := t.Context.(*limits); ok {
			lim = *l
		}
		decl, err := parseDeclarationAt(t, i, defaultCache, lim)
		if err != nil {
			return err
		}
		*d = decl
		return nil
	})
}

// definitionOpaque is the members a definition keeps as bytes (schema,
// extra): a declaration's tape need not record their contents. An
// import has no such members, and a declaration of either shape is read
// with them.
var definitionOpaque = sync.OnceValue(func() []string {
	return typedjson.OpaqueMembers(reflect.TypeFor[Definition]())
})

// parseDeclarationAt is parseDeclaration of the value at node i of a
// strict parse's tape: the tree the kernel schema evaluates and the typed
// struct both come from that one parse.
func parseDeclarationAt(t *typedjson.Tape, i int, cache *SchemaCache, lim limits) (Declaration, error) {
	obj, ok := t.Nodes[i].Val.(map[string]any)
	if !ok {
		return Declaration{}, invalidEvent("type declaration must be a JSON object")
	}
	if !isImport(obj) {
		def, err := parseDefinitionAt(t, i, cache, lim)
		return Declaration{Definition: def}, err
	}
	if se := lim.draft.kernel().packImport.Validate(obj); se != nil {
		return Declaration{}, schemaErr(identity.CodeInvalidEvent, "invalid pack import", se)
	}
	imp := new(Import)
	if err := typedjson.DecodeAt(t, i, imp); err != nil {
		return Declaration{}, identity.Wrap(identity.CodeInvalidEvent, "pack import", err)
	}
	if imp.Use == "" { // the pack form (the kernel schema admits exactly one)
		if u, err := url.Parse(imp.Pack); err != nil || !u.IsAbs() || u.Host == "" {
			return Declaration{}, invalidEvent("pack %q is not an absolute URI", clip(imp.Pack))
		}
	}
	return Declaration{Import: imp}, nil
}

// isImport tells the two declaration shapes apart so that errors come from
// the intended one rather than from a oneOf over both.
func isImport(obj map[string]any) bool {
	for _, k := range [...]string{"use", "pack", "digest"} {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	for _, k := range [...]string{"type", "kind", "title", "schema"} {
		if _, ok := obj[k]; ok {
			return false
		}
	}
	_, t := obj["types"]
	_, o := obj["overrides"]
	return t || o
}

// parseDefinition validates a typeDef object given as strict JSON and
// compiles its schema.
func parseDefinition(b []byte, cache *SchemaCache, lim limits) (*Definition, error) {
	p := typeschema.GetDecoder(len(b))
	defer typeschema.PutDecoder(p, len(b))
	if _, err := p.Decode(b, &p.Tape, definitionOpaque()); err != nil {
		return nil, identity.Wrap(identity.CodeInvalidEvent, "type definition", err)
	}
	return parseDefinitionAt(&p.Tape, 0, cache, lim)
}

// parseDefinitionAt is parseDefinition of the value at node i of a tape.
func parseDefinitionAt(t *typedjson.Tape, i int, cache *SchemaCache, lim limits) (*Definition, error) {
	v := t.Nodes[i].Val
	if obj, ok := v.(map[string]any); ok {
		if name, ok := obj["type"].(string); ok && !lim.draft.ValidTypeName(name) {
			return nil, invalidEvent("type name %q is not dotted lowercase, or is reserved (%s, built-in)", clip(name), strings.Join(lim.draft.rules().reserved, ", "))
		}
	}
	if se := lim.draft.kernel().typeDef.Validate(v); se != nil {
		return nil, schemaErr(identity.CodeInvalidEvent, "invalid type definition", se)
	}
	def := new(Definition)
	if err := typedjson.DecodeAt(t, i, def); err != nil {
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

// withContext prefixes an *identity.Error's message, keeping its code.
func withContext(err error, context string) error {
	return recode(err, "", context)
}

// recode re-labels err with code (when not "") and a context prefix,
// keeping its Data and cause but not the original *identity.Error itself,
// so errors.Is sees only the new code.
func recode(err error, code identity.Code, context string) error {
	var ie *identity.Error
	if !errors.As(err, &ie) {
		if code == "" {
			code = identity.CodeInvalidEvent
		}
		return identity.Wrap(code, context, err)
	}
	out := *ie
	if code != "" {
		out.Code = code
	}
	if context != "" {
		out.Message = context + ": " + out.Message
	}
	return &out
}

package packs

import (
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/typeschema"
)

// The type-schema engine (admission under the quotas and the type schema
// profile, the compiled-schema cache, the strict decoder payloads are
// validated on) is internal/typeschema; this file holds what packs exposes
// of it and the draft's choice of its rules.

// MaxSchemaBytes is the default bound on a type schema, measured on its
// RFC 8785 canonical form so that whitespace neither helps nor hurts
// (§13.3, §21).
const MaxSchemaBytes = typeschema.MaxSchemaBytes

// Draft202012 is the only $schema a type schema may name (§13.3).
const Draft202012 = typeschema.Draft202012

// DefaultCacheBytes is the default budget of a SchemaCache: the estimated
// heap its compiled schemas hold. Every room importing a registered pack
// shares its entries, so the working set is the distinct schemas in use,
// not the number of rooms. A schema at the default limits is estimated at
// most about 25 MiB, so the default keeps at least two of the largest, and
// hundreds of typical ones: a registered pack's schema is estimated at
// 30–110 KiB.
const DefaultCacheBytes = typeschema.DefaultCacheBytes

// MaxEvaluationsPerLocation is the default bound on how many times a type
// schema may evaluate subschemas against one location of a payload,
// whatever the payload. It keeps validation linear in payload size (§13.3
// lets a host refuse schemas too costly to evaluate; §22 asks it to bound
// the cost). The registered packs need at most 16.
const MaxEvaluationsPerLocation = typeschema.MaxEvaluationsPerLocation

// MaxPatternInsts is the default bound on the compiled RE2 programs of the
// patterns that can apply to one payload location, in instructions, summed
// over pattern, patternProperties and propertyNames. RE2 matches in time
// linear in the input times the program size, so 1,000 instructions cost
// at most about 20 µs per payload byte; the largest registered pattern
// compiles to 57 instructions.
const MaxPatternInsts = typeschema.MaxPatternInsts

// MaxSchemaDepth is the default bound on the JSON nesting depth of a type
// schema (objects and arrays); the registered packs nest at most 7 levels.
const MaxSchemaDepth = typeschema.MaxSchemaDepth

// SchemaError locates the first failing JSON Schema keyword. It is the Err
// of payload_schema_violation errors and of invalid_event errors raised by
// schema checks, and its JSON form is their Data, so a host can return the
// location to the client unchanged.
type SchemaError = typeschema.SchemaError

// limits are the host quotas a type schema is admitted under (see
// Options), and the draft whose rules admit it.
type limits struct {
	typeschema.Limits       // Profile is the draft's
	draft             Draft // never zero
}

var defaultLimits = limits{typeschema.DefaultLimits, DefaultDraft}

// limits returns the default quotas under d's rules.
func (d Draft) limits() limits { return draftLimits[d.index()] }

// draftLimits holds each draft's default limits, so that a pointer to one
// costs no allocation.
var draftLimits = func() (out [len(typeRules)]limits) {
	for i := range out {
		out[i] = defaultLimits
		out[i].draft = Draft(i).OrDefault()
		out[i].Profile = out[i].draft.rules().profile
	}
	return out
}()

// conflict is the error for a declaration conflict (§12.4): type_conflict
// in a draft that names it, invalid_event in the seed.
func (lim limits) conflict(format string, args ...any) *identity.Error {
	if lim.draft.rules().conflicts {
		return identity.Errorf(CodeTypeConflict, format, args...)
	}
	return invalidEvent(format, args...)
}

// SchemaCache holds compiled type schemas keyed by the SHA3-256 of their
// canonical JSON and the quotas they were admitted under, evicting the
// least recently used once their estimated heap exceeds its budget. It is
// safe for concurrent use; compiled schemas stay valid after eviction for
// anyone holding them.
type SchemaCache struct{ c *typeschema.Cache }

// NewSchemaCache returns a cache whose compiled schemas hold an estimated
// maxBytes of heap at most (DefaultCacheBytes when maxBytes ≤ 0). A schema
// estimated larger than the whole budget is compiled but not kept.
func NewSchemaCache(maxBytes int64) *SchemaCache {
	return &SchemaCache{typeschema.NewCache(maxBytes)}
}

// Len returns the number of cached schemas.
func (c *SchemaCache) Len() int { return c.c.Len() }

// Bytes returns the estimated heap the cached schemas hold.
func (c *SchemaCache) Bytes() int64 { return c.c.Bytes() }

var defaultCache = NewSchemaCache(DefaultCacheBytes)

// compile checks and compiles an untrusted type schema under lim (see
// typeschema.Cache.Compile).
func (c *SchemaCache) compile(raw []byte, lim limits) (*typeschema.Schema, []byte, error) {
	return c.c.Compile(raw, lim.Limits)
}

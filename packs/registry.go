package packs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/typeschema"
	"github.com/go-json-experiment/json"
)

// MaxDefinitions is the default bound on the types one room may define
// (§21). It counts distinct type names: a redefinition replaces a type, it
// does not add one.
const MaxDefinitions = 64

// Options configures a Registry. The zero value (or nil) refuses external
// packs, uses the shared schema cache and the default quotas, which mirror
// the SDK host's.
//
// The quotas are the host's (§21, §22): a host sets them to its own, and
// an offline verifier to those of the host whose room it replays. They
// apply to inline definitions and external packs; the registered packs,
// embedded and fixed, are admitted under the defaults.
type Options struct {
	// Draft is the draft whose type system the registry follows: kernel
	// schemas, registered packs, type names, digest algorithms, the type
	// schema profile and the conflict rules. The zero value is the
	// default draft.
	Draft Draft
	// Fetcher resolves external packs. nil refuses them with
	// pack_unavailable, so replaying a room never touches the network
	// unless the caller asks: hosts pass an *HTTPSFetcher, archive
	// verifiers a StaticFetcher over the archived documents.
	Fetcher Fetcher
	// Cache holds compiled schemas; nil uses a process-wide cache of
	// DefaultCacheBytes.
	Cache *SchemaCache

	// MaxSchemaBytes bounds each type schema in canonical form; 0 means
	// the package's MaxSchemaBytes.
	MaxSchemaBytes int
	// MaxDefinitions bounds the distinct types of a room; 0 means the
	// package's MaxDefinitions.
	MaxDefinitions int
	// MaxSchemaDepth bounds the JSON nesting depth of each type schema; 0
	// means the package's MaxSchemaDepth.
	MaxSchemaDepth int
	// MaxEvaluationsPerLocation bounds the subschema evaluations a schema
	// may cause at one payload location; 0 means the package's
	// MaxEvaluationsPerLocation.
	MaxEvaluationsPerLocation int
	// MaxPatternInsts bounds the RE2 program size of the patterns that
	// can apply to one payload location; 0 means the package's
	// MaxPatternInsts.
	MaxPatternInsts int
}

// limits returns the schema quotas o sets, defaults filled in.
func (o *Options) limits() limits {
	lim := defaultLimits
	if o == nil {
		return lim
	}
	lim.draft = o.Draft.OrDefault()
	lim.Profile = lim.draft.Known() && lim.draft.rules().profile
	if o.MaxSchemaBytes > 0 {
		lim.SchemaBytes = o.MaxSchemaBytes
	}
	if o.MaxSchemaDepth > 0 {
		lim.Depth = o.MaxSchemaDepth
	}
	if o.MaxEvaluationsPerLocation > 0 {
		lim.Evaluations = o.MaxEvaluationsPerLocation
	}
	if o.MaxPatternInsts > 0 {
		lim.PatternInsts = o.MaxPatternInsts
	}
	return lim
}

// Registry is a room's type registry (§13): the materialized definitions
// in force, each with the record seq that established it, and the external
// pack documents imported along the way. A record is checked against the
// registry as replay reaches it, so no history of replaced definitions is
// kept. The zero value is an empty registry with default Options.
//
// A Registry is not safe for concurrent mutation. Its read methods —
// Lookup, Validate, Definitions, Documents, Len, Snapshot and Clone — may
// run in any number of goroutines at once as long as no Declare runs;
// validation never mutates anything.
type Registry struct {
	fetcher Fetcher
	cache   *SchemaCache
	lim     limits
	maxDefs int
	current map[string]Entry // the definition in force, per type
	order   []string         // type names in first-declaration order
	docs    []PackDocument
	last    int64 // seq of the latest Declare
}

// Entry is a definition in force and the record seq of the declaration
// (room.create or type.define) that established it.
type Entry struct {
	Seq        int64       `json:"seq"`        // record seq of the declaring event
	Definition *Definition `json:"definition"` // shared, do not modify
}

// Snapshot is a Registry's persistent form. Encode it with json v2; decode
// it strictly (RejectUnknownMembers) and pass it to Restore, which
// re-checks every entry and document.
type Snapshot struct {
	Entries   []Entry        `json:"entries"`             // the definitions in force, in first-declaration order
	Documents []PackDocument `json:"documents,omitempty"` // external pack documents
}

// NewRegistry returns an empty registry.
func NewRegistry(opts *Options) *Registry {
	r := &Registry{lim: opts.limits(), maxDefs: MaxDefinitions}
	if opts != nil {
		r.fetcher, r.cache = opts.Fetcher, opts.Cache
		if opts.MaxDefinitions > 0 {
			r.maxDefs = opts.MaxDefinitions
		}
	}
	return r
}

// Draft returns the draft whose type system the registry follows.
func (r *Registry) Draft() Draft { return r.lim.draft.OrDefault() }

// init gives a zero Registry its defaults.
func (r *Registry) init() {
	if r.maxDefs == 0 {
		r.lim, r.maxDefs = defaultLimits, MaxDefinitions
	}
}

func (r *Registry) schemaCache() *SchemaCache {
	if r.cache == nil {
		return defaultCache
	}
	return r.cache
}

// Declare applies the declarations of the record at seq — all of
// room.create.payload.types, or one type.define payload — atomically: if
// any is invalid, none is applied. Declarations apply in order, so a later
// one may redefine an earlier one, keeping its kind (§13.4). seq must not
// be smaller than that of an earlier Declare. ctx bounds external pack
// fetches and must not be nil.
//
// Errors: pack_unavailable when a pack cannot be resolved, fetched,
// verified against its digest or parsed; invalid_event for anything else —
// a malformed declaration, a subset or override naming a type the import
// lacks, a kind change, a schema that is not self-contained or is over
// the schema size limit, more than the type limit (see Options). A pattern
// that Go's RE2 cannot evaluate is schema_unsupported (ErrSchemaUnsupported).
func (r *Registry) Declare(ctx context.Context, seq int64, decls ...Declaration) error {
	r.init()
	if seq < 1 {
		return invalidEvent("declaration seq %d is not positive", seq)
	}
	if seq < r.last {
		return invalidEvent("declaration at seq %d cannot follow seq %d", seq, r.last)
	}
	next := r.Clone()
	// Names declared by this record: in a draft with conflict rules, one
	// declaration list never names a type twice (§12.4).
	var declared map[string]bool
	if r.lim.draft.rules().conflicts {
		declared = map[string]bool{}
	}
	for i, d := range decls {
		defs, doc, err := next.resolve(ctx, d)
		if err == nil {
			for _, def := range defs {
				if declared != nil {
					if declared[def.Type] {
						err = r.lim.conflict("type %q is declared twice in one declaration list", def.Type)
						break
					}
					declared[def.Type] = true
				}
				if err = next.put(seq, def); err != nil {
					break
				}
			}
		}
		if err != nil {
			if len(decls) > 1 {
				err = withContext(err, fmt.Sprintf("types[%d]", i))
			}
			return err
		}
		if doc != nil {
			next.docs = append(next.docs, *doc)
		}
	}
	next.last = seq
	*r = *next
	return nil
}

// resolve turns one declaration into the definitions it materializes, plus
// the external document it newly imported, if any.
func (r *Registry) resolve(ctx context.Context, d Declaration) ([]*Definition, *PackDocument, error) {
	// Re-parse the JSON form so a Declaration built in Go meets exactly the
	// rules of one parsed from an event.
	b, err := d.MarshalJSON()
	if err != nil {
		return nil, nil, invalidEvent("type declaration: %v", err)
	}
	pd, err := parseDeclaration(b, r.schemaCache(), r.lim)
	if err != nil {
		return nil, nil, err
	}
	if pd.Definition != nil {
		def := *pd.Definition
		if def.Status == "" {
			def.Status = StatusActive
		}
		return []*Definition{&def}, nil, nil
	}

	imp := pd.Import
	var (
		all  []*Definition
		doc  *PackDocument
		name string
	)
	if imp.Use != "" {
		p, ok := r.lim.draft.registered().packs[imp.Use]
		if !ok {
			return nil, nil, packUnavailable("registered pack %q is not known", clip(imp.Use))
		}
		all, name = p.Types, imp.Use
	} else {
		var raw []byte
		if raw, doc, err = r.fetch(ctx, imp.Pack, imp.Digest); err != nil {
			return nil, nil, err
		}
		ps, err := parsePackDocument(raw, r.schemaCache(), r.lim)
		if errors.Is(err, ErrSchemaUnsupported) {
			return nil, nil, withContext(err, "pack "+clip(imp.Pack))
		}
		if err != nil {
			return nil, nil, recode(err, CodePackUnavailable, "pack "+clip(imp.Pack))
		}
		for _, p := range ps {
			all = append(all, p.Types...)
		}
		name = clip(imp.Pack)
	}

	selected := all
	if imp.Types != nil {
		selected = nil
		for _, t := range imp.Types {
			if !slices.ContainsFunc(all, func(d *Definition) bool { return d.Type == t }) {
				return nil, nil, r.lim.conflict("pack %s has no type %q", name, t)
			}
		}
		for _, d := range all {
			if slices.Contains(imp.Types, d.Type) {
				selected = append(selected, d)
			}
		}
	}
	for _, t := range slices.Sorted(maps.Keys(imp.Overrides)) {
		if !slices.ContainsFunc(selected, func(d *Definition) bool { return d.Type == t }) {
			return nil, nil, r.lim.conflict("override for %q, which the import of %s does not include", t, name)
		}
	}
	out := make([]*Definition, 0, len(selected))
	for _, d := range selected {
		def := *d
		if def.Status == "" {
			def.Status = StatusActive
		}
		if o, ok := imp.Overrides[def.Type]; ok {
			if o.Roles != nil {
				def.Roles = slices.Clone(o.Roles)
			}
			if o.Instructions != nil {
				def.Instructions = *o.Instructions
			}
			if o.Status != "" {
				def.Status = o.Status
			}
			if o.RateHint != 0 {
				def.RateHint = o.RateHint
			}
			if o.MaxPayloadHint != 0 {
				def.MaxPayloadHint = o.MaxPayloadHint
			}
		}
		out = append(out, &def)
	}
	return out, doc, nil
}

// fetch returns an external pack's bytes: from the documents this room
// already imported (the digest pins the content), else from the Fetcher.
// doc is non-nil when the (uri, digest) pair is new to the room.
func (r *Registry) fetch(ctx context.Context, uri, digest string) ([]byte, *PackDocument, error) {
	if _, err := r.lim.draft.parseDigest(digest); err != nil {
		return nil, nil, err
	}
	for _, d := range r.docs {
		if d.Digest == digest {
			if d.Pack == uri {
				return d.Raw, nil, nil
			}
			return d.Raw, &PackDocument{Pack: uri, Digest: digest, Raw: d.Raw}, nil
		}
	}
	if r.fetcher == nil {
		return nil, nil, packUnavailable("external pack %q: no fetcher configured", clip(uri))
	}
	raw, err := r.fetcher.Fetch(ctx, uri, digest)
	if err != nil {
		return nil, nil, recode(err, CodePackUnavailable, "")
	}
	if err := r.lim.draft.VerifyDigest(raw, digest); err != nil {
		return nil, nil, err
	}
	raw = bytes.Clone(raw)
	return raw, &PackDocument{Pack: uri, Digest: digest, Raw: raw}, nil
}

// put makes def the definition in force from seq on.
func (r *Registry) put(seq int64, def *Definition) error {
	prev, ok := r.current[def.Type]
	if ok && prev.Definition.Kind != def.Kind {
		return r.lim.conflict("redefinition of %q changes its kind from %s to %s", def.Type, prev.Definition.Kind, def.Kind)
	}
	if !ok {
		if len(r.order) >= r.maxDefs {
			return invalidEvent("type %q would exceed the limit of %d types per room", def.Type, r.maxDefs)
		}
		r.order = append(r.order, def.Type)
	}
	if r.current == nil {
		r.current = make(map[string]Entry)
	}
	r.current[def.Type] = Entry{Seq: seq, Definition: def}
	return nil
}

// Lookup returns the definition of a custom type in force now, or nil.
// Built-in types are never in the registry.
func (r *Registry) Lookup(typ string) *Definition { return r.current[typ].Definition }

// Validate checks an event payload of type typ against the registry in
// force now (§13.6 steps 2 and 4): type_not_defined when the type is
// neither built in nor defined, type_disabled when its status is disabled,
// payload_schema_violation (with a *SchemaError in Err and Data) when the
// payload does not match its schema, invalid_event when the payload is not
// strict JSON. Built-in types are checked by ValidateBuiltin, so one call
// covers every event.
func (r *Registry) Validate(typ string, payload []byte) error {
	def := r.current[typ].Definition
	if def == nil {
		if d := r.lim.draft; d.IsBuiltin(typ) {
			return d.ValidateBuiltin(typ, payload)
		}
		return identity.Errorf(CodeTypeNotDefined, "type %q is not defined in this room", clip(typ))
	}
	if def.Status == StatusDisabled {
		return identity.Errorf(CodeTypeDisabled, "type %q is disabled in this room", typ)
	}
	v, err := typeschema.Decode(payload)
	if err != nil {
		return identity.Wrap(identity.CodeInvalidEvent, typ+" payload", err)
	}
	if se := def.schema.Validate(v); se != nil {
		return schemaErr(CodePayloadSchemaViolation, typ+" payload violates its schema", se)
	}
	return nil
}

// Definitions returns the definitions in force, in the order their types
// were first declared: the Room resource's types array (§16).
func (r *Registry) Definitions() []*Definition {
	out := make([]*Definition, len(r.order))
	for i, t := range r.order {
		out[i] = r.current[t].Definition
	}
	return out
}

// Documents returns the external pack documents the room imported, in
// import order, for its archive. Registered packs are not included; see
// RegisteredDocument.
func (r *Registry) Documents() []PackDocument { return slices.Clone(r.docs) }

// Len returns the number of types defined (at most the type limit).
func (r *Registry) Len() int { return len(r.order) }

// Clone returns an independent registry sharing the immutable definitions,
// cheap enough to check a write without mutating the original: clone,
// Declare on the clone, keep whichever is right.
func (r *Registry) Clone() *Registry {
	c := *r
	// Clipped slices make the next append on either side copy.
	c.order = slices.Clip(r.order)
	c.docs = slices.Clip(r.docs)
	c.current = maps.Clone(r.current)
	return &c
}

// Snapshot returns the registry's persistent form: the definitions in
// force in first-declaration order, and every imported document.
func (r *Registry) Snapshot() Snapshot {
	s := Snapshot{Entries: make([]Entry, len(r.order)), Documents: slices.Clone(r.docs)}
	for i, t := range r.order {
		s.Entries[i] = r.current[t]
	}
	return s
}

// Restore rebuilds a registry from a Snapshot, re-checking every definition
// (schema, name, limits, one entry per type), every document's digest and
// every seq. Failures are invalid_event (pack_unavailable for a document
// whose digest does not match, schema_unsupported as in Declare).
func Restore(s Snapshot, opts *Options) (*Registry, error) {
	r := NewRegistry(opts)
	for i, d := range s.Documents {
		if err := r.lim.draft.VerifyDigest(d.Raw, d.Digest); err != nil {
			return nil, withContext(err, fmt.Sprintf("snapshot documents[%d]", i))
		}
		r.docs = append(r.docs, PackDocument{Pack: d.Pack, Digest: d.Digest, Raw: bytes.Clone(d.Raw)})
	}
	for i, e := range s.Entries {
		ctx := fmt.Sprintf("snapshot entries[%d]", i)
		if e.Definition == nil {
			return nil, invalidEvent("%s: no definition", ctx)
		}
		if e.Seq < 1 {
			return nil, invalidEvent("%s: seq %d is not positive", ctx, e.Seq)
		}
		b, err := json.Marshal(e.Definition, json.Deterministic(true))
		if err != nil {
			return nil, invalidEvent("%s: %v", ctx, err)
		}
		def, err := parseDefinition(b, r.schemaCache(), r.lim)
		if err != nil {
			return nil, withContext(err, ctx)
		}
		if def.Status == "" {
			def.Status = StatusActive
		}
		if r.Lookup(def.Type) != nil {
			return nil, invalidEvent("%s: type %q appears twice", ctx, def.Type)
		}
		if err := r.put(e.Seq, def); err != nil {
			return nil, withContext(err, ctx)
		}
		r.last = max(r.last, e.Seq)
	}
	return r, nil
}

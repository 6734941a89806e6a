// Package typeschema is the type-schema engine of package packs: it admits
// an untrusted JSON Schema 2020-12 type schema under the host's quotas and
// the draft's type schema profile (ADP §13.3, 2026-09-24 draft §12.3.1),
// compiles it once into a shared byte-bounded cache, and validates payloads
// decoded by its strict single-pass decoder. Its errors carry the
// protocol's codes; package packs maps them onto declarations and rooms.
package typeschema

import (
	"container/list"
	"crypto/sha3"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxSchemaBytes is the default bound on a type schema, measured on its
// RFC 8785 canonical form so that whitespace neither helps nor hurts
// (§13.3, §21).
const MaxSchemaBytes = 16 << 10

// Draft202012 is the only $schema a type schema may name (§13.3).
const Draft202012 = "https://json-schema.org/draft/2020-12/schema"

// DefaultCacheBytes is the default budget of a Cache: the estimated
// heap its compiled schemas hold. Every room importing a registered pack
// shares its entries, so the working set is the distinct schemas in use,
// not the number of rooms. A schema at the default limits is estimated at
// most about 25 MiB (packs' TestSchemaHeapEstimate), so the default keeps at
// least two of the largest, and hundreds of typical ones: a registered
// pack's schema is estimated at 30–110 KiB.
const DefaultCacheBytes = 64 << 20

// schemaURL names every type schema inside its own private compiler. It is
// not resolvable anywhere, which is the point.
const schemaURL = "urn:agentprotocols:adp:type-schema"

// errRemoteRef is what the loader answers every request with.
var errRemoteRef = errors.New("remote and file references are not allowed")

// testLoadHook, when set by a test, observes every loader call. Nothing in a
// type schema should ever reach the loader: the reference scan refuses it
// first.
var testLoadHook func(url string)

// refuseLoader replaces the library's default FileLoader, which would read
// local files named by an untrusted file:// reference.
type refuseLoader struct{}

func (refuseLoader) Load(u string) (any, error) {
	if testLoadHook != nil {
		testLoadHook(u)
	}
	return nil, errRemoteRef
}

// Limits are the host quotas a type schema is admitted under, and whether
// the draft's type schema profile applies. Limits is comparable: a compiled
// schema is cached per canonical schema and Limits.
type Limits struct {
	SchemaBytes  int // canonical size (MaxSchemaBytes)
	Depth        int // JSON nesting (MaxSchemaDepth)
	Evaluations  int // subschema evaluations per location (MaxEvaluationsPerLocation)
	PatternInsts int // RE2 instructions per location (MaxPatternInsts)
	// Profile applies the type schema profile (2026-09-24 draft §12.3.1):
	// fragment references only, no dynamic or recursive references or
	// $vocabulary, I-Regexp patterns, and invalid_type_schema for a schema
	// it refuses. Without it a refused schema is invalid_event (the seed).
	Profile bool
}

// DefaultLimits are the default quotas under the seed's rules.
var DefaultLimits = Limits{MaxSchemaBytes, MaxSchemaDepth, MaxEvaluationsPerLocation, MaxPatternInsts, false}

// schemaCode is the code of a type schema the draft refuses:
// invalid_type_schema where the type schema profile names it (§12.3.1),
// invalid_event in the seed.
func (lim Limits) schemaCode() identity.Code {
	if lim.Profile {
		return CodeInvalidTypeSchema
	}
	return identity.CodeInvalidEvent
}

// Schema is an immutable compiled schema; Validate is safe for concurrent
// use.
type Schema struct {
	s    *jsonschema.Schema
	key  cacheKey
	size int64 // estimated heap held, for the cache budget
}

// Validate checks a decoded instance (see Decode) and returns the first
// failing keyword, or nil.
func (c *Schema) Validate(v any) *SchemaError {
	err := c.s.Validate(v)
	if err == nil {
		return nil
	}
	return toSchemaError(err)
}

// Size returns the heap the compiled schema is estimated to hold, which
// the cache budgets; 0 for a trusted schema (CompileTrusted).
func (c *Schema) Size() int64 { return c.size }

// CompileTrusted compiles the definitions a caller names of a trusted
// embedded schema document (the kernel schemas), decoded by Decode and
// named by url, without the admission checks. It refuses every remote
// reference as Compile does.
func CompileTrusted(url string, doc any) (func(ref string) (*Schema, error), error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return func(ref string) (*Schema, error) {
		s, err := c.Compile(ref)
		if err != nil {
			return nil, err
		}
		return &Schema{s: s}, nil
	}, nil
}

// cacheKey identifies a compiled schema: the SHA3-256 of its canonical
// JSON, and the limits it was admitted under, so that a schema admitted by
// a lenient registry is never handed to a strict one.
type cacheKey struct {
	sum [32]byte
	lim Limits
}

// Cache holds compiled type schemas keyed by the SHA3-256 of their
// canonical JSON, evicting the least recently used once their estimated
// heap exceeds its budget. It is safe for concurrent use; compiled
// schemas stay valid after eviction for anyone holding them.
type Cache struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	ll    *list.List // of *Schema, most recent first
	items map[cacheKey]*list.Element
}

// NewCache returns a cache whose compiled schemas hold an estimated
// maxBytes of heap at most (DefaultCacheBytes when maxBytes ≤ 0). A schema
// estimated larger than the whole budget is compiled but not kept.
func NewCache(maxBytes int64) *Cache {
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	return &Cache{max: maxBytes, ll: list.New(), items: make(map[cacheKey]*list.Element)}
}

// Len returns the number of cached schemas.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// Bytes returns the estimated heap the cached schemas hold.
func (c *Cache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

func (c *Cache) get(k cacheKey) *Schema {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*Schema)
	}
	return nil
}

func (c *Cache) put(cs *Schema) *Schema {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[cs.key]; ok { // lost a compile race: keep the first
		c.ll.MoveToFront(e)
		return e.Value.(*Schema)
	}
	if cs.size > c.max {
		return cs
	}
	c.items[cs.key] = c.ll.PushFront(cs)
	c.bytes += cs.size
	for c.bytes > c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		o := old.Value.(*Schema)
		delete(c.items, o.key)
		c.bytes -= o.size
	}
	return cs
}

// Compile checks and compiles an untrusted type schema given as strict
// JSON. It returns the compiled schema, shared with every caller of the
// same canonical schema and Limits, and the canonical bytes. A failure is
// invalid_event (a bad schema makes the declaration carrying it invalid),
// invalid_type_schema in its place under the profile, or
// schema_unsupported for a pattern Go's RE2 cannot evaluate.
func (c *Cache) Compile(raw []byte, lim Limits) (*Schema, []byte, error) {
	cs, canon, err := c.admit(raw, lim)
	if err != nil && lim.schemaCode() != identity.CodeInvalidEvent {
		// A draft with the type schema profile names the code for a
		// schema it refuses (§12.3.1, §19); the SDK-only
		// schema_unsupported stays what it is.
		var ie *identity.Error
		if errors.As(err, &ie) && ie.Code == identity.CodeInvalidEvent {
			out := *ie
			out.Code = lim.schemaCode()
			err = &out
		}
	}
	return cs, canon, err
}

// admit is Compile under the seed's codes.
func (c *Cache) admit(raw []byte, lim Limits) (*Schema, []byte, error) {
	if err := strictjson.Validate(raw); err != nil {
		return nil, nil, identity.Wrap(identity.CodeInvalidEvent, "type schema", err)
	}
	canon, err := strictjson.Canonicalize(raw)
	if err != nil {
		return nil, nil, identity.Wrap(identity.CodeInvalidEvent, "type schema", err)
	}
	if len(canon) > lim.SchemaBytes {
		return nil, nil, invalidEvent("type schema is %d bytes, more than the %d-byte limit", len(canon), lim.SchemaBytes)
	}
	key := cacheKey{sha3.Sum256(canon), lim}
	if cs := c.get(key); cs != nil {
		return cs, canon, nil
	}
	doc, err := Decode(canon)
	if err != nil {
		return nil, nil, identity.Wrap(identity.CodeInvalidEvent, "type schema", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, nil, invalidEvent("type schema must be a JSON object")
	}
	a, err := analyzeSchema(doc, lim)
	if err != nil {
		return nil, nil, err
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.UseLoader(refuseLoader{})
	// The library compiles each pattern through this engine, so it gets
	// the programs the analysis admitted, compiled once.
	comp.UseRegexpEngine(func(p string) (jsonschema.Regexp, error) {
		if re, ok := a.patterns[p]; ok {
			return re, nil
		}
		cp, err := compilePattern(p, lim.PatternInsts)
		if err != nil {
			return nil, err
		}
		return cp.re, nil
	})
	if err := comp.AddResource(schemaURL, doc); err != nil {
		return nil, nil, invalidEvent("type schema: %s", clip(err.Error()))
	}
	s, err := comp.Compile(schemaURL)
	if err != nil {
		// The library does not wrap its regexp engine's error.
		var rx *jsonschema.InvalidRegexError
		var ie *identity.Error
		if errors.As(err, &rx) && errors.As(rx.Err, &ie) {
			return nil, nil, ie
		}
		return nil, nil, invalidEvent("type schema does not compile: %s", clip(compileMessage(err)))
	}
	return c.put(&Schema{s: s, key: key, size: a.heapEstimate(len(canon))}), canon, nil
}

// compileMessage unwraps the library's error, whose LoadURLError has no
// Unwrap, into something a client can act on.
func compileMessage(err error) string {
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) {
		return fmt.Sprintf("reference %q cannot be resolved: %v", le.URL, le.Err)
	}
	return strings.ReplaceAll(err.Error(), schemaURL, "")
}

// toSchemaError picks the first leaf of the library's error tree: the
// deepest, most specific failure, in document order.
func toSchemaError(err error) *SchemaError {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &SchemaError{Message: err.Error()}
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := jsonPointer(ve.InstanceLocation)
	kw := ""
	if _, frag, ok := strings.Cut(ve.SchemaURL, "#"); ok {
		kw = frag
	}
	kw += jsonPointer(ve.ErrorKind.KeywordPath())
	msg := ve.Error()
	// The library formats a leaf as "at '<pointer>': <message>".
	if m, ok := strings.CutPrefix(msg, "at "+libQuote(loc)+": "); ok {
		msg = m
	}
	return &SchemaError{InstanceLocation: loc, KeywordLocation: kw, Message: clip(msg)}
}

// The JSON Pointer (RFC 6901) helpers of this package.

// jsonPointer joins reference tokens into a pointer.
func jsonPointer(tokens []string) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		sb.WriteString(escapePointer(t))
	}
	return sb.String()
}

// escapePointer escapes one reference token.
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// resolvePointer returns the value at ptr in doc and ptr in the form
// jsonPointer builds, or ok false when nothing is there. It reads array
// indexes as the schema library does (strconv.Atoi, so "+0" and "00" name
// element 0), so that the cost analysis follows every reference the
// library follows.
func resolvePointer(doc any, ptr string) (v any, canonical string, ok bool) {
	if ptr == "" {
		return doc, "", true
	}
	if ptr[0] != '/' {
		return nil, "", false
	}
	v = doc
	var toks []string
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			if v, ok = x[tok]; !ok {
				return nil, "", false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, "", false
			}
			v, tok = x[i], strconv.Itoa(i)
		default:
			return nil, "", false
		}
		toks = append(toks, tok)
	}
	return v, jsonPointer(toks), true
}

// libQuote reproduces the library's quote helper so its prefix can be cut.
func libQuote(s string) string {
	s = strconv.Quote(s)
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s[1:len(s)-1] + "'"
}

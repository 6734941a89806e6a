package packs

import (
	"bytes"
	"container/list"
	"crypto/sha3"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/internal/typedjson"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxSchemaBytes is the default bound on a type schema, measured on its
// RFC 8785 canonical form so that whitespace neither helps nor hurts
// (§13.3, §21).
const MaxSchemaBytes = 16 << 10

// Draft202012 is the only $schema a type schema may name (§13.3).
const Draft202012 = "https://json-schema.org/draft/2020-12/schema"

// DefaultCacheBytes is the default budget of a SchemaCache: the estimated
// heap its compiled schemas hold. Every room importing a registered pack
// shares its entries, so the working set is the distinct schemas in use,
// not the number of rooms. A schema at the default limits is estimated at
// most about 25 MiB (TestSchemaHeapEstimate), so the default keeps at
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

// limits are the host quotas a type schema is admitted under (see
// Options), and the draft whose rules admit it.
type limits struct {
	schemaBytes  int
	depth        int
	evaluations  int
	patternInsts int
	draft        Draft // never zero
}

var defaultLimits = limits{MaxSchemaBytes, MaxSchemaDepth, MaxEvaluationsPerLocation, MaxPatternInsts, DefaultDraft}

// limits returns the default quotas under d's rules.
func (d Draft) limits() limits { return draftLimits[d.index()] }

// draftLimits holds each draft's default limits, so that a pointer to one
// costs no allocation.
var draftLimits = func() (out [len(typeRules)]limits) {
	for i := range out {
		out[i] = defaultLimits
		out[i].draft = Draft(i).OrDefault()
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

// schemaCode is the code of a type schema the draft refuses:
// invalid_type_schema where the type schema profile names it (§12.3.1),
// invalid_event in the seed.
func (lim limits) schemaCode() identity.Code {
	if lim.draft.rules().profile {
		return CodeInvalidTypeSchema
	}
	return identity.CodeInvalidEvent
}

// compiledSchema is an immutable compiled schema; validate is safe for
// concurrent use.
type compiledSchema struct {
	s    *jsonschema.Schema
	key  cacheKey
	size int64 // estimated heap held, for the cache budget
}

// validate checks a decoded instance and returns the first failing keyword.
func (c *compiledSchema) validate(v any) *SchemaError {
	err := c.s.Validate(v)
	if err == nil {
		return nil
	}
	return toSchemaError(err)
}

// cacheKey identifies a compiled schema: the SHA3-256 of its canonical
// JSON, and the limits it was admitted under, so that a schema admitted by
// a lenient registry is never handed to a strict one.
type cacheKey struct {
	sum [32]byte
	lim limits
}

// SchemaCache holds compiled type schemas keyed by the SHA3-256 of their
// canonical JSON, evicting the least recently used once their estimated
// heap exceeds its budget. It is safe for concurrent use; compiled
// schemas stay valid after eviction for anyone holding them.
type SchemaCache struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	ll    *list.List // of *compiledSchema, most recent first
	items map[cacheKey]*list.Element
}

// NewSchemaCache returns a cache whose compiled schemas hold an estimated
// maxBytes of heap at most (DefaultCacheBytes when maxBytes ≤ 0). A schema
// estimated larger than the whole budget is compiled but not kept.
func NewSchemaCache(maxBytes int64) *SchemaCache {
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	return &SchemaCache{max: maxBytes, ll: list.New(), items: make(map[cacheKey]*list.Element)}
}

// Len returns the number of cached schemas.
func (c *SchemaCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// Bytes returns the estimated heap the cached schemas hold.
func (c *SchemaCache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

var defaultCache = NewSchemaCache(DefaultCacheBytes)

func (c *SchemaCache) get(k cacheKey) *compiledSchema {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*compiledSchema)
	}
	return nil
}

func (c *SchemaCache) put(cs *compiledSchema) *compiledSchema {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[cs.key]; ok { // lost a compile race: keep the first
		c.ll.MoveToFront(e)
		return e.Value.(*compiledSchema)
	}
	if cs.size > c.max {
		return cs
	}
	c.items[cs.key] = c.ll.PushFront(cs)
	c.bytes += cs.size
	for c.bytes > c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		o := old.Value.(*compiledSchema)
		delete(c.items, o.key)
		c.bytes -= o.size
	}
	return cs
}

// compile checks and compiles an untrusted type schema given as strict JSON.
// It returns the compiled schema and the canonical bytes. A failure is
// invalid_event (a bad schema makes the declaration carrying it invalid),
// or schema_unsupported for a pattern Go's RE2 cannot evaluate.
func (c *SchemaCache) compile(raw []byte, lim limits) (*compiledSchema, []byte, error) {
	cs, canon, err := c.admit(raw, lim)
	if err != nil && lim.schemaCode() != identity.CodeInvalidEvent {
		// A draft with the type schema profile names the code for a
		// schema it refuses (§12.3.1, §19); the SDK-only
		// schema_unsupported stays what it is.
		var ie *identity.Error
		if errors.As(err, &ie) && ie.Code == identity.CodeInvalidEvent {
			err = recode(err, lim.schemaCode(), "")
		}
	}
	return cs, canon, err
}

// admit is compile under the seed's codes.
func (c *SchemaCache) admit(raw []byte, lim limits) (*compiledSchema, []byte, error) {
	if err := strictjson.Validate(raw); err != nil {
		return nil, nil, identity.Wrap(identity.CodeInvalidEvent, "type schema", err)
	}
	canon, err := strictjson.Canonicalize(raw)
	if err != nil {
		return nil, nil, identity.Wrap(identity.CodeInvalidEvent, "type schema", err)
	}
	if len(canon) > lim.schemaBytes {
		return nil, nil, invalidEvent("type schema is %d bytes, more than the %d-byte limit", len(canon), lim.schemaBytes)
	}
	key := cacheKey{sha3.Sum256(canon), lim}
	if cs := c.get(key); cs != nil {
		return cs, canon, nil
	}
	doc, err := decodeJSON(canon)
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
		cp, err := compilePattern(p, lim.patternInsts)
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
	return c.put(&compiledSchema{s: s, key: key, size: a.heapEstimate(len(canon))}), canon, nil
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

// decodeJSON parses strict JSON (see internal/strictjson) into the tree the
// schema library validates: map[string]any, []any, string, float64, bool
// and nil, in a single pass.
//
// Numbers become float64 on purpose. The event hash covers the RFC 8785
// form, in which every number is an IEEE 754 double, so validating the
// double makes the verdict invariant under canonicalization; the strict
// number policy already keeps integers exact.
//
// Duplicate member names are detected on the map being built rather than
// by the decoder: the same rule (names compared after unescaping) for less
// work. FuzzValidatePayload checks decodeJSON accepts exactly what
// strictjson.Validate accepts.
func decodeJSON(b []byte) (any, error) {
	p := getDecoder(len(b))
	defer putDecoder(p, len(b))
	return p.decode(b, nil, nil)
}

// getDecoder returns a decoder for an input of n bytes: a pooled one
// unless the input is large.
func getDecoder(n int) *pooledDecoder {
	if n <= maxPooledInput {
		return decoderPool.Get().(*pooledDecoder)
	}
	return newPooledDecoder()
}

// putDecoder returns p, got for an input of n bytes, to the pool.
func putDecoder(p *pooledDecoder, n int) {
	if n > maxPooledInput {
		return
	}
	p.tape.Reset(nil, nil)
	if cap(p.tape.Nodes) > maxPooledNodes {
		p.tape.Nodes = nil
	}
	decoderPool.Put(p)
}

// decode is decodeJSON with p's decoder. With a tape it also records
// every value for the typed mapping (internal/typedjson), in the same
// pass.
func (p *pooledDecoder) decode(b []byte, tape *typedjson.Tape, opaque []string) (any, error) {
	p.r.Reset(b)
	p.d.Reset(&p.r, jsontext.AllowDuplicateNames(true))
	if tape != nil {
		tape.Reset(b, opaque)
	}
	v, err := decodeValue(p.d, tape)
	if err == nil {
		err = strictjson.End(p.d)
	}
	p.r.Reset(nil)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// maxPooledInput keeps decoders with large buffers out of the pool.
const maxPooledInput = 64 << 10

// maxPooledNodes keeps tapes of unusually many values out of the pool.
const maxPooledNodes = 4096

type pooledDecoder struct {
	r    bytes.Reader
	d    *jsontext.Decoder
	tape typedjson.Tape
}

func newPooledDecoder() *pooledDecoder {
	p := new(pooledDecoder)
	p.d = jsontext.NewDecoder(&p.r)
	return p
}

var decoderPool = sync.Pool{New: func() any { return newPooledDecoder() }}

// decodeValue decodes the next value, recording it on tape when tape is
// not nil. parseValue's loops make the same choice inline, so that a parse
// without a tape (a room-defined type's payload) pays one nil check per
// value.
func decodeValue(d *jsontext.Decoder, tape *typedjson.Tape) (any, error) {
	if tape != nil {
		return recordValue(d, tape)
	}
	return parseValue(d, nil)
}

// recordValue is parseValue with the value's node on tape.
func recordValue(d *jsontext.Decoder, tape *typedjson.Tape) (any, error) {
	at, opaque := tape.Begin(byte(d.PeekKind()), int(d.InputOffset()))
	var v any
	var err error
	if opaque { // kept as bytes by the typed value: only the tree needs it
		v, err = parseValue(d, nil)
	} else {
		tape.Enter()
		v, err = parseValue(d, tape)
		tape.Leave()
	}
	if err == nil {
		tape.End(at, int(d.InputOffset()), v)
	}
	return v, err
}

// parseValue decodes the next value, and its members and elements as
// decodeValue does.
func parseValue(d *jsontext.Decoder, tape *typedjson.Tape) (any, error) {
	kind := d.PeekKind()
	switch kind {
	case '{':
		if _, err := d.ReadToken(); err != nil {
			return nil, syntaxErr(d, err)
		}
		m := make(map[string]any)
		for d.PeekKind() != '}' {
			tok, err := d.ReadToken()
			if err != nil {
				return nil, syntaxErr(d, err)
			}
			name := tok.String()
			var v any
			if tape != nil {
				tape.Member(name)
				v, err = recordValue(d, tape)
			} else {
				v, err = parseValue(d, nil)
			}
			if err != nil {
				return nil, err
			}
			n := len(m)
			m[name] = v
			if len(m) == n { // one hash instead of a lookup plus an insert
				return nil, &strictjson.Error{Pointer: string(d.StackPointer()) + "/" + escapePointer(name), Err: fmt.Errorf("duplicate member name %q", clip(name))}
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return nil, syntaxErr(d, err)
		}
		return m, nil
	case '[':
		if _, err := d.ReadToken(); err != nil {
			return nil, syntaxErr(d, err)
		}
		a := make([]any, 0, 4)
		for d.PeekKind() != ']' {
			var v any
			var err error
			if tape != nil {
				v, err = recordValue(d, tape)
			} else {
				v, err = parseValue(d, nil)
			}
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		if _, err := d.ReadToken(); err != nil {
			return nil, syntaxErr(d, err)
		}
		return a, nil
	case '0':
		raw, err := d.ReadValue()
		if err != nil {
			return nil, syntaxErr(d, err)
		}
		if err := strictjson.CheckNumber(raw); err != nil {
			return nil, &strictjson.Error{Pointer: string(d.StackPointer()), Err: err}
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return nil, &strictjson.Error{Pointer: string(d.StackPointer()), Err: err}
		}
		return f, nil
	default: // strings, literals, and errors
		tok, err := d.ReadToken()
		if err != nil {
			return nil, syntaxErr(d, err)
		}
		var v any
		switch tok.Kind() {
		case '"':
			v = tok.String()
		case 't', 'f':
			v = tok.Bool()
		case 'n':
		default:
			return nil, &strictjson.Error{Pointer: string(d.StackPointer()), Err: fmt.Errorf("unexpected %v", tok.Kind())}
		}
		return v, nil
	}
}

func syntaxErr(d *jsontext.Decoder, err error) error {
	if err == io.EOF {
		err = strictjson.ErrEmpty
	}
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return &strictjson.Error{Pointer: string(se.JSONPointer), Err: err}
	}
	return &strictjson.Error{Pointer: string(d.StackPointer()), Err: err}
}

package packs

import (
	"bytes"
	"container/list"
	"crypto/sha3"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxSchemaBytes bounds a type schema, measured on its RFC 8785 canonical
// form so that whitespace neither helps nor hurts (§13.3, §21).
const MaxSchemaBytes = 16 << 10

// Draft202012 is the only $schema a type schema may name (§13.3).
const Draft202012 = "https://json-schema.org/draft/2020-12/schema"

// DefaultCacheSize is the number of compiled schemas the shared cache keeps.
// Every room importing a registered pack shares its entries, so the working
// set is the distinct schemas in use, not the number of rooms.
const DefaultCacheSize = 1024

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

// compiledSchema is an immutable compiled schema; Validate is safe for
// concurrent use.
type compiledSchema struct {
	s    *jsonschema.Schema
	fast *fastNode // nil when the schema is outside the fast path's subset
	sum  [32]byte  // SHA3-256 of the canonical schema
}

// validate checks a decoded instance and returns the first failing keyword.
func (c *compiledSchema) validate(v any) *SchemaError {
	if c.fast != nil && c.fast.eval(v, 0) == fastValid {
		return nil
	}
	err := c.s.Validate(v)
	if err == nil {
		return nil
	}
	return toSchemaError(err)
}

// SchemaCache holds compiled type schemas keyed by the SHA3-256 of their
// canonical JSON, evicting the least recently used beyond its size. It is
// safe for concurrent use; compiled schemas stay valid after eviction for
// anyone holding them.
type SchemaCache struct {
	mu    sync.Mutex
	max   int
	ll    *list.List // of *compiledSchema, most recent first
	items map[[32]byte]*list.Element
}

// NewSchemaCache returns a cache holding at most max compiled schemas
// (DefaultCacheSize when max ≤ 0).
func NewSchemaCache(max int) *SchemaCache {
	if max <= 0 {
		max = DefaultCacheSize
	}
	return &SchemaCache{max: max, ll: list.New(), items: make(map[[32]byte]*list.Element)}
}

// Len returns the number of cached schemas.
func (c *SchemaCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

var defaultCache = NewSchemaCache(DefaultCacheSize)

func (c *SchemaCache) get(sum [32]byte) *compiledSchema {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[sum]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*compiledSchema)
	}
	return nil
}

func (c *SchemaCache) put(cs *compiledSchema) *compiledSchema {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[cs.sum]; ok { // lost a compile race: keep the first
		c.ll.MoveToFront(e)
		return e.Value.(*compiledSchema)
	}
	c.items[cs.sum] = c.ll.PushFront(cs)
	for c.ll.Len() > c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.items, old.Value.(*compiledSchema).sum)
	}
	return cs
}

// compile checks and compiles an untrusted type schema given as strict JSON.
// It returns the compiled schema and the canonical bytes. Every failure is
// invalid_event: a bad schema makes the declaration carrying it invalid.
func (c *SchemaCache) compile(raw []byte) (*compiledSchema, []byte, error) {
	if err := strictjson.Validate(raw); err != nil {
		return nil, nil, identity.Wrap(identity.CodeInvalidEvent, "type schema", err)
	}
	canon, err := strictjson.Canonicalize(raw)
	if err != nil {
		return nil, nil, identity.Wrap(identity.CodeInvalidEvent, "type schema", err)
	}
	if len(canon) > MaxSchemaBytes {
		return nil, nil, invalidEvent("type schema is %d bytes, more than the %d-byte limit", len(canon), MaxSchemaBytes)
	}
	sum := sha3.Sum256(canon)
	if cs := c.get(sum); cs != nil {
		return cs, canon, nil
	}
	doc, err := decodeJSON(canon)
	if err != nil {
		return nil, nil, identity.Wrap(identity.CodeInvalidEvent, "type schema", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, nil, invalidEvent("type schema must be a JSON object")
	}
	if err := checkSelfContained(doc); err != nil {
		return nil, nil, err
	}
	if err := checkCost(doc); err != nil {
		return nil, nil, err
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.UseLoader(refuseLoader{})
	if err := comp.AddResource(schemaURL, doc); err != nil {
		return nil, nil, invalidEvent("type schema: %s", clip(err.Error()))
	}
	s, err := comp.Compile(schemaURL)
	if err != nil {
		return nil, nil, invalidEvent("type schema does not compile: %s", clip(compileMessage(err)))
	}
	return c.put(&compiledSchema{s: s, fast: compileFast(doc, ""), sum: sum}), canon, nil
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

// checkSelfContained enforces §13.3 before the compiler sees the schema:
//   - $schema, wherever it appears, names draft 2020-12 (the library embeds
//     older metaschemas and would silently switch dialect);
//   - every $ref / $dynamicRef resolves inside the schema: a fragment, or a
//     URI equal to a resource the schema itself declares with $id.
//
// Refusing here, not in the loader, keeps the embedded metaschemas (which
// the library resolves without asking the loader) out of reach and means a
// refused schema causes no loader call at all. The scan treats every object
// as a potential schema, so it over-approximates: a "$ref"-named string
// inside a const or enum is checked too.
func checkSelfContained(doc any) error {
	root, _ := url.Parse("https://type-schema.invalid/root.json")
	resources := map[string]bool{root.String(): true}
	type ref struct{ raw, abs string }
	var refs []ref
	var walk func(v any, base *url.URL) error
	walk = func(v any, base *url.URL) error {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := v["$schema"].(string); ok && s != Draft202012 {
				return invalidEvent("type schema $schema %q is not %s", clip(s), Draft202012)
			}
			if id, ok := v["$id"].(string); ok {
				u, err := base.Parse(id)
				if err != nil {
					return invalidEvent("type schema $id %q is not a URI reference", clip(id))
				}
				u.Fragment, u.RawFragment = "", ""
				base = u
				resources[u.String()] = true
			}
			for _, kw := range [...]string{"$ref", "$dynamicRef", "$recursiveRef"} {
				s, ok := v[kw].(string)
				if !ok {
					continue
				}
				u, err := base.Parse(s)
				if err != nil {
					return invalidEvent("type schema %s %q is not a URI reference", kw, clip(s))
				}
				if strings.HasPrefix(s, "#") {
					continue // same resource
				}
				u.Fragment, u.RawFragment = "", ""
				refs = append(refs, ref{s, u.String()})
			}
			for _, x := range v {
				if err := walk(x, base); err != nil {
					return err
				}
			}
		case []any:
			for _, x := range v {
				if err := walk(x, base); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(doc, root); err != nil {
		return err
	}
	for _, r := range refs {
		if !resources[r.abs] {
			return invalidEvent("type schema reference %q is not inside the schema (remote and file references are not allowed)", clip(r.raw))
		}
	}
	return nil
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

func jsonPointer(tokens []string) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		sb.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return sb.String()
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
	var p *pooledDecoder
	if len(b) <= maxPooledInput {
		p = decoderPool.Get().(*pooledDecoder)
		defer decoderPool.Put(p)
	} else {
		p = newPooledDecoder()
	}
	p.r.Reset(b)
	p.d.Reset(&p.r, jsontext.AllowDuplicateNames(true))
	v, err := decodeValue(p.d)
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

type pooledDecoder struct {
	r bytes.Reader
	d *jsontext.Decoder
}

func newPooledDecoder() *pooledDecoder {
	p := new(pooledDecoder)
	p.d = jsontext.NewDecoder(&p.r)
	return p
}

var decoderPool = sync.Pool{New: func() any { return newPooledDecoder() }}

func decodeValue(d *jsontext.Decoder) (any, error) {
	switch d.PeekKind() {
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
			v, err := decodeValue(d)
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
			v, err := decodeValue(d)
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
		switch tok.Kind() {
		case '"':
			return tok.String(), nil
		case 't', 'f':
			return tok.Bool(), nil
		case 'n':
			return nil, nil
		}
		return nil, &strictjson.Error{Pointer: string(d.StackPointer()), Err: fmt.Errorf("unexpected %v", tok.Kind())}
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

// Package typedjson maps a JSON value that was already parsed onto a Go
// value, with the semantics of github.com/go-json-experiment/json's
// Unmarshal under RejectUnknownMembers(true), so that a payload tokenized
// once for the schema evaluator need not be tokenized again for its typed
// view.
//
// # Tape
//
// The parser that builds the schema library's tree records, in the same
// pass, a [Tape]: one [Node] per JSON value in document order, with its
// kind, its byte span in the input, the member name it was found under,
// and the tree's value for it. The tape holds what the typed mapping needs and
// the tree lacks: whether a number was written as an integer (the tree has
// float64), and the signed bytes of members kept raw (jsontext.Value).
//
// # Mapping
//
// [Decode] walks the tape with one decoder per Go type, built by
// reflection from the struct fields and json tags and cached. It covers
// the kinds the payload types use (strings, bools, signed integers,
// structs, pointers, slices, maps with string keys, jsontext.Value, and
// types with UnmarshalJSON or UnmarshalText methods) exactly as json v2
// does: null sets the zero
// value, an empty array a non-nil empty slice, an integer must be an
// integer literal within range, unknown members are refused. Any other
// type, or a struct using tag options it does not interpret, is handed to
// json.Unmarshal with the value's own bytes, so the result never depends
// on which of the two ran (FuzzBuiltinDecode in package adp compares the
// mapping with the two-pass decode on every built-in payload type).
//
// The input must be strict JSON that the recorder accepted: the mapping
// does not re-check syntax, duplicate names or Unicode.
//
// # Concurrency
//
// Decode is safe for concurrent use; a Tape is not.
package typedjson

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// Node is one JSON value on a [Tape].
type Node struct {
	// Kind is the value's first byte class: '{', '[', '"', '0' (a
	// number), 't', 'f' or 'n'.
	Kind byte
	// Start and End delimit the value's bytes in the tape's source (the
	// strict parser's inputs are far below 2 GiB).
	Start, End int32
	// Next is the index of the first node after this value's subtree, so
	// a container's children are the nodes from its index plus one,
	// following Next. An opaque value (see Tape.Opaque) has no children
	// on the tape.
	Next int32
	// Name is the member name the value was found under, if any.
	Name string
	// Val is the value as the recorder's tree holds it (for the schema
	// library: map[string]any, []any, string, float64, bool or nil).
	Val any
}

// Tape is a strict parse recorded for [Decode]: the source and its values
// in document order. The zero value is ready for [Tape.Reset].
type Tape struct {
	Src   []byte
	Nodes []Node
	// Opaque names top-level members whose values the mapping keeps as
	// bytes (jsontext.Value fields, see [OpaqueMembers]): their subtrees
	// are not recorded, which bounds the tape of a payload whose bulk is
	// such a member (message.create's content) to a few nodes.
	Opaque []string
	// Context is what the recorder's caller tells the decoders registered
	// with [Register] about the value, such as the rules it is read
	// under; Reset clears it.
	Context any

	name   string // for the next Begin, set by Member
	depth  int    // of the value being parsed: 1 for the top level's members
	opaque bool   // the value just begun is opaque
}

// Reset empties the tape for a parse of src, keeping its capacity, with
// the given opaque members (nil for none).
func (t *Tape) Reset(src []byte, opaque []string) {
	clear(t.Nodes) // drop the values for the collector
	t.Nodes, t.Src, t.Opaque, t.Context = t.Nodes[:0], src, opaque, nil
	t.name, t.depth, t.opaque = "", 0, false
}

// Member sets the member name the next value recorded is found under.
func (t *Tape) Member(name string) { t.name = name }

// Begin records the start of a value of the given kind, where off is the
// decoder's input offset before it (the value starts after any
// whitespace, ':' or ','). It returns the node's index for [Tape.End] and
// whether the value is opaque: then the recorder parses it without
// recording its contents, else it brackets them with [Tape.Enter] and
// [Tape.Leave].
func (t *Tape) Begin(kind byte, off int) (int, bool) {
	for off < len(t.Src) && isSep(t.Src[off]) {
		off++
	}
	if len(t.Nodes) == cap(t.Nodes) {
		// Double, rather than append's 1.25× for large slices, so that a
		// tape of n nodes costs at most 2n nodes of allocation.
		t.Nodes = slices.Grow(t.Nodes, max(16, len(t.Nodes)))
	}
	t.Nodes = append(t.Nodes, Node{Kind: kind, Start: int32(off), Name: t.name})
	opaque := t.depth == 1 && t.name != "" && slices.Contains(t.Opaque, t.name) // a few names: cheaper than a map
	t.name = ""
	return len(t.Nodes) - 1, opaque
}

// Enter and Leave bracket the contents of a value that is not opaque.
func (t *Tape) Enter() { t.depth++ }

// Leave ends what Enter began.
func (t *Tape) Leave() { t.depth-- }

// End records the end offset of node i and its decoded value.
func (t *Tape) End(i, end int, val any) {
	n := &t.Nodes[i]
	n.End, n.Next, n.Val = int32(end), int32(len(t.Nodes)), val
}

// OpaqueMembers returns the JSON names of the fields of struct type t
// whose type is jsontext.Value, for [Tape.Opaque]: the mapping reads only
// their bytes. It is nil when t is not such a struct or the mapping hands
// t to json v2. The slice is shared and must not be modified.
func OpaqueMembers(t reflect.Type) []string {
	if v, ok := opaqueCache.Load(t); ok {
		return v.([]string)
	}
	var names []string
	if t.Kind() == reflect.Struct {
		for name, f := range decoderFor(t).fields {
			if t.Field(f.index).Type == jsontextValueType {
				names = append(names, name)
			}
		}
		slices.Sort(names)
	}
	opaqueCache.Store(t, names)
	return names
}

var opaqueCache sync.Map // reflect.Type → []string

func isSep(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', ':', ',':
		return true
	}
	return false
}

// Error is a failure to map a value onto its Go type.
type Error struct {
	Pointer string       // JSON Pointer (RFC 6901) to the value
	GoType  reflect.Type // the type it was to be mapped onto
	Err     error        // the cause, if any
}

// Error says what failed to map where, and why.
func (e *Error) Error() string {
	msg := "cannot map JSON value"
	if e.GoType != nil {
		msg += " onto Go " + e.GoType.String()
	}
	if e.Pointer != "" {
		msg += " at " + strconv.Quote(e.Pointer)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

var errUnknownName = errors.New("unknown object member name")

// Decode maps the tape's first value onto the value v points to, which
// must be zero. It fails with an *Error.
func Decode(t *Tape, v any) error { return DecodeAt(t, 0, v) }

// DecodeAt is Decode of the tape's node i (a value inside the first).
func DecodeAt(t *Tape, i int, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &Error{Err: errors.New("Decode needs a non-nil pointer")}
	}
	if i < 0 || i >= len(t.Nodes) {
		return &Error{GoType: rv.Type().Elem(), Err: errors.New("no such value on the tape")}
	}
	return decoderFor(rv.Type().Elem()).fn(t, i, rv.Elem())
}

// Register makes Decode map values of type T with fn, ahead of T's methods
// and of reflection; fn gets the tape and the index of the value's node
// and must decide exactly as T's UnmarshalJSON would on that value's
// bytes. It is meant for package initialization: a type holding T whose
// decoder was built before the call keeps the earlier way.
func Register[T any](fn func(t *Tape, i int, v *T) error) {
	typ := reflect.TypeFor[T]()
	buildMu.Lock()
	defer buildMu.Unlock()
	custom[typ] = func(tp *Tape, i int, v reflect.Value) error {
		if err := fn(tp, i, v.Addr().Interface().(*T)); err != nil {
			return &Error{Pointer: tp.pointer(i), GoType: typ, Err: err}
		}
		return nil
	}
}

// custom holds the registered decoders, guarded by buildMu.
var custom = map[reflect.Type]decodeFunc{}

// decodeFunc maps node i of t onto the addressable value v.
type decodeFunc func(t *Tape, i int, v reflect.Value) error

type typeDecoder struct {
	fn     decodeFunc
	fields map[string]field // a struct's, when the mapping walks it itself
}

var decoders sync.Map // reflect.Type → *typeDecoder

var (
	jsontextValueType = reflect.TypeFor[jsontext.Value]()
	unmarshalerType   = reflect.TypeFor[json.Unmarshaler]()
	unmarshalerFrom   = reflect.TypeFor[json.UnmarshalerFrom]()
	textUnmarshaler   = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decoderFor returns the cached decoder of t, building it (and the
// decoders of the types it holds) on first use. Builds are serialized and
// published only when complete, so no reader sees a decoder under
// construction; a recursive type finds its own entry in building.
func decoderFor(t reflect.Type) *typeDecoder {
	if d, ok := decoders.Load(t); ok {
		return d.(*typeDecoder)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	building := make(map[reflect.Type]*typeDecoder)
	d := builder(building).get(t)
	for bt, bd := range building {
		decoders.Store(bt, bd)
	}
	return d
}

var buildMu sync.Mutex

// builder holds the decoders of one build.
type builder map[reflect.Type]*typeDecoder

func (b builder) get(t reflect.Type) *typeDecoder {
	if d, ok := decoders.Load(t); ok {
		return d.(*typeDecoder)
	}
	if d, ok := b[t]; ok {
		return d
	}
	d := new(typeDecoder)
	b[t] = d
	d.fn, d.fields = b.build(t)
	return d
}

func (b builder) build(t reflect.Type) (decodeFunc, map[string]field) {
	if fn, ok := custom[t]; ok {
		return fn, nil
	}
	// As in json v2, methods are used on the value a pointer points to,
	// never on the pointer (which null sets to nil).
	switch {
	case t.Kind() == reflect.Pointer:
		return decodePointer(t, b.get(t.Elem())), nil
	case t == jsontextValueType:
		return decodeRaw, nil
	case implements(t, unmarshalerFrom):
		return fallback(t), nil
	case implements(t, unmarshalerType):
		return decodeUnmarshaler(t), nil
	case implements(t, textUnmarshaler):
		return decodeText(t), nil
	case t.PkgPath() == "time" && (t.Name() == "Time" || t.Name() == "Duration"):
		return fallback(t), nil // json v2 has its own formats for these
	}
	switch t.Kind() {
	case reflect.String:
		return decodeString(t), nil
	case reflect.Bool:
		return decodeBool(t), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return decodeInt(t), nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return fallback(t), nil // base64, in json v2
		}
		return decodeSlice(t, b.get(t.Elem())), nil
	case reflect.Map:
		if k := t.Key(); k.Kind() == reflect.String && !implementsAny(k) {
			return decodeMap(t, b.get(t.Elem())), nil
		}
	case reflect.Struct:
		if fn, fields := b.decodeStruct(t); fn != nil {
			return fn, fields
		}
	}
	return fallback(t), nil
}

// implements reports whether t or *t implements iface, as json v2 asks.
func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || reflect.PointerTo(t).Implements(iface)
}

// implementsAny reports whether t has any of the methods json v2 uses for
// decoding.
func implementsAny(t reflect.Type) bool {
	return implements(t, unmarshalerFrom) || implements(t, unmarshalerType) || implements(t, textUnmarshaler)
}

// fallback hands the value's own bytes to json v2, for the types the
// mapping does not interpret itself.
func fallback(t reflect.Type) decodeFunc {
	return func(tp *Tape, i int, v reflect.Value) error {
		n := &tp.Nodes[i]
		if err := json.Unmarshal(tp.Src[n.Start:n.End], v.Addr().Interface(), json.RejectUnknownMembers(true)); err != nil {
			return &Error{Pointer: tp.pointer(i), GoType: t, Err: err}
		}
		return nil
	}
}

func mismatch(tp *Tape, i int, t reflect.Type) error {
	return &Error{Pointer: tp.pointer(i), GoType: t, Err: fmt.Errorf("JSON %s", strictjson.KindName(tp.Nodes[i].Kind))}
}

func decodeRaw(tp *Tape, i int, v reflect.Value) error {
	n := &tp.Nodes[i]
	v.SetBytes(bytes.Clone(tp.Src[n.Start:n.End]))
	return nil
}

// decodeUnmarshaler calls UnmarshalJSON with the value's bytes, null
// included, as json v2 does.
func decodeUnmarshaler(t reflect.Type) decodeFunc {
	return func(tp *Tape, i int, v reflect.Value) error {
		n := &tp.Nodes[i]
		u := v.Addr().Interface().(json.Unmarshaler)
		if err := u.UnmarshalJSON(tp.Src[n.Start:n.End:n.End]); err != nil {
			return &Error{Pointer: tp.pointer(i), GoType: t, Err: err}
		}
		return nil
	}
}

// decodeText calls UnmarshalText with a string's unquoted bytes; null is
// the zero value, anything else a mismatch.
func decodeText(t reflect.Type) decodeFunc {
	return func(tp *Tape, i int, v reflect.Value) error {
		n := &tp.Nodes[i]
		switch n.Kind {
		case 'n':
			v.SetZero()
			return nil
		case '"':
			// Without escapes the string is its quoted bytes' inside: an
			// escape is always longer than what it stands for.
			str := n.Val.(string)
			var b []byte
			if inner := tp.Src[n.Start+1 : n.End-1 : n.End-1]; len(inner) == len(str) {
				b = inner
			} else {
				b = []byte(str)
			}
			if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText(b); err != nil {
				return &Error{Pointer: tp.pointer(i), GoType: t, Err: err}
			}
			return nil
		}
		return mismatch(tp, i, t)
	}
}

func decodeString(t reflect.Type) decodeFunc {
	return func(tp *Tape, i int, v reflect.Value) error {
		switch n := &tp.Nodes[i]; n.Kind {
		case 'n':
			v.SetString("")
			return nil
		case '"':
			v.SetString(n.Val.(string))
			return nil
		}
		return mismatch(tp, i, t)
	}
}

func decodeBool(t reflect.Type) decodeFunc {
	return func(tp *Tape, i int, v reflect.Value) error {
		switch tp.Nodes[i].Kind {
		case 'n', 'f':
			v.SetBool(false)
			return nil
		case 't':
			v.SetBool(true)
			return nil
		}
		return mismatch(tp, i, t)
	}
}

// decodeInt accepts what json v2 accepts: an integer literal (no fraction,
// no exponent) within the type's range.
func decodeInt(t reflect.Type) decodeFunc {
	bits := t.Bits()
	return func(tp *Tape, i int, v reflect.Value) error {
		n := &tp.Nodes[i]
		switch n.Kind {
		case 'n':
			v.SetInt(0)
			return nil
		case '0':
			lit := tp.Src[n.Start:n.End]
			neg := lit[0] == '-'
			if neg {
				lit = lit[1:]
			}
			u, ok := parseUint(lit)
			limit := uint64(1) << (bits - 1)
			if !ok {
				if u != math.MaxUint64 {
					return &Error{Pointer: tp.pointer(i), GoType: t, Err: strconv.ErrSyntax}
				}
				return &Error{Pointer: tp.pointer(i), GoType: t, Err: strconv.ErrRange}
			}
			if (neg && u > limit) || (!neg && u > limit-1) {
				return &Error{Pointer: tp.pointer(i), GoType: t, Err: strconv.ErrRange}
			}
			if neg {
				v.SetInt(int64(-u))
			} else {
				v.SetInt(int64(u))
			}
			return nil
		}
		return mismatch(tp, i, t)
	}
}

// parseUint parses digits only; ok is false for anything else, with
// u = MaxUint64 when the digits overflow.
func parseUint(b []byte) (u uint64, ok bool) {
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	for _, c := range b {
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return math.MaxUint64, false
		}
		u = u*10 + d
	}
	return u, true
}

func decodePointer(t reflect.Type, elem *typeDecoder) decodeFunc {
	return func(tp *Tape, i int, v reflect.Value) error {
		if tp.Nodes[i].Kind == 'n' {
			v.SetZero()
			return nil
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return elem.fn(tp, i, v.Elem())
	}
}

// decodeSlice maps an array onto a new slice of exactly its length ([] is
// an empty, non-nil slice, shared as json v2 shares it).
func decodeSlice(t reflect.Type, elem *typeDecoder) decodeFunc {
	empty := reflect.MakeSlice(t, 0, 0)
	return func(tp *Tape, i int, v reflect.Value) error {
		n := &tp.Nodes[i]
		switch n.Kind {
		case 'n':
			v.SetZero()
			return nil
		case '[':
			count := 0
			for j := i + 1; j < int(n.Next); j = int(tp.Nodes[j].Next) {
				count++
			}
			if count == 0 {
				v.Set(empty)
				return nil
			}
			// Grow in place allocates only the array (MakeSlice would
			// also allocate the header it returns).
			v.SetZero()
			v.Grow(count)
			v.SetLen(count)
			k := 0
			for j := i + 1; j < int(n.Next); j = int(tp.Nodes[j].Next) {
				if err := elem.fn(tp, j, v.Index(k)); err != nil {
					return err
				}
				k++
			}
			return nil
		}
		return mismatch(tp, i, t)
	}
}

// decodeMap maps an object onto a map with string keys: a new map (empty,
// not nil, for {}), each member's value decoded from zero.
func decodeMap(t reflect.Type, elem *typeDecoder) decodeFunc {
	return func(tp *Tape, i int, v reflect.Value) error {
		n := &tp.Nodes[i]
		switch n.Kind {
		case 'n':
			v.SetZero()
			return nil
		case '{':
			if v.IsNil() {
				v.Set(reflect.MakeMap(t))
			}
			for j := i + 1; j < int(n.Next); j = int(tp.Nodes[j].Next) {
				e := reflect.New(t.Elem()).Elem()
				if err := elem.fn(tp, j, e); err != nil {
					return err
				}
				v.SetMapIndex(reflect.ValueOf(tp.Nodes[j].Name).Convert(t.Key()), e)
			}
			return nil
		}
		return mismatch(tp, i, t)
	}
}

type field struct {
	index int
	dec   *typeDecoder
}

// decodeStruct returns nil for a struct whose fields use what the mapping
// does not interpret: embedded fields, tag options that change decoding,
// quoted or duplicate names.
func (b builder) decodeStruct(t reflect.Type) (decodeFunc, map[string]field) {
	fields := make(map[string]field, t.NumField())
	for k := range t.NumField() {
		sf := t.Field(k)
		tag, hasTag := sf.Tag.Lookup("json")
		if sf.Anonymous {
			return nil, nil
		}
		if !sf.IsExported() {
			if hasTag {
				return nil, nil // json v2 reports an error for these
			}
			continue
		}
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "", "omitzero", "omitempty":
			default:
				return nil, nil
			}
		}
		if name == "" {
			name = sf.Name
		}
		if strings.HasPrefix(name, "'") {
			return nil, nil
		}
		if _, dup := fields[name]; dup {
			return nil, nil
		}
		fields[name] = field{index: k}
	}
	// Field decoders after the scan, so an unsupported struct builds none.
	for name, f := range fields {
		f.dec = b.get(t.Field(f.index).Type)
		fields[name] = f
	}
	return func(tp *Tape, i int, v reflect.Value) error {
		n := &tp.Nodes[i]
		switch n.Kind {
		case 'n':
			v.SetZero()
			return nil
		case '{':
			for j := i + 1; j < int(n.Next); j = int(tp.Nodes[j].Next) {
				f, ok := fields[tp.Nodes[j].Name]
				if !ok {
					return &Error{Pointer: tp.pointer(j), GoType: t, Err: errUnknownName}
				}
				if err := f.dec.fn(tp, j, v.Field(f.index)); err != nil {
					return err
				}
			}
			return nil
		}
		return mismatch(tp, i, t)
	}, fields
}

// pointer returns the JSON Pointer of node i, for errors: the chain of
// containers whose subtree holds it.
func (t *Tape) pointer(i int) string {
	var toks []string
	for j := i; j > 0; {
		parent := j - 1
		for int(t.Nodes[parent].Next) <= j {
			parent--
		}
		if t.Nodes[parent].Kind == '{' {
			toks = append(toks, strings.ReplaceAll(strings.ReplaceAll(t.Nodes[j].Name, "~", "~0"), "/", "~1"))
		} else {
			k := 0
			for c := parent + 1; c < j; c = int(t.Nodes[c].Next) {
				k++
			}
			toks = append(toks, strconv.Itoa(k))
		}
		j = parent
	}
	var sb strings.Builder
	for k := len(toks) - 1; k >= 0; k-- {
		sb.WriteByte('/')
		sb.WriteString(toks[k])
	}
	return sb.String()
}

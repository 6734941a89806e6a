package typeschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/internal/typedjson"
	"github.com/go-json-experiment/json/jsontext"
)

// Decode parses strict JSON (see internal/strictjson) into the tree the
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
// work. FuzzDecode checks Decode accepts exactly what
// strictjson.Validate accepts.
func Decode(b []byte) (any, error) {
	p := GetDecoder(len(b))
	defer PutDecoder(p, len(b))
	return p.Decode(b, nil, nil)
}

// ErrTooDeep is the reason DecodeInstance gives for a value nested deeper
// than its bound.
var ErrTooDeep = errors.New("nested too deeply")

// DecodeInstance is Decode in the form the schema library's own
// jsonschema.UnmarshalJSON gives (UseNumber: every number a json.Number
// holding its literal, so integer and bound checks see the exact text),
// for a caller that must also report strictjson.Validate's errors as
// Validate words them: duplicate member names are refused by the jsontext
// decoder, when the second name is read. Objects and arrays nested deeper
// than maxDepth (1 for an object of scalars) fail with ErrTooDeep as soon
// as the decoder enters one; the rest of b is then not read, so a
// strictjson violation after that point is not reported.
func DecodeInstance(b []byte, maxDepth int) (any, error) {
	p := GetDecoder(len(b))
	defer PutDecoder(p, len(b))
	p.instance, p.maxDepth = true, maxDepth
	defer func() { p.instance, p.maxDepth = false, 0 }()
	return p.Decode(b, nil, nil)
}

// GetDecoder returns a decoder for an input of n bytes: a pooled one
// unless the input is large.
func GetDecoder(n int) *Decoder {
	if n <= maxPooledInput {
		return decoderPool.Get().(*Decoder)
	}
	return newDecoder()
}

// PutDecoder returns p, got for an input of n bytes, to the pool.
func PutDecoder(p *Decoder, n int) {
	if n > maxPooledInput {
		return
	}
	p.Tape.Reset(nil, nil)
	if cap(p.Tape.Nodes) > maxPooledNodes {
		p.Tape.Nodes = nil
	}
	decoderPool.Put(p)
}

// Decode is the package's Decode with p's decoder. With a tape it also
// records every value for the typed mapping (internal/typedjson), in the
// same pass, leaving out the contents of the opaque top-level members.
func (p *Decoder) Decode(b []byte, tape *typedjson.Tape, opaque []string) (any, error) {
	p.r = *bytes.NewBuffer(b)
	p.d.Reset(&p.r, jsontext.AllowDuplicateNames(!p.instance))
	if tape != nil {
		tape.Reset(b, opaque)
	}
	v, err := p.decodeValue(tape)
	if err == nil {
		err = strictjson.End(p.d)
	}
	p.r = bytes.Buffer{}
	if err != nil {
		return nil, err
	}
	return v, nil
}

// maxPooledInput keeps decoders with large buffers out of the pool.
const maxPooledInput = 64 << 10

// maxPooledNodes keeps tapes of unusually many values out of the pool.
const maxPooledNodes = 4096

// Decoder is a reusable Decode with a tape for the typed mapping; get one
// with GetDecoder and return it with PutDecoder.
type Decoder struct {
	// r is a bytes.Buffer, which the decoder reads in place rather
	// than copying it into a buffer of its own.
	r bytes.Buffer
	d *jsontext.Decoder
	// Tape is the decoder's own tape, for Decode's tape argument.
	Tape typedjson.Tape
	// instance and maxDepth select DecodeInstance's form and bound.
	instance bool
	maxDepth int
}

func newDecoder() *Decoder {
	p := new(Decoder)
	p.d = jsontext.NewDecoder(&p.r)
	return p
}

var decoderPool = sync.Pool{New: func() any { return newDecoder() }}

// decodeValue decodes the next value, recording it on tape when tape is
// not nil. parseValue's loops make the same choice inline, so that a parse
// without a tape (a room-defined type's payload) pays one nil check per
// value.
func (p *Decoder) decodeValue(tape *typedjson.Tape) (any, error) {
	if tape != nil {
		return p.recordValue(tape)
	}
	return p.parseValue(nil)
}

// recordValue is parseValue with the value's node on tape.
func (p *Decoder) recordValue(tape *typedjson.Tape) (any, error) {
	d := p.d
	at, opaque := tape.Begin(byte(d.PeekKind()), int(d.InputOffset()))
	var v any
	var err error
	if opaque { // kept as bytes by the typed value: only the tree needs it
		v, err = p.parseValue(nil)
	} else {
		tape.Enter()
		v, err = p.parseValue(tape)
		tape.Leave()
	}
	if err == nil {
		tape.End(at, int(d.InputOffset()), v)
	}
	return v, err
}

// parseValue decodes the next value, and its members and elements as
// decodeValue does.
func (p *Decoder) parseValue(tape *typedjson.Tape) (any, error) {
	d := p.d
	kind := d.PeekKind()
	switch kind {
	case '{':
		if _, err := d.ReadToken(); err != nil {
			return nil, syntaxErr(d, err)
		}
		if err := p.checkDepth(); err != nil {
			return nil, err
		}
		// Containers are made when their first member or element is
		// read, so a document refused for its depth costs no allocation
		// per level on the way down.
		var m map[string]any
		for d.PeekKind() != '}' {
			tok, err := d.ReadToken()
			if err != nil {
				return nil, syntaxErr(d, err)
			}
			name := tok.String()
			var v any
			if tape != nil {
				tape.Member(name)
				v, err = p.recordValue(tape)
			} else {
				v, err = p.parseValue(nil)
			}
			if err != nil {
				return nil, err
			}
			if m == nil {
				m = make(map[string]any)
			}
			n := len(m)
			m[name] = v
			if len(m) == n { // one hash instead of a lookup plus an insert
				// The decoder's pointer is the member's value just read.
				return nil, &strictjson.Error{Pointer: string(d.StackPointer()), Err: fmt.Errorf("duplicate member name %q", clip(name))}
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return nil, syntaxErr(d, err)
		}
		if m == nil {
			m = map[string]any{}
		}
		return m, nil
	case '[':
		if _, err := d.ReadToken(); err != nil {
			return nil, syntaxErr(d, err)
		}
		if err := p.checkDepth(); err != nil {
			return nil, err
		}
		var a []any
		for d.PeekKind() != ']' {
			var v any
			var err error
			if tape != nil {
				v, err = p.recordValue(tape)
			} else {
				v, err = p.parseValue(nil)
			}
			if err != nil {
				return nil, err
			}
			if a == nil {
				a = make([]any, 0, 4)
			}
			a = append(a, v)
		}
		if _, err := d.ReadToken(); err != nil {
			return nil, syntaxErr(d, err)
		}
		if a == nil {
			a = []any{}
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
		if p.instance {
			return json.Number(raw), nil
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

// checkDepth applies DecodeInstance's bound to the object or array just
// entered.
func (p *Decoder) checkDepth() error {
	if p.maxDepth > 0 && p.d.StackDepth() > p.maxDepth {
		return &strictjson.Error{Pointer: string(p.d.StackPointer()), Err: ErrTooDeep}
	}
	return nil
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

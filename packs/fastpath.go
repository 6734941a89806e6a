package packs

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The fast path.
//
// The schema library allocates a validator per instance node, and checks
// numbers by formatting them into big.Rat. That puts a poll.create at about
// 6 µs. Payload validation runs on every custom event, so schemas that
// use only the keywords below are also compiled into a small evaluator
// that can only say "valid". The library stays the reference: when the
// evaluator does not say valid (the payload is invalid, or the evaluator
// meets something it does not handle) the library validates and its
// verdict and error stand. A wrong "valid" is the only failure that would
// matter, and FuzzValidatePayload checks the two agree.
//
// Numbers are float64 on both sides. For doubles, comparing directly gives
// the same order as the library's comparison of their shortest decimal
// forms, and integer-ness is x == Trunc(x).

type fastResult uint8

const (
	fastValid fastResult = iota
	fastInvalid
	fastUnknown // let the library decide
)

// maxFastDepth bounds evaluation depth; beyond it (deep instances, $ref
// cycles) the library decides.
const maxFastDepth = 128

// maxFastUnique bounds arrays checked for uniqueItems pairwise; longer ones
// go to the library, which hashes.
const maxFastUnique = 32

const (
	tNull uint8 = 1 << iota
	tBoolean
	tNumber
	tInteger
	tString
	tArray
	tObject
)

type fastNode struct {
	boolean int8 // 1: true schema, -1: false schema, 0: keywords
	types   uint8
	enum    []any
	constv  any
	hasEnum bool
	isConst bool

	minimum, maximum, exMinimum, exMaximum float64
	hasMin, hasMax, hasExMin, hasExMax     bool

	minLen, maxLen int // -1: absent
	pattern        *regexp.Regexp

	minItems, maxItems int
	unique             bool
	items              *fastNode

	minProps, maxProps int
	required           []string
	props              map[string]*fastNode
	addl               *fastNode

	ref                *fastNode
	allOf, anyOf       []*fastNode
	oneOf              []*fastNode
	not, if_, then, el *fastNode
}

// fastAnnotations are keywords that never affect validation here: 2020-12
// annotations, and format, which the library does not assert.
var fastAnnotations = map[string]bool{
	"$schema": true, "$comment": true, "title": true, "description": true, "default": true,
	"examples": true, "deprecated": true, "readOnly": true, "writeOnly": true, "format": true,
	"$defs": true, "definitions": true,
}

type fastCompiler struct {
	root any
	memo map[string]*fastNode // by JSON pointer, for $ref
	bad  bool
}

// compileFast compiles the schema at pointer ptr ("" for the root) of doc,
// or returns nil when it uses anything the fast path does not handle.
func compileFast(doc any, ptr string) *fastNode {
	c := &fastCompiler{root: doc, memo: make(map[string]*fastNode)}
	n := c.ref("#" + ptr)
	if c.bad {
		return nil
	}
	return n
}

func (c *fastCompiler) ref(s string) *fastNode {
	ptr, ok := strings.CutPrefix(s, "#")
	if !ok || strings.ContainsRune(ptr, '%') || (ptr != "" && ptr[0] != '/') {
		c.bad = true
		return nil
	}
	if n, ok := c.memo[ptr]; ok {
		return n
	}
	v := c.root
	if ptr != "" {
		for _, tok := range strings.Split(ptr[1:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			switch x := v.(type) {
			case map[string]any:
				if v, ok = x[tok]; !ok {
					c.bad = true
					return nil
				}
			case []any:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(x) {
					c.bad = true
					return nil
				}
				v = x[i]
			default:
				c.bad = true
				return nil
			}
		}
	}
	n := new(fastNode)
	c.memo[ptr] = n // before compiling, so recursive references terminate
	c.fill(n, v)
	return n
}

func (c *fastCompiler) node(v any) *fastNode {
	n := new(fastNode)
	c.fill(n, v)
	return n
}

func (c *fastCompiler) nodes(v any) []*fastNode {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		c.bad = true
		return nil
	}
	out := make([]*fastNode, len(a))
	for i, x := range a {
		out[i] = c.node(x)
	}
	return out
}

func (c *fastCompiler) count(v any) int {
	f, ok := v.(float64)
	if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		c.bad = true
		return -1
	}
	return int(f)
}

func (c *fastCompiler) number(v any) float64 {
	f, ok := v.(float64)
	if !ok {
		c.bad = true
	}
	return f
}

func (c *fastCompiler) fill(n *fastNode, v any) {
	n.minLen, n.maxLen, n.minItems, n.maxItems, n.minProps, n.maxProps = -1, -1, -1, -1, -1, -1
	switch s := v.(type) {
	case bool:
		n.boolean = -1
		if s {
			n.boolean = 1
		}
		return
	case map[string]any:
		for k, x := range s {
			if c.bad {
				return
			}
			c.keyword(n, k, x)
		}
	default:
		c.bad = true
	}
}

func (c *fastCompiler) keyword(n *fastNode, k string, x any) {
	switch k {
	case "type":
		n.types = c.typeMask(x)
	case "enum":
		a, ok := x.([]any)
		if !ok {
			c.bad = true
		}
		n.enum, n.hasEnum = a, true
	case "const":
		n.constv, n.isConst = x, true
	case "minimum":
		n.minimum, n.hasMin = c.number(x), true
	case "maximum":
		n.maximum, n.hasMax = c.number(x), true
	case "exclusiveMinimum":
		n.exMinimum, n.hasExMin = c.number(x), true
	case "exclusiveMaximum":
		n.exMaximum, n.hasExMax = c.number(x), true
	case "minLength":
		n.minLen = c.count(x)
	case "maxLength":
		n.maxLen = c.count(x)
	case "pattern":
		s, ok := x.(string)
		re, err := regexp.Compile(s) // the library's default engine
		if !ok || err != nil {
			c.bad = true
		}
		n.pattern = re
	case "minItems":
		n.minItems = c.count(x)
	case "maxItems":
		n.maxItems = c.count(x)
	case "uniqueItems":
		b, ok := x.(bool)
		if !ok {
			c.bad = true
		}
		n.unique = b
	case "items":
		n.items = c.node(x)
	case "minProperties":
		n.minProps = c.count(x)
	case "maxProperties":
		n.maxProps = c.count(x)
	case "required":
		a, ok := x.([]any)
		if !ok {
			c.bad = true
		}
		for _, r := range a {
			s, ok := r.(string)
			if !ok {
				c.bad = true
			}
			n.required = append(n.required, s)
		}
	case "properties":
		m, ok := x.(map[string]any)
		if !ok {
			c.bad = true
			return
		}
		n.props = make(map[string]*fastNode, len(m))
		for name, ps := range m {
			n.props[name] = c.node(ps)
		}
	case "additionalProperties":
		n.addl = c.node(x)
	case "$ref":
		s, ok := x.(string)
		if !ok {
			c.bad = true
			return
		}
		n.ref = c.ref(s)
	case "allOf":
		n.allOf = c.nodes(x)
	case "anyOf":
		n.anyOf = c.nodes(x)
	case "oneOf":
		n.oneOf = c.nodes(x)
	case "not":
		n.not = c.node(x)
	case "if":
		n.if_ = c.node(x)
	case "then":
		n.then = c.node(x)
	case "else":
		n.el = c.node(x)
	default:
		if !fastAnnotations[k] {
			c.bad = true
		}
	}
}

func (c *fastCompiler) typeMask(x any) uint8 {
	var names []any
	switch t := x.(type) {
	case string:
		names = []any{t}
	case []any:
		names = t
	default:
		c.bad = true
	}
	var m uint8
	for _, nm := range names {
		switch nm {
		case "null":
			m |= tNull
		case "boolean":
			m |= tBoolean
		case "number":
			m |= tNumber
		case "integer":
			m |= tInteger
		case "string":
			m |= tString
		case "array":
			m |= tArray
		case "object":
			m |= tObject
		default:
			c.bad = true
		}
	}
	return m
}

func typeOK(mask uint8, v any) bool {
	switch x := v.(type) {
	case nil:
		return mask&tNull != 0
	case bool:
		return mask&tBoolean != 0
	case float64:
		return mask&tNumber != 0 || (mask&tInteger != 0 && x == math.Trunc(x))
	case string:
		return mask&tString != 0
	case []any:
		return mask&tArray != 0
	case map[string]any:
		return mask&tObject != 0
	}
	return false
}

// jsonEqual is JSON value equality; numbers compare by value.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

// eval reports whether v is valid; any result but fastValid sends the
// payload to the library.
func (n *fastNode) eval(v any, depth int) fastResult {
	if depth > maxFastDepth {
		return fastUnknown
	}
	switch n.boolean {
	case 1:
		return fastValid
	case -1:
		return fastInvalid
	}
	if n.types != 0 && !typeOK(n.types, v) {
		return fastInvalid
	}
	if n.isConst && !jsonEqual(v, n.constv) {
		return fastInvalid
	}
	if n.hasEnum {
		found := false
		for _, e := range n.enum {
			if jsonEqual(v, e) {
				found = true
				break
			}
		}
		if !found {
			return fastInvalid
		}
	}
	switch x := v.(type) {
	case map[string]any:
		if (n.minProps >= 0 && len(x) < n.minProps) || (n.maxProps >= 0 && len(x) > n.maxProps) {
			return fastInvalid
		}
		for _, r := range n.required {
			if _, ok := x[r]; !ok {
				return fastInvalid
			}
		}
		for k, pv := range x {
			sub := n.addl
			if ps, ok := n.props[k]; ok {
				sub = ps
			}
			if sub != nil {
				if r := sub.eval(pv, depth+1); r != fastValid {
					return r
				}
			}
		}
	case []any:
		if (n.minItems >= 0 && len(x) < n.minItems) || (n.maxItems >= 0 && len(x) > n.maxItems) {
			return fastInvalid
		}
		if n.unique {
			if len(x) > maxFastUnique {
				return fastUnknown
			}
			for i := 1; i < len(x); i++ {
				for j := 0; j < i; j++ {
					if jsonEqual(x[i], x[j]) {
						return fastInvalid
					}
				}
			}
		}
		if n.items != nil {
			for _, it := range x {
				if r := n.items.eval(it, depth+1); r != fastValid {
					return r
				}
			}
		}
	case string:
		if n.minLen >= 0 || n.maxLen >= 0 {
			l := utf8.RuneCountInString(x)
			if (n.minLen >= 0 && l < n.minLen) || (n.maxLen >= 0 && l > n.maxLen) {
				return fastInvalid
			}
		}
		if n.pattern != nil && !n.pattern.MatchString(x) {
			return fastInvalid
		}
	case float64:
		if (n.hasMin && x < n.minimum) || (n.hasMax && x > n.maximum) ||
			(n.hasExMin && x <= n.exMinimum) || (n.hasExMax && x >= n.exMaximum) {
			return fastInvalid
		}
	}
	if n.ref != nil {
		if r := n.ref.eval(v, depth+1); r != fastValid {
			return r
		}
	}
	for _, s := range n.allOf {
		if r := s.eval(v, depth+1); r != fastValid {
			return r
		}
	}
	if n.anyOf != nil {
		res := fastInvalid
		for _, s := range n.anyOf {
			r := s.eval(v, depth+1)
			if r == fastValid {
				res = fastValid
				break
			}
			if r == fastUnknown {
				res = fastUnknown
			}
		}
		if res != fastValid {
			return res
		}
	}
	if n.oneOf != nil {
		valid := 0
		for _, s := range n.oneOf {
			switch s.eval(v, depth+1) {
			case fastValid:
				valid++
			case fastUnknown:
				return fastUnknown
			}
		}
		if valid != 1 {
			return fastInvalid
		}
	}
	if n.not != nil {
		switch n.not.eval(v, depth+1) {
		case fastValid:
			return fastInvalid
		case fastUnknown:
			return fastUnknown
		}
	}
	if n.if_ != nil {
		var r fastResult
		switch n.if_.eval(v, depth+1) {
		case fastValid:
			if n.then != nil {
				r = n.then.eval(v, depth+1)
			}
		case fastInvalid:
			if n.el != nil {
				r = n.el.eval(v, depth+1)
			}
		default:
			return fastUnknown
		}
		if r != fastValid {
			return r
		}
	}
	return fastValid
}

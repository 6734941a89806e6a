package typeschema

import (
	"errors"
	"net/url"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/agentprotocols/go-sdk/identity"
)

// MaxEvaluationsPerLocation is the default bound on how many times a type
// schema may evaluate subschemas against one location of a payload,
// whatever the payload. It keeps validation linear in payload size (§13.3
// lets a host refuse schemas too costly to evaluate; §22 asks it to bound
// the cost). The registered packs need at most 16 (graph.update, whose
// if/then branches all look at operation).
const MaxEvaluationsPerLocation = 128

// MaxPatternInsts is the default bound on the compiled RE2 programs of the
// patterns that can apply to one payload location, in instructions, summed
// over pattern, patternProperties and propertyNames (so it bounds each
// pattern too). Go's RE2 matches in time linear in the input, but the
// factor is the program size: about 5–20 ns per input byte per
// instruction in the worst case, so 1,000 instructions cost at most about
// 20 µs per payload byte. Counted repetition is what makes programs large
// (x{1000} copies x a thousand times); the largest registered pattern
// compiles to 57 instructions.
const MaxPatternInsts = 1000

// MaxSchemaDepth is the default bound on the JSON nesting depth of a type
// schema (objects and arrays). The schema library's compile time grows
// faster than quadratically with depth (2.4 s at 800 levels), and every
// subschema keeps its full location; the registered packs nest at most 7
// levels.
const MaxSchemaDepth = 32

// maxCostStates bounds the analysis itself.
const maxCostStates = 4096

// analyzeSchema admits a decoded type schema before the library compiles
// it. It enforces §13.3 and the host's cost bounds:
//
//   - $schema, wherever it appears, names draft 2020-12 (the library embeds
//     older metaschemas and would silently switch dialect);
//   - every $ref / $dynamicRef resolves inside the schema: a fragment, or a
//     URI equal to a resource the schema itself declares with $id. Refusing
//     here, not in the loader, keeps the embedded metaschemas (which the
//     library resolves without asking the loader) out of reach, and means a
//     refused schema causes no loader call at all. The scan treats every
//     object as a potential schema, so it over-approximates: a
//     "$ref"-named string inside a const or enum is checked too;
//   - no reference cycle that never descends into the instance (it cannot
//     terminate; the library reports it at validation time);
//   - at most lim.Evaluations subschema evaluations at any one location, as
//     when allOf:[B,B] chains double the work per $defs level, or a
//     recursive schema applies itself twice to the same child, which
//     doubles the work per level of payload nesting;
//   - every pattern compiles with Go's RE2 (ErrSchemaUnsupported when it
//     uses ECMA-262 syntax RE2 lacks), and the patterns that can apply to
//     one location compile to at most lim.PatternInsts instructions.
//
// The cost analysis follows the payload one level at a time. Its state is
// the multiset of subschemas that apply to one location, closed under the
// keywords that stay at that location (allOf, $ref, if, …). Stepping to a
// child (a named member, any other member, an array item) yields the next
// multiset. Member names are kept apart, so a binary tree (left and right
// both referring to the node) is fine. The analysis over-approximates:
// every patternProperties schema is assumed to match, and every branch of
// anyOf/oneOf/if is assumed to run.
//
// It also bounds the schema's nesting depth (lim.Depth).
func analyzeSchema(doc any, lim Limits) (*schemaAnalysis, error) {
	g := &schemaGraph{
		doc: doc, lim: lim,
		nodes: map[string]*costNode{}, resources: map[string]string{}, anchors: map[string]string{},
		bases: map[string]*url.URL{}, dynamic: map[string][]string{}, patterns: map[string]compiledPattern{},
	}
	if err := g.index(doc, "", schemaRoot, 0); err != nil {
		return nil, err
	}
	for _, r := range g.refs {
		if _, _, _, err := g.target(r.raw, r.base); err != nil {
			return nil, err
		}
	}
	root := g.node(doc, "")
	if g.err != nil {
		return nil, g.err
	}
	g.closures = map[*costNode]map[*costNode]int{}
	g.onStack = map[*costNode]bool{}
	start := g.closure(root)
	if g.err != nil {
		return nil, g.err
	}
	seen := map[string]bool{}
	queue := []map[*costNode]int{start}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		if err := g.checkState(st); err != nil {
			return nil, err
		}
		key := stateKey(st)
		if seen[key] {
			continue
		}
		seen[key] = true
		if len(seen) > maxCostStates {
			return nil, invalidEvent("type schema is too complex to bound its evaluation cost")
		}
		for _, slot := range slots(st) {
			next := map[*costNode]int{}
			for n, c := range st {
				for _, t := range n.targets(slot) {
					for m, k := range g.closure(t) {
						next[m] = min(next[m]+c*k, lim.Evaluations+1)
					}
				}
			}
			if g.err != nil {
				return nil, g.err
			}
			if len(next) > 0 {
				queue = append(queue, next)
			}
		}
	}
	a := &schemaAnalysis{patterns: make(map[string]*regexp.Regexp, len(g.patterns)), objects: g.objects, pointerBytes: g.pointerBytes}
	for src, p := range g.patterns {
		a.patterns[src] = p.re
		a.progBytes += p.bytes
	}
	return a, nil
}

// schemaAnalysis is what analyzeSchema learns about an admitted schema.
type schemaAnalysis struct {
	patterns     map[string]*regexp.Regexp // every pattern, compiled, by source
	progBytes    int                       // the size of their programs in memory
	objects      int                       // JSON objects in the schema
	pointerBytes int                       // total length of their JSON pointers
}

// heapEstimate over-approximates the heap the library's compiled form of
// a schema of canonical size n holds: per subschema a Schema struct and
// its location string, the values it keeps, and per pattern its program
// (a *regexp.Regexp may keep a one-pass copy of it too). TestSchemaHeap
// checks it against measurements.
func (a *schemaAnalysis) heapEstimate(n int) int64 {
	return 8192 + 16*int64(n) + 1024*int64(a.objects) + 2*int64(a.pointerBytes) +
		2048*int64(len(a.patterns)) + 2*int64(a.progBytes)
}

// checkState applies the per-location bounds to one state.
func (g *schemaGraph) checkState(st map[*costNode]int) error {
	evals, insts := 0, 0
	for n, c := range st {
		evals += c
		insts += c * n.insts
	}
	if evals > g.lim.Evaluations {
		return invalidEvent("type schema is too costly: a payload location can be evaluated more than %d times", g.lim.Evaluations)
	}
	if insts > g.lim.PatternInsts {
		return invalidEvent("type schema is too costly: the patterns applying to one payload location compile to more than %d instructions", g.lim.PatternInsts)
	}
	return nil
}

type costNode struct {
	id      int
	insts   int                    // program size of the patterns this schema matches at its location
	same    []*costNode            // applied to the same location
	props   map[string][]*costNode // applied to the member of that name
	members []*costNode            // applied to every member (patternProperties, unevaluatedProperties)
	addl    []*costNode            // applied to members not in props
	items   []*costNode            // applied to every array item
	names   []*costNode            // propertyNames: applied to member names
}

// slot names: "p:<name>" for a named member, "other", "item", "name".
func (n *costNode) targets(slot string) []*costNode {
	switch slot {
	case "item":
		return n.items
	case "name":
		return n.names
	case "other":
		return slices.Concat(n.members, n.addl)
	}
	name := slot[2:]
	if ps, ok := n.props[name]; ok {
		return slices.Concat(n.members, ps)
	}
	return slices.Concat(n.members, n.addl)
}

func slots(st map[*costNode]int) []string {
	set := map[string]bool{"other": true, "item": true, "name": true}
	for n := range st {
		for k := range n.props {
			set["p:"+k] = true
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func total(st map[*costNode]int) int {
	t := 0
	for _, c := range st {
		t += c
	}
	return t
}

func stateKey(st map[*costNode]int) string {
	ids := make([][2]int, 0, len(st))
	for n, c := range st {
		ids = append(ids, [2]int{n.id, c})
	}
	slices.SortFunc(ids, func(a, b [2]int) int { return a[0] - b[0] })
	var sb strings.Builder
	for _, p := range ids {
		sb.WriteString(strconv.Itoa(p[0]))
		sb.WriteByte('*')
		sb.WriteString(strconv.Itoa(p[1]))
		sb.WriteByte(',')
	}
	return sb.String()
}

// schemaRoot is the base URI of a type schema's root resource. It is not
// resolvable anywhere, which is the point.
var schemaRoot = &url.URL{Scheme: "https", Host: "type-schema.invalid", Path: "/root.json"}

// schemaGraph is a type schema seen as a graph of subschemas, with the one
// reference resolver of this package (target and resolve).
type schemaGraph struct {
	doc       any
	lim       Limits
	nodes     map[string]*costNode // by JSON pointer from the document root
	resources map[string]string    // base URI -> pointer of its root
	anchors   map[string]string    // base URI + "#" + anchor -> pointer
	bases     map[string]*url.URL  // pointer -> base URI in effect there
	dynamic   map[string][]string  // $dynamicAnchor name -> pointers
	refs      []schemaRef          // every reference, wherever it appears
	objects   int                  // JSON objects seen by index
	// pointerBytes sums the lengths of their JSON pointers.
	pointerBytes int
	patterns     map[string]compiledPattern // by source
	closures     map[*costNode]map[*costNode]int
	onStack      map[*costNode]bool
	err          error
}

type compiledPattern struct {
	re    *regexp.Regexp
	insts int // size of its RE2 program
	bytes int // memory its program takes
}

type schemaRef struct {
	raw  string
	base *url.URL
}

// index records resources ($id), anchors, references and the base URI of
// every object, walking every JSON value: a $ref may point anywhere.
func (g *schemaGraph) index(v any, ptr string, base *url.URL, depth int) error {
	if ptr == "" {
		g.resources[base.String()] = ""
	}
	switch v.(type) {
	case map[string]any, []any:
		if depth++; depth > g.lim.Depth {
			return invalidEvent("type schema nests deeper than %d levels", g.lim.Depth)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		g.objects++
		g.pointerBytes += len(ptr)
		if s, ok := x["$schema"].(string); ok && s != Draft202012 {
			return invalidEvent("type schema $schema %q is not %s", clip(s), Draft202012)
		}
		if id, ok := x["$id"].(string); ok {
			u, err := base.Parse(id)
			if err != nil {
				return invalidEvent("type schema $id %q is not a URI reference", clip(id))
			}
			u.Fragment, u.RawFragment = "", ""
			base = u
			if _, dup := g.resources[u.String()]; !dup {
				g.resources[u.String()] = ptr
			}
		}
		g.bases[ptr] = base
		if a, ok := x["$anchor"].(string); ok {
			g.anchors[base.String()+"#"+a] = ptr
		}
		if a, ok := x["$dynamicAnchor"].(string); ok {
			g.anchors[base.String()+"#"+a] = ptr
			g.dynamic[a] = append(g.dynamic[a], ptr)
		}
		for _, kw := range [...]string{"$ref", "$dynamicRef", "$recursiveRef"} {
			if s, ok := x[kw].(string); ok {
				if _, err := base.Parse(s); err != nil {
					return invalidEvent("type schema %s %q is not a URI reference", kw, clip(s))
				}
				// Type schema profile rule 1 (2026-09-24 §12.3.1): a
				// fragment, resolved inside the schema.
				if g.lim.Profile && kw == "$ref" && !strings.HasPrefix(s, "#") {
					return invalidEvent("type schema $ref %q is not a fragment (#…) of the schema itself", clip(s))
				}
				g.refs = append(g.refs, schemaRef{s, base})
			}
		}
		for k, c := range x {
			if !isContainer(c) {
				continue // only objects need a pointer
			}
			if err := g.index(c, ptr+"/"+escapePointer(k), base, depth); err != nil {
				return err
			}
		}
	case []any:
		for i, c := range x {
			if !isContainer(c) {
				continue
			}
			if err := g.index(c, ptr+"/"+strconv.Itoa(i), base, depth); err != nil {
				return err
			}
		}
	}
	return nil
}

func isContainer(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// target resolves a reference against the base URI in effect where it
// appears: the pointer of the resource it names and its fragment. A
// resource the schema does not declare itself is refused.
func (g *schemaGraph) target(ref string, base *url.URL) (resource, rootPtr, frag string, err error) {
	u, err := base.Parse(ref)
	if err != nil {
		return "", "", "", invalidEvent("type schema reference %q is not a URI reference", clip(ref))
	}
	frag = u.Fragment
	u.Fragment, u.RawFragment = "", ""
	resource = u.String()
	rootPtr, ok := g.resources[resource]
	if !ok {
		return "", "", "", invalidEvent("type schema reference %q is not inside the schema (remote and file references are not allowed)", clip(ref))
	}
	return resource, rootPtr, frag, nil
}

// resolve maps the reference of the schema at ptr to the pointers it may
// reach. A "#/…" fragment is a pointer into the resource the reference
// appears in, which need not be the document root. $dynamicRef may reach
// every $dynamicAnchor of its name.
func (g *schemaGraph) resolve(ref, ptr string, dynamic bool) []string {
	base := g.bases[ptr]
	if base == nil { // not an object the index saw; cannot happen
		g.fail(invalidEvent("type schema reference %q cannot be resolved inside the schema", clip(ref)))
		return nil
	}
	resource, rootPtr, frag, err := g.target(ref, base)
	if err != nil {
		g.fail(err)
		return nil
	}
	switch {
	case frag == "":
		return []string{rootPtr}
	case strings.HasPrefix(frag, "/"):
		return []string{rootPtr + frag}
	}
	p, ok := g.anchors[resource+"#"+frag]
	if !ok {
		g.fail(invalidEvent("type schema reference %q cannot be resolved inside the schema", clip(ref)))
		return nil
	}
	out := []string{p}
	if dynamic {
		for _, d := range g.dynamic[frag] {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

func (g *schemaGraph) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}

// node returns the graph node of the schema at ptr, building it (and
// everything it references) on first use.
func (g *schemaGraph) node(v any, ptr string) *costNode {
	if n, ok := g.nodes[ptr]; ok {
		return n
	}
	n := &costNode{id: len(g.nodes)}
	g.nodes[ptr] = n
	obj, ok := v.(map[string]any)
	if !ok {
		return n // boolean schema, or a value the metaschema rejects anyway
	}
	profile := g.lim.Profile
	if profile {
		// Type schema profile rule 1 (2026-09-24 §12.3.1).
		for _, kw := range profileForbidden {
			if _, ok := obj[kw]; ok {
				g.fail(invalidEvent("type schema uses %s, which the type schema profile excludes", kw))
				return n
			}
		}
	}
	child := func(k string) (any, string) { return obj[k], ptr + "/" + escapePointer(k) }
	one := func(k string) *costNode {
		c, p := child(k)
		return g.node(c, p)
	}
	// list handles keywords holding an array of schemas (allOf, prefixItems,
	// and items in its pre-2020 form) or a single schema.
	list := func(k string) []*costNode {
		c, p := child(k)
		a, ok := c.([]any)
		if !ok {
			return []*costNode{g.node(c, p)}
		}
		out := make([]*costNode, len(a))
		for i, s := range a {
			out[i] = g.node(s, p+"/"+strconv.Itoa(i))
		}
		return out
	}
	// byName handles keywords holding an object of schemas.
	byName := func(k string) []*costNode {
		c, p := child(k)
		m, _ := c.(map[string]any)
		var out []*costNode
		for name, s := range m {
			out = append(out, g.node(s, p+"/"+escapePointer(name)))
		}
		return out
	}
	for k := range obj {
		switch k {
		case "not", "if", "then", "else":
			n.same = append(n.same, one(k))
		case "allOf", "anyOf", "oneOf":
			n.same = append(n.same, list(k)...)
		case "dependentSchemas", "dependencies":
			n.same = append(n.same, byName(k)...)
		case "$ref", "$dynamicRef", "$recursiveRef":
			s, _ := obj[k].(string)
			for _, tp := range g.resolve(s, ptr, k == "$dynamicRef") {
				v, cp, ok := resolvePointer(g.doc, tp)
				if !ok {
					g.fail(invalidEvent("type schema reference %q cannot be resolved inside the schema", clip(s)))
					continue
				}
				n.same = append(n.same, g.node(v, cp))
			}
		case "properties":
			m, _ := obj[k].(map[string]any)
			n.props = map[string][]*costNode{}
			for name, s := range m {
				n.props[name] = []*costNode{g.node(s, ptr+"/properties/"+escapePointer(name))}
			}
		case "patternProperties":
			// Every member name is matched against every pattern here.
			m, _ := obj[k].(map[string]any)
			for p := range m {
				n.insts += g.pattern(p)
			}
			n.members = append(n.members, byName(k)...)
		case "pattern":
			if p, ok := obj[k].(string); ok {
				n.insts += g.pattern(p)
			}
		case "unevaluatedProperties":
			n.members = append(n.members, one(k))
		case "additionalProperties":
			n.addl = append(n.addl, one(k))
		case "items", "prefixItems", "contains", "unevaluatedItems", "additionalItems":
			n.items = append(n.items, list(k)...)
		case "propertyNames":
			n.names = append(n.names, one(k))
		case "$defs", "definitions", "contentSchema":
			// Never evaluated unless referenced, but still schemas whose
			// patterns the profile governs: build their nodes (outside
			// every cost list) so that the checks above reach them.
			if profile && k == "contentSchema" {
				one(k)
			} else if profile {
				byName(k)
			}
		}
	}
	return n
}

// profileForbidden are the keywords rule 1 of the type schema profile
// excludes (2026-09-24 §12.3.1).
var profileForbidden = [...]string{"$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor", "$vocabulary"}

// pattern compiles a pattern once, within the per-location bound, and
// returns its program size.
func (g *schemaGraph) pattern(p string) int {
	if cp, ok := g.patterns[p]; ok {
		return cp.insts
	}
	if g.lim.Profile {
		// Type schema profile rule 2 (2026-09-24 §12.3.1).
		if err := checkIRegexp(p); err != nil {
			g.fail(invalidEvent("type schema pattern %q is not in the type schema profile's I-Regexp: %v", clip(p), err))
			return 0
		}
	}
	cp, err := compilePattern(p, g.lim.PatternInsts)
	if err != nil {
		g.fail(err)
		return 0
	}
	g.patterns[p] = cp
	return cp.insts
}

// closure returns the multiset of schemas that apply at one location when
// n does, counts capped just above the limit.
func (g *schemaGraph) closure(n *costNode) map[*costNode]int {
	if c, ok := g.closures[n]; ok {
		return c
	}
	if g.onStack[n] {
		g.fail(invalidEvent("type schema has a reference cycle that never descends into the payload"))
		return nil
	}
	g.onStack[n] = true
	c := map[*costNode]int{n: 1}
	for _, s := range n.same {
		for m, k := range g.closure(s) {
			c[m] = min(c[m]+k, g.lim.Evaluations+1)
		}
	}
	delete(g.onStack, n)
	g.closures[n] = c
	if total(c) > g.lim.Evaluations {
		g.fail(invalidEvent("type schema is too costly: a payload location can be evaluated more than %d times", g.lim.Evaluations))
	}
	return c
}

// compilePattern compiles a schema pattern with Go's RE2 engine, refusing
// a program of more than max instructions before building it. RE2 lacks
// some ECMA-262 syntax (look-around, backreferences, …): such a pattern
// is ErrSchemaUnsupported, since the schema may be valid and this
// verifier simply cannot evaluate it. Syntax that ECMA-262 rejects as well
// is invalid_event.
func compilePattern(p string, max int) (compiledPattern, error) {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			switch se.Code {
			case syntax.ErrMissingParen, syntax.ErrUnexpectedParen, syntax.ErrTrailingBackslash,
				syntax.ErrMissingRepeatArgument, syntax.ErrInvalidRepeatOp:
				return compiledPattern{}, invalidEvent("type schema pattern %q is not a regular expression: %v", clip(p), se.Code)
			case syntax.ErrLarge, syntax.ErrNestingDepth:
				return compiledPattern{}, invalidEvent("type schema pattern %q is too costly: %v", clip(p), se.Code)
			}
		}
		return compiledPattern{}, identity.Errorf(CodeSchemaUnsupported, "type schema pattern %q uses syntax Go's RE2 engine does not support: %v", clip(p), err)
	}
	tooBig := func() error {
		return invalidEvent("type schema pattern %q is too costly: it compiles to more than %d instructions", clip(p), max)
	}
	// Estimate first: simplifying x{1000} nested three deep would build a
	// billion instructions before they could be counted. The estimate
	// over-approximates, so it refuses only at a margin, and the compiled
	// program is what counts.
	if estimateInsts(re, 4*max) > 4*max {
		return compiledPattern{}, tooBig()
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil || len(prog.Inst) > max {
		return compiledPattern{}, tooBig()
	}
	// regexp.Compile parses and compiles again, the same way; the work is
	// bounded by the check above.
	r, err := regexp.Compile(p)
	if err != nil {
		return compiledPattern{}, identity.Errorf(CodeSchemaUnsupported, "type schema pattern %q: %v", clip(p), err)
	}
	size := 0
	for _, in := range prog.Inst {
		size += int(unsafe.Sizeof(in)) + 4*cap(in.Rune)
	}
	return compiledPattern{r, len(prog.Inst), size}, nil
}

// estimateInsts over-approximates the instruction count of the program
// compiled from re's simplified form, saturating just above max.
func estimateInsts(re *syntax.Regexp, limit int) int {
	sat := func(n int) int { return min(n, limit+1) }
	switch re.Op {
	case syntax.OpLiteral:
		return sat(len(re.Rune) + 1)
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return sat(estimateInsts(re.Sub[0], limit) + 2)
	case syntax.OpConcat, syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			n = sat(n + estimateInsts(s, limit) + 1)
		}
		return n
	case syntax.OpRepeat:
		copies := re.Max
		if copies < 0 {
			copies = re.Min + 1
		}
		return sat(estimateInsts(re.Sub[0], limit)*max(copies, 1) + copies + 2)
	}
	return 2
}

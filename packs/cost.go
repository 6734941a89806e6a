package packs

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// MaxEvaluationsPerLocation bounds how many times a type schema may
// evaluate subschemas against one location of a payload, whatever the
// payload. It keeps validation linear in payload size (§13.3 lets a host
// refuse schemas too costly to evaluate; §22 asks it to bound the cost).
// The registered packs need at most 16 (graph.update, whose if/then
// branches all look at operation).
const MaxEvaluationsPerLocation = 128

// maxCostStates bounds the analysis itself.
const maxCostStates = 4096

// checkCost refuses schemas whose evaluation can outgrow the payload:
//
//   - a reference cycle that never descends into the instance (it cannot
//     terminate; the library reports it at validation time);
//   - more than MaxEvaluationsPerLocation subschema evaluations at any one
//     location, as when allOf:[B,B] chains double the work per $defs level,
//     or a recursive schema applies itself twice to the same child, which
//     doubles the work per level of payload nesting.
//
// The analysis follows the payload one level at a time. Its state is the
// multiset of subschemas that apply to one location, closed under the
// keywords that stay at that location (allOf, $ref, if, …). Stepping to a
// child (a named member, any other member, an array item) yields the next
// multiset. Member names are kept apart, so a binary tree (left and right
// both referring to the node) is fine. The analysis over-approximates:
// every patternProperties schema is assumed to match, and every branch of
// anyOf/oneOf/if is assumed to run.
func checkCost(doc any) error {
	g := &costGraph{nodes: map[string]*costNode{}, resources: map[string]string{}, anchors: map[string]string{}}
	g.index(doc, "", mustURL("https://type-schema.invalid/root.json"))
	root := g.node(doc, "")
	if g.err != nil {
		return g.err
	}
	g.closures = map[*costNode]map[*costNode]int{}
	g.onStack = map[*costNode]bool{}
	start := g.closure(root)
	if g.err != nil {
		return g.err
	}
	seen := map[string]bool{}
	queue := []map[*costNode]int{start}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		if total(st) > MaxEvaluationsPerLocation {
			return invalidEvent("type schema is too costly: a payload location can be evaluated more than %d times", MaxEvaluationsPerLocation)
		}
		key := stateKey(st)
		if seen[key] {
			continue
		}
		seen[key] = true
		if len(seen) > maxCostStates {
			return invalidEvent("type schema is too complex to bound its evaluation cost")
		}
		for _, slot := range slots(st) {
			next := map[*costNode]int{}
			for n, c := range st {
				for _, t := range n.targets(slot) {
					for m, k := range g.closure(t) {
						next[m] = min(next[m]+c*k, MaxEvaluationsPerLocation+1)
					}
				}
			}
			if g.err != nil {
				return g.err
			}
			if len(next) > 0 {
				queue = append(queue, next)
			}
		}
	}
	return nil
}

type costNode struct {
	id      int
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

type costGraph struct {
	doc       any
	nodes     map[string]*costNode // by JSON pointer from the document root
	resources map[string]string    // base URI -> pointer of its root
	anchors   map[string]string    // base URI + "#" + anchor -> pointer
	bases     map[string]string    // pointer -> base URI in effect there
	dynamic   map[string][]string  // $dynamicAnchor name -> pointers
	closures  map[*costNode]map[*costNode]int
	onStack   map[*costNode]bool
	err       error
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// index records resources ($id), anchors and the base URI of every object,
// walking every JSON value: a $ref may point anywhere.
func (g *costGraph) index(v any, ptr string, base *url.URL) {
	if g.doc == nil {
		g.doc = v
		g.bases = map[string]string{}
		g.dynamic = map[string][]string{}
		g.resources[base.String()] = ""
	}
	switch x := v.(type) {
	case map[string]any:
		if id, ok := x["$id"].(string); ok {
			if u, err := base.Parse(id); err == nil {
				u.Fragment, u.RawFragment = "", ""
				base = u
				if _, dup := g.resources[u.String()]; !dup {
					g.resources[u.String()] = ptr
				}
			}
		}
		g.bases[ptr] = base.String()
		if a, ok := x["$anchor"].(string); ok {
			g.anchors[base.String()+"#"+a] = ptr
		}
		if a, ok := x["$dynamicAnchor"].(string); ok {
			g.anchors[base.String()+"#"+a] = ptr
			g.dynamic[a] = append(g.dynamic[a], ptr)
		}
		for k, c := range x {
			g.index(c, ptr+"/"+escapePointer(k), base)
		}
	case []any:
		for i, c := range x {
			g.index(c, ptr+"/"+strconv.Itoa(i), base)
		}
	}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// node returns the graph node of the schema at ptr, building it (and
// everything it references) on first use.
func (g *costGraph) node(v any, ptr string) *costNode {
	if n, ok := g.nodes[ptr]; ok {
		return n
	}
	n := &costNode{id: len(g.nodes)}
	g.nodes[ptr] = n
	obj, ok := v.(map[string]any)
	if !ok {
		return n // boolean schema, or a value the metaschema rejects anyway
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
			for _, tp := range g.resolve(s, g.bases[ptr], k == "$dynamicRef") {
				n.same = append(n.same, g.node(g.at(tp), tp))
			}
		case "properties":
			m, _ := obj[k].(map[string]any)
			n.props = map[string][]*costNode{}
			for name, s := range m {
				n.props[name] = []*costNode{g.node(s, ptr+"/properties/"+escapePointer(name))}
			}
		case "patternProperties":
			n.members = append(n.members, byName(k)...)
		case "unevaluatedProperties":
			n.members = append(n.members, one(k))
		case "additionalProperties":
			n.addl = append(n.addl, one(k))
		case "items", "prefixItems", "contains", "unevaluatedItems", "additionalItems":
			n.items = append(n.items, list(k)...)
		case "propertyNames":
			n.names = append(n.names, one(k))
		}
	}
	return n
}

// at returns the JSON value at an absolute pointer.
func (g *costGraph) at(ptr string) any {
	v := g.doc
	if ptr == "" {
		return v
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// resolve maps a reference to the pointers it may reach. $dynamicRef may
// reach every $dynamicAnchor of its name.
func (g *costGraph) resolve(ref, base string, dynamic bool) []string {
	b, err := url.Parse(base)
	if err != nil {
		g.fail(ref)
		return nil
	}
	u, err := b.Parse(ref)
	if err != nil {
		g.fail(ref)
		return nil
	}
	frag := u.Fragment
	u.Fragment, u.RawFragment = "", ""
	rootPtr, ok := g.resources[u.String()]
	if !ok {
		g.fail(ref)
		return nil
	}
	var out []string
	switch {
	case frag == "":
		out = []string{rootPtr}
	case strings.HasPrefix(frag, "/"):
		out = []string{rootPtr + frag}
	default:
		p, ok := g.anchors[u.String()+"#"+frag]
		if !ok {
			g.fail(ref)
			return nil
		}
		out = []string{p}
		if dynamic {
			for _, d := range g.dynamic[frag] {
				if !slices.Contains(out, d) {
					out = append(out, d)
				}
			}
		}
	}
	return out
}

func (g *costGraph) fail(ref string) {
	if g.err == nil {
		g.err = invalidEvent("type schema reference %q cannot be resolved inside the schema", clip(ref))
	}
}

// closure returns the multiset of schemas that apply at one location when
// n does, counts capped just above the limit.
func (g *costGraph) closure(n *costNode) map[*costNode]int {
	if c, ok := g.closures[n]; ok {
		return c
	}
	if g.onStack[n] {
		if g.err == nil {
			g.err = invalidEvent("type schema has a reference cycle that never descends into the payload")
		}
		return nil
	}
	g.onStack[n] = true
	c := map[*costNode]int{n: 1}
	for _, s := range n.same {
		for m, k := range g.closure(s) {
			c[m] = min(c[m]+k, MaxEvaluationsPerLocation+1)
		}
	}
	delete(g.onStack, n)
	g.closures[n] = c
	if total(c) > MaxEvaluationsPerLocation && g.err == nil {
		g.err = invalidEvent("type schema is too costly: a payload location can be evaluated more than %d times", MaxEvaluationsPerLocation)
	}
	return c
}

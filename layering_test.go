package agentprotocols

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/agentprotocols/go-sdk"

// layers is the chain the root package doc draws, bottom first:
//
//	internal/{b64url,strictjson,untrusted,…} ← identity ← internal/{httpc,typeschema} ← envelope
//	← profile, packs ← adp ← archive, sse ← adphost, connector, adpconform ← examples, cmd, interop
//
// A package is placed by the longest entry that is its path or a parent of
// it. It may import packages of lower layers, and packages under its own
// top-level directory (adphost/boltstore imports adphost); never a package
// of its own layer elsewhere (profile and packs stay independent) or of a
// higher one. The root package documents and tests the whole module, so it
// sits above everything. A program's internal packages
// (cmd/agent-protocols-connector/internal/jsonl) are its own: only the
// tree above the internal directory imports them, as the go command has
// it, so no other program or example depends on another's transports.
var layers = [][]string{
	{"internal"},
	{"identity"},
	{"internal/httpc", "internal/typeschema"},
	{"envelope"},
	{"profile", "packs"},
	{"adp"},
	{"archive", "sse"},
	{"adphost", "connector", "adpconform"},
	{"examples", "cmd", "interop"},
	{"."},
}

// pkgImports is one package directory's imports of the module's own
// packages, as directory paths relative to the module root.
type pkgImports struct {
	imports     []string // from non-test files
	testImports []string // from _test.go files (in-package and external)
}

// layerOf returns the layer index of a package directory, and the entry
// that placed it; -1 when no entry covers it.
func layerOf(dir string) (int, string) {
	best, at := "", -1
	for i, entries := range layers {
		for _, e := range entries {
			if (dir == e || e != "." && strings.HasPrefix(dir, e+"/")) && len(e) >= len(best) {
				best, at = e, i
			}
		}
	}
	return at, best
}

// topDir is the first element of a package directory.
func topDir(dir string) string {
	top, _, _ := strings.Cut(dir, "/")
	return top
}

// isTestHelper reports a package whose name says it serves tests
// (adp/adptest, adphost/adphosttest, profile/profiletest): tests of any
// layer may import one.
func isTestHelper(dir string) bool { return strings.HasSuffix(path.Base(dir), "test") }

// servedByHelper reports whether to is the package that one of the test
// helpers in testImports serves (adphost for adphost/adphosttest): a test
// that starts a helper's server configures it with that package's options.
func servedByHelper(to string, testImports []string) bool {
	return slices.ContainsFunc(testImports, func(ti string) bool { return isTestHelper(ti) && path.Dir(ti) == to })
}

// internalOwner returns the directory whose tree may import dir, which
// has an internal element ("." for the module's internal/), and whether
// it has one; the innermost internal element decides.
func internalOwner(dir string) (string, bool) {
	parts := strings.Split(dir, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i] == "internal" {
			if i == 0 {
				return ".", true
			}
			return strings.Join(parts[:i], "/"), true
		}
	}
	return "", false
}

// violations returns one line per import that runs against the layering.
func violations(graph map[string]pkgImports) []string {
	var out []string
	check := func(from, to string, test bool) {
		lf, ef := layerOf(from)
		lt, et := layerOf(to)
		if owner, ok := internalOwner(to); ok && owner != "." && from != owner && !strings.HasPrefix(from, owner+"/") {
			out = append(out, from+" imports "+to+", which is internal to "+owner)
			return
		}
		switch {
		case lf < 0:
			out = append(out, from+": no layer; add it to layers in layering_test.go and to the chain in doc.go")
			return
		case lt < 0:
			return // reported as the importer of its own imports
		case test && (isTestHelper(to) || servedByHelper(to, graph[from].testImports)):
			return
		case lt < lf:
			return
		case ef == et && (from == to || topDir(from) == topDir(to)):
			// Within one entry's own directory tree (adphost ← adphost/boltstore).
			return
		}
		kind := "imports"
		if test {
			kind = "tests import"
		}
		out = append(out, from+" "+kind+" "+to+", which is not below it")
	}
	dirs := make([]string, 0, len(graph))
	for d := range graph {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		p := graph[d]
		for _, to := range p.imports {
			check(d, to, false)
		}
		for _, to := range p.testImports {
			check(d, to, true)
		}
	}
	return out
}

// moduleGraph reads every Go file of the module (examples and tests
// included, testdata excluded) and collects the imports of the module's
// own packages per directory.
func moduleGraph(t *testing.T) map[string]pkgImports {
	t.Helper()
	graph := map[string]pkgImports{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		g := graph[dir]
		for _, is := range f.Imports {
			ip, _ := strconv.Unquote(is.Path.Value)
			var rel string
			switch {
			case ip == modulePath:
				rel = "."
			case strings.HasPrefix(ip, modulePath+"/"):
				rel = strings.TrimPrefix(ip, modulePath+"/")
			default:
				continue
			}
			if strings.HasSuffix(name, "_test.go") {
				g.testImports = append(g.testImports, rel)
			} else {
				g.imports = append(g.imports, rel)
			}
		}
		graph[dir] = g
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}

// TestLayering holds the module to the chain drawn in doc.go: every import
// of the module's own packages, in library code, examples and tests,
// points down the chain. Tests may also use the …test helper packages, and
// the package a helper they use serves (its options and types).
func TestLayering(t *testing.T) {
	graph := moduleGraph(t)
	for _, want := range []string{"identity", "adphost", "connector", "connector/mcptools", "cmd/agent-protocols-connector",
		"cmd/agent-protocols-connector/internal/jsonl", "cmd/adphost", "cmd/adpverify", "cmd/adpconform", "examples/connector"} {
		if _, ok := graph[want]; !ok {
			t.Fatalf("%s was not read; is the walk broken?", want)
		}
	}
	for _, v := range violations(graph) {
		t.Error(v)
	}
}

// TestLayeringCatchesViolations runs the check on small synthetic graphs:
// it must refuse an upward import, a sideways one between siblings, a
// test's upward import of a non-helper package and an unplaced package,
// and accept what the chain allows.
func TestLayeringCatchesViolations(t *testing.T) {
	for _, c := range []struct {
		name  string
		graph map[string]pkgImports
		bad   int
	}{
		{"downward", map[string]pkgImports{"adp": {imports: []string{"envelope", "internal/strictjson", "packs"}}}, 0},
		{"own subtree", map[string]pkgImports{"adphost/boltstore": {imports: []string{"adphost", "adp"}}}, 0},
		{"test helper", map[string]pkgImports{"sse": {testImports: []string{"adphost/adphosttest", "adp/adptest"}}}, 0},
		{"helper's package", map[string]pkgImports{"connector": {testImports: []string{"adphost", "adphost/adphosttest"}}}, 0},
		{"sibling without its helper", map[string]pkgImports{"connector": {testImports: []string{"adphost"}}}, 1},
		{"root imports all", map[string]pkgImports{".": {testImports: []string{"adp", "examples/connector"}}}, 0},
		{"httpc above identity", map[string]pkgImports{"internal/httpc": {imports: []string{"identity"}}, "envelope": {imports: []string{"internal/httpc"}}}, 0},
		{"upward", map[string]pkgImports{"adp": {imports: []string{"archive"}}}, 1},
		{"identity imports httpc", map[string]pkgImports{"identity": {imports: []string{"internal/httpc"}}}, 1},
		{"strictjson imports identity", map[string]pkgImports{"internal/strictjson": {imports: []string{"identity"}}}, 1},
		{"sideways", map[string]pkgImports{"profile": {imports: []string{"packs"}}}, 1},
		{"library imports examples", map[string]pkgImports{"connector": {imports: []string{"examples/connector"}}}, 1},
		{"test imports upward", map[string]pkgImports{"identity": {testImports: []string{"adp"}}}, 1},
		{"helper imports upward", map[string]pkgImports{"adp/adptest": {imports: []string{"adphost"}}}, 1},
		{"unplaced", map[string]pkgImports{"newpkg": {imports: []string{"adp"}}}, 1},
		{"a program's own internal", map[string]pkgImports{"cmd/agent-protocols-connector": {imports: []string{"cmd/agent-protocols-connector/internal/jsonl"}},
			"cmd/agent-protocols-connector/internal/acp": {imports: []string{"cmd/agent-protocols-connector/internal/jsonl", "connector/mcptools"}}}, 0},
		{"the programs' shared internal", map[string]pkgImports{"cmd/adphost": {testImports: []string{"cmd/internal/clitest"}}}, 0},
		{"another program's internal", map[string]pkgImports{"cmd/adphost": {imports: []string{"cmd/agent-protocols-connector/internal/jsonl"}}}, 1},
		{"an example imports a program's internal", map[string]pkgImports{"examples/connector": {testImports: []string{"cmd/agent-protocols-connector/internal/mcphttp"}}}, 1},
		{"an example imports a program", map[string]pkgImports{"examples/host": {imports: []string{"cmd/adphost"}}}, 1},
		{"library imports a program", map[string]pkgImports{"connector/mcptools": {imports: []string{"cmd/agent-protocols-connector/internal/jsonl"}}}, 1},
	} {
		got := violations(c.graph)
		if len(got) != c.bad {
			t.Errorf("%s: %d violations %q, want %d", c.name, len(got), got, c.bad)
		}
	}
	if !slices.Contains(layers[len(layers)-1], ".") {
		t.Error("the root package must be the top layer")
	}
}

// TestProgramsDoNotLinkTesting: no program under cmd/ links package
// testing (or testing/…), which a library reaching for a test helper
// would drag into an operator's binary with its flags.
func TestProgramsDoNotLinkTesting(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{if eq .Name \"main\"}}{{.ImportPath}}{{end}}", "./cmd/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	programs := strings.Fields(string(out))
	if len(programs) < 4 {
		t.Fatalf("programs under cmd/: %q; want the four", programs)
	}
	for _, p := range programs {
		deps, err := exec.Command("go", "list", "-deps", p).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", p, err)
		}
		for _, d := range strings.Fields(string(deps)) {
			if d == "testing" || strings.HasPrefix(d, "testing/") {
				t.Errorf("%s links %s", p, d)
			}
		}
	}
}

package agentprotocols

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestExportedIdentifiersHaveDocComments enforces the house rule that every
// exported identifier of the library carries a doc comment: go doc and
// pkg.go.dev are the SDK's reference, and an undocumented name is a gap in
// it. It covers functions, methods on exported types, types, and exported
// constants and variables (a comment on a grouped const or var block, or a
// trailing line comment, counts for the names in it). Struct fields and
// interface methods are out of scope. The runnable programs under examples/
// and testdata are skipped; so are _test.go files.
func TestExportedIdentifiersHaveDocComments(t *testing.T) {
	fset := token.NewFileSet()
	var missing []string
	parsed := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (name == "examples" || name == "testdata" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		parsed[filepath.ToSlash(path)] = true
		missing = append(missing, undocumented(fset, f)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Guard against a walk that silently checks nothing.
	for _, want := range []string{"identity/agentid.go", "envelope/envelope.go", "adp/doc.go", "internal/strictjson/strictjson.go"} {
		if !parsed[want] {
			t.Errorf("%s was not checked", want)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s has no doc comment", m)
	}
}

// undocumented lists "file:line: Name" for each exported identifier of f
// without a doc comment.
func undocumented(fset *token.FileSet, f *ast.File) []string {
	var out []string
	report := func(pos token.Pos, name string) {
		p := fset.Position(pos)
		out = append(out, p.Filename+":"+strconv.Itoa(p.Line)+": "+name)
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			if d.Recv == nil {
				report(d.Pos(), d.Name.Name)
				continue
			}
			if recv := receiverName(d.Recv.List[0].Type); ast.IsExported(recv) {
				report(d.Pos(), recv+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			grouped := d.Lparen.IsValid()
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && s.Doc == nil && (grouped || d.Doc == nil) {
						report(s.Pos(), s.Name.Name)
					}
				case *ast.ValueSpec:
					if d.Doc != nil || s.Doc != nil || s.Comment != nil {
						continue
					}
					for _, n := range s.Names {
						if n.IsExported() {
							report(n.Pos(), n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// receiverName is the type name of a method receiver: T, *T, T[P] or *T[P].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// TestUndocumentedFindsGaps checks the checker itself on a source with one
// documented and one undocumented identifier of every kind in scope.
func TestUndocumentedFindsGaps(t *testing.T) {
	const src = `package p

// Doc is documented.
type Doc struct{}

type Bare struct{}

type unexported struct{}

// M is documented.
func (Doc) M() {}

func (*Bare) M() {}

func (Bare[T]) G() {}

func (unexported) M() {}

// F is documented.
func F() {}

func G() {}

// Group comment covers both.
const (
	A = 1
	B = 2
)

const (
	C = 1 // trailing comment counts
	D = 2
	e = 3
)

var V = 1

// Types in a group need their own comment.
type (
	// T1 is documented.
	T1 int
	T2 int
)
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(undocumented(fset, f), "\n")
	want := strings.Join([]string{
		"p.go:6: Bare",
		"p.go:13: Bare.M",
		"p.go:15: Bare.G",
		"p.go:22: G",
		"p.go:32: D",
		"p.go:36: V",
		"p.go:42: T2",
	}, "\n")
	if got != want {
		t.Errorf("undocumented:\n%s\nwant:\n%s", got, want)
	}
}

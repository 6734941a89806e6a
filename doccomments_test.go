package agentprotocols

import (
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
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
	for _, f := range libraryFiles(t, fset) {
		parsed[filepath.ToSlash(fset.File(f.Pos()).Name())] = true
		missing = append(missing, undocumented(fset, f)...)
	}
	// Guard against a walk that silently checks nothing.
	for _, want := range []string{"identity/agentid.go", "envelope/envelope.go", "adp/doc.go", "internal/strictjson/strictjson.go", "adphost/doc.go", "connector/doc.go"} {
		if !parsed[want] {
			t.Errorf("%s was not checked", want)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s has no doc comment", m)
	}
}

// libraryFiles parses every non-test Go file of the module's library
// packages, skipping examples/, testdata and hidden directories.
func libraryFiles(t *testing.T, fset *token.FileSet) []*ast.File {
	t.Helper()
	var files []*ast.File
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
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// bracketed finds what looks like a doc link, [Name], [Type.Name] or
// [pkg.Name], in text that go/doc left plain. Names of one letter are left
// out: they are math, as in the Ed25519 equation [S]B = R + [k]A.
var bracketed = regexp.MustCompile(`\[(?:[a-z][\w/.-]*\.)?[A-Z]\w+(?:\.[A-Z]\w*)?\]`)

// TestPackageDocLinksResolve checks that every [Name] in a package doc, or
// in the doc comment of an exported declaration, is a working doc link. A
// misspelt or stale link otherwise shows as plain brackets in go doc, or
// as a link to nothing on pkg.go.dev. go/doc resolves [Name] and
// [Type.Name] only if the identifier exists; for [pkg.Name] it checks only
// the import, so links into this module are looked up here.
func TestPackageDocLinksResolve(t *testing.T) {
	const module = "github.com/agentprotocols/go-sdk"
	fset := token.NewFileSet()
	byDir := map[string][]*ast.File{}
	for _, f := range libraryFiles(t, fset) {
		dir := filepath.Dir(fset.File(f.Pos()).Name())
		byDir[dir] = append(byDir[dir], f)
	}
	pkgs := map[string]*doc.Package{}
	for dir, files := range byDir {
		path := module
		if dir != "." {
			path += "/" + filepath.ToSlash(dir)
		}
		pkg, err := doc.NewFromFiles(fset, files, path)
		if err != nil {
			t.Fatal(err)
		}
		pkgs[path] = pkg
	}
	for path, pkg := range pkgs {
		var bad []string
		var walk func([]comment.Text)
		walk = func(text []comment.Text) {
			for _, x := range text {
				switch x := x.(type) {
				case comment.Plain:
					bad = append(bad, bracketed.FindAllString(string(x), -1)...)
				case comment.Italic:
					bad = append(bad, bracketed.FindAllString(string(x), -1)...)
				case *comment.Link:
					walk(x.Text)
				case *comment.DocLink:
					if target, ok := pkgs[x.ImportPath]; ok && x.Name != "" && !target.Parser().LookupSym(x.Recv, x.Name) {
						bad = append(bad, "["+x.ImportPath+"."+strings.TrimPrefix(x.Recv+"."+x.Name, ".")+"]")
					}
				}
			}
		}
		for _, d := range docStrings(pkg) {
			for _, b := range pkg.Parser().Parse(d).Content {
				switch b := b.(type) {
				case *comment.Paragraph:
					walk(b.Text)
				case *comment.Heading:
					walk(b.Text)
				case *comment.List:
					for _, it := range b.Items {
						for _, c := range it.Content {
							if p, ok := c.(*comment.Paragraph); ok {
								walk(p.Text)
							}
						}
					}
				}
			}
		}
		for _, l := range bad {
			t.Errorf("%s: doc link %s does not resolve", path, l)
		}
	}
}

// docStrings is the package doc and the doc comment of every exported
// declaration of pkg.
func docStrings(pkg *doc.Package) []string {
	docs := []string{pkg.Doc}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			docs = append(docs, v.Doc)
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			docs = append(docs, f.Doc)
		}
	}
	values(pkg.Consts)
	values(pkg.Vars)
	funcs(pkg.Funcs)
	for _, typ := range pkg.Types {
		docs = append(docs, typ.Doc)
		values(typ.Consts)
		values(typ.Vars)
		funcs(typ.Funcs)
		funcs(typ.Methods)
	}
	return docs
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

package agentprotocols

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageHasExample holds the README's promise that each public
// package has a compiled Example: every package outside internal/,
// examples/ and cmd/ (the root included) has a func Example… in a test
// file.
func TestEveryPackageHasExample(t *testing.T) {
	fset := token.NewFileSet()
	hasCode, hasExample := map[string]bool{}, map[string]bool{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (name == "testdata" || name == "internal" || name == "examples" || name == "cmd" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		if !strings.HasSuffix(name, "_test.go") {
			hasCode[dir] = true
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Example") {
				hasExample[dir] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".", "identity", "adphost/boltstore", "adp/adptest"} {
		if !hasCode[want] {
			t.Fatalf("%s was not read; is the walk broken?", want)
		}
	}
	for dir := range hasCode {
		if !hasExample[dir] {
			t.Errorf("package %s has no Example function", dir)
		}
	}
}

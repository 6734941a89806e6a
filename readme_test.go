package agentprotocols

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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

// TestReadmeSnippetsCompile keeps every Go block of README.md compiled
// and, where it has an Output, run: each block must stand, line for line
// at any indentation, inside the body of a function in one of the
// module's test files (an Example, or a test function an Example shows).
// A block that is a whole function declaration is looked for as its body.
func TestReadmeSnippetsCompile(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlocks(readme)
	if len(blocks) < 5 {
		t.Fatalf("found %d Go blocks in README.md; is the parser broken?", len(blocks))
	}
	bodies := testFuncBodies(t)
	for _, b := range blocks {
		if !containsBlock(bodies, b) {
			t.Errorf("README.md's Go block is not the body of a test-file function (copy it from, or into, an Example):\n%s", strings.Join(b, "\n"))
		}
	}
}

var fence = regexp.MustCompile("(?ms)^```go\n(.*?)^```")

// goBlocks returns the lines of each ```go block of a Markdown text, a
// whole function declaration reduced to its body.
func goBlocks(md []byte) [][]string {
	var out [][]string
	for _, m := range fence.FindAllSubmatch(md, -1) {
		lines := strings.Split(strings.TrimRight(string(m[1]), "\n"), "\n")
		if n := len(lines); n > 2 && strings.HasPrefix(lines[0], "func ") && strings.HasSuffix(lines[0], "{") && lines[n-1] == "}" {
			lines = lines[1 : n-1]
		}
		out = append(out, lines)
	}
	return out
}

// testFuncBodies returns the source lines of the body of every top-level
// function in the module's test files.
func testFuncBodies(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
				body := src[fset.Position(fd.Body.Lbrace).Offset+1 : fset.Position(fd.Body.Rbrace).Offset]
				out = append(out, strings.Split(string(bytes.Trim(body, "\n")), "\n"))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// containsBlock reports whether block stands in one of bodies as
// consecutive lines, each with the same number of extra leading tabs.
func containsBlock(bodies [][]string, block []string) bool {
	for _, body := range bodies {
		for i := 0; i+len(block) <= len(body); i++ {
			if matchAt(body[i:i+len(block)], block) {
				return true
			}
		}
	}
	return false
}

// matchAt reports whether lines are block indented by one common number
// of tabs (blank lines match blank lines).
func matchAt(lines, block []string) bool {
	indent := -1
	for j, want := range block {
		got := lines[j]
		if strings.TrimSpace(want) == "" {
			if strings.TrimSpace(got) != "" {
				return false
			}
			continue
		}
		if indent < 0 {
			indent = len(got) - len(strings.TrimLeft(got, "\t")) - (len(want) - len(strings.TrimLeft(want, "\t")))
			if indent < 0 {
				return false
			}
		}
		if got != strings.Repeat("\t", indent)+want {
			return false
		}
	}
	return true
}

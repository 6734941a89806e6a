package connector

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoClientStateReads: the engine reads verified room state only from
// its replicas (Engine.replica), never through an adp.Client method that
// reads or feeds the client's copy of it, so that each record crosses the
// network once and has one owner in the process.
func TestNoClientStateReads(t *testing.T) {
	banned := map[string]bool{"Verified": true, "Events": true, "Replica": true, "Restore": true, "Admit": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !banned[sel.Sel.Name] {
				return true
			}
			if recv, ok := sel.X.(*ast.SelectorExpr); ok && recv.Sel.Name == "client" {
				t.Errorf("%s: the engine calls the client's %s", fset.Position(call.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}

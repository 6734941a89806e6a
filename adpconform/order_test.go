package adpconform_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adpconform"
)

// TestChecksInReportOrder: the suite is one list written in report order
// (by §24 item, an item's privacy checks after its feature checks, the
// checks of no item last), not assembled by init functions whose order is
// the order of file names.
func TestChecksInReportOrder(t *testing.T) {
	rank := func(c adpconform.Check) (int, int) {
		item := c.Item
		if item == 0 {
			item = 100
		}
		if strings.HasPrefix(c.ID, "privacy.") {
			return item, 1
		}
		return item, 0
	}
	for _, cs := range [][]adpconform.Check{adpconform.Checks(), adpconform.ChecksFor(adp.Draft20260924)} {
		for i := 1; i < len(cs); i++ {
			ai, ap := rank(cs[i-1])
			bi, bp := rank(cs[i])
			if ai > bi || ai == bi && ap > bp {
				t.Errorf("%s (item %d) is listed after %s (item %d)", cs[i].ID, cs[i].Item, cs[i-1].ID, cs[i-1].Item)
			}
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "init" {
				t.Errorf("%s has an init function: the suite's order is the list in checks.go", name)
			}
		}
	}
}

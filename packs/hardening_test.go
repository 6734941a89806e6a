package packs

import (
	"errors"
	"testing"
)

// embeddedRefSchema has a "#/…" reference inside an embedded $id resource:
// it resolves inside that resource (to a string schema), not from the
// document root (where $defs/z is an integer schema).
const embeddedRefSchema = `{"type":"object","required":["v"],
 "properties":{"v":{"$ref":"#/$defs/x/$defs/y"}},
 "$defs":{"x":{"$id":"https://e.example/inner",
               "$defs":{"y":{"$ref":"#/$defs/z"},"z":{"type":"string"}}},
          "z":{"type":"integer"}}}`

// TestEmbeddedResourceRef is the regression test of issue 9 item 1: the
// removed fast path resolved the inner reference from the document root
// and accepted {"v": 5}.
func TestEmbeddedResourceRef(t *testing.T) {
	var r Registry
	mustDeclare(t, &r, 1, `{"type":"x.ref","kind":"message","title":"t","schema":`+embeddedRefSchema+`}`)
	err := r.Validate("x.ref", []byte(`{"v":5}`))
	if !errors.Is(err, ErrPayloadSchemaViolation) {
		t.Fatalf(`{"v":5}: got %v, want payload_schema_violation`, err)
	}
	wantLocation(t, err, "/v")
	if err := r.Validate("x.ref", []byte(`{"v":"five"}`)); err != nil {
		t.Fatalf(`{"v":"five"}: %v`, err)
	}
}

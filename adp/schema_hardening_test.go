package adp_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/internal/raceflag"
)

// TestAcceptEmbeddedResourceRef, on the host path: a
// "#/…" reference inside an embedded $id resource resolves inside that
// resource, so {"v": 5} violates the type's schema. Before, a second
// evaluator resolved it from the root and Room.Accept recorded the event.
func TestAcceptEmbeddedResourceRef(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom(withTypes(`{"type":"x.ref","kind":"message","title":"t","schema":{"type":"object","required":["v"],
		"properties":{"v":{"$ref":"#/$defs/x/$defs/y"}},
		"$defs":{"x":{"$id":"https://e.example/inner","$defs":{"y":{"$ref":"#/$defs/z"},"z":{"type":"string"}}},
		         "z":{"type":"integer"}}}}`))
	w.Join("alice", adp.RoleSpeaker)
	if _, err := w.Submit(custom(w, "alice", "x.ref", `{"v":5}`)); !errors.Is(err, adp.ErrPayloadSchemaViolation) {
		t.Fatalf(`{"v":5}: got %v, want payload_schema_violation`, err)
	}
	w.OK(w.Submit(custom(w, "alice", "x.ref", `{"v":"five"}`)))
}

// TestHostilePatternInRoom: a schema's cost is bounded when it is
// declared (§13.4), on the host path: a type.define carrying a pattern
// whose RE2 program is huge (before: 1.6 s per 258-byte
// write, minutes at 64 KiB) is refused at declaration, and the costliest
// pattern a room admits keeps a 56 KiB write well under a second. The time
// bound is a generous guard, not a measurement.
func TestHostilePatternInRoom(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	hostile := strings.Repeat(`(?:a*|b*|c*|d*|e*|f*|g*|h*){1000}`, 8) + "q"
	// Signed directly: the builder refuses it too.
	decl := `{"type":"x.re","kind":"message","title":"t","schema":{"properties":{"s":{"pattern":"` + hostile + `"}}}}`
	if _, err := w.Submit(raw(w, "creator", adp.TypeTypeDefine, ptr(w.Base(adp.TypeTypeDefine)), decl)); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Fatalf("hostile pattern: got %v, want invalid_event", err)
	}
	w.OK(define(w, "creator", `{"type":"x.re","kind":"message","title":"t","schema":{"properties":{"s":{"pattern":"(?:a*|b*|c*|d*|e*|f*|g*|h*){43}q"}}}}`))
	w.Join("alice", adp.RoleSpeaker)
	start := time.Now()
	_, err := w.Submit(custom(w, "alice", "x.re", `{"s":"`+strings.Repeat("abcdefgh", 7<<10)+`"}`))
	if !errors.Is(err, adp.ErrPayloadSchemaViolation) {
		t.Fatalf("got %v, want payload_schema_violation", err)
	}
	if d := time.Since(start); d > 10*time.Second && !raceflag.Enabled {
		t.Fatalf("one write took %v", d)
	}
}

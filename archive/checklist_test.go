package archive_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// TestBuiltinChecklistTranscript is the transcript item of the checklist
// for adding a built-in event type (adp package documentation; the other
// items are enforced by adp's TestBuiltinChecklist): every built-in type
// has a rendering of its own. A record of each type from the adp vectors
// is rendered, and so is the same payload under a room-defined type name,
// which gets the generic rendering; the two must differ.
func TestBuiltinChecklistTranscript(t *testing.T) {
	byType := map[string]*adp.Record{}
	for _, room := range []string{"main", "cancelled"} {
		for _, rec := range vectorRecords(t, room) {
			if _, ok := byType[rec.Envelope.Type()]; !ok {
				byType[rec.Envelope.Type()] = rec
			}
		}
	}
	key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{0x42}, 32))
	if err != nil {
		t.Fatal(err)
	}
	author := &envelope.Author{Signer: key, Nonces: identity.NewNonceSource(nil)}
	for _, typ := range adp.BuiltinTypes() {
		t.Run(typ, func(t *testing.T) {
			rec := byType[typ]
			if rec == nil {
				t.Fatalf("the adp vectors have no %s record", typ)
			}
			ev := rec.Envelope.Event()
			twin, err := author.Sign(context.Background(), adp.Protocol, "x.generic", ev.Payload, ev.Ext)
			if err != nil {
				t.Fatal(err)
			}
			own, generic := renderBody(t, rec), renderBody(t, &adp.Record{
				RoomID: rec.RoomID, Seq: rec.Seq, PreHash: rec.PreHash, ReceivedAt: rec.ReceivedAt, Envelope: twin,
			})
			if own == generic {
				t.Errorf("%s has no rendering of its own; archive/transcript.go shows it as any custom type:\n%s", typ, own)
			}
		})
	}
}

// renderBody renders rec alone and returns what follows its "- Event:"
// line: the part that depends on the type and payload.
func renderBody(t *testing.T, rec *adp.Record) string {
	t.Helper()
	var b strings.Builder
	tr := archive.NewTranscript(&b)
	if err := tr.Add(rec); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(nil); err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(b.String(), "\n- Event: ")
	if !ok {
		t.Fatalf("no event line in\n%s", b.String())
	}
	_, body, _ = strings.Cut(body, "\n")
	return body
}

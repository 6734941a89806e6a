package adphost_test

import (
	"testing"

	"github.com/agentprotocols/go-sdk/internal/opcount"
)

// TestHostWriteReadsWireText: a write whose body is AppendJSON's text, as
// every builder in the SDK sends it, is read by the envelope's path for
// that text (the canonical checker alone), never by the general
// token-by-token parse, and costs one signature check: the host's cost per
// write rests on both.
func TestHostWriteReadsWireText(t *testing.T) {
	const writes = 20
	h, c := newBenchHost(t)
	br := prepare(t, h, c, "writer", writes)
	opcount.Start()
	defer opcount.Stop()
	for _, env := range br.envs {
		post(t, h, "/v1/rooms/"+br.id, env)
	}
	if got := opcount.Stop(); got.GeneralParses != 0 || got.Verifies != writes {
		t.Fatalf("%d writes: %d envelopes read by the general parse, %d signature checks; want 0 and %d", writes, got.GeneralParses, got.Verifies, writes)
	}
}

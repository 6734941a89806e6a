package mcptools

import (
	"testing"

	"github.com/agentprotocols/go-sdk/connector"
)

// TestNotifierCoalesces: a burst of changes to one URI costs one
// notification, and Notify never blocks without a reader.
func TestNotifierCoalesces(t *testing.T) {
	n := NewNotifier()
	for range 10000 {
		n.Notify(connector.URIInboxPending)
		n.Notify(connector.URIDraftsHeld)
	}
	if len(n.order) != 2 || len(n.pending) != 2 {
		t.Fatalf("queued %d URIs, want 2", len(n.order))
	}
}

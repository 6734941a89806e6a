package adphost_test

import (
	"testing"

	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
)

// TestLaterDraftWire: the host serving the 2026-09-24 draft, over HTTP,
// on a MemoryStore (boltstore and pgstore run the same check).
func TestLaterDraftWire(t *testing.T) {
	adphosttest.CheckLaterDraft(t, adphost.NewMemoryStore())
}

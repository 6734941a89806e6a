package adptest_test

import (
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
)

// retryDiscussion is a test of code that takes part in a room: the World
// drives the room through the host's rule table, and Replay checks that
// a verifier applying the accepted records reaches the same state.
// TestWorldExample runs it.
func retryDiscussion(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom() // created by "creator", active for an hour from w.Now
	w.Join("alice", adp.RoleSpeaker)
	w.OK(w.Say("alice", "Three retries, then a finding."))
	if _, err := w.Say("bob", "Not a member yet."); err == nil {
		t.Fatal("a non-member's message was accepted")
	}
	room := w.Replay(nil) // fails t if the replay disagrees with the host
	if got := room.Head().Seq; got != 3 {
		t.Fatalf("head %d, want 3 (the join is a signal: it needs no head and moves none)", got)
	}
}

// A test drives a room with a World; an example has no *testing.T, so the
// test is the function above.
func ExampleWorld() {
	_ = retryDiscussion
}

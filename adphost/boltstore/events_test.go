package boltstore

import (
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/storetest"
)

// TestRecentEvents: the event index's newest entries (in "events-recent"
// and in memory) and those folded into "events" are found by hash and
// refuse the same envelope again, after a reopen too, whether the file
// was closed (everything folded) or not (the newest entries reread).
func TestRecentEvents(t *testing.T) {
	defer func(n int) { maxRecent = n }(maxRecent)
	maxRecent = 5
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "host.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := storetest.Chain(t, "room", 13)
	for i := 0; i < len(recs); i += 3 {
		var cs []*adphost.Commit
		for _, r := range recs[i:min(i+3, len(recs))] {
			cs = append(cs, storetest.Commit(r))
		}
		if err := appendRun(ctx, s, cs); err != nil {
			t.Fatal(err)
		}
	}
	check := func(s *Store, when string) {
		t.Helper()
		var recent, folded int
		s.db.View(func(tx *bolt.Tx) error {
			recent, folded = tx.Bucket(bRecent).Stats().KeyN, tx.Bucket(bEvents).Stats().KeyN
			return nil
		})
		s.recent.mu.RLock()
		inMemory := len(s.recent.m)
		s.recent.mu.RUnlock()
		if recent > maxRecent || inMemory != recent || recent+folded != len(recs) {
			t.Fatalf("%s: %d entries in events-recent (%d in memory), %d in events; want at most %d recent, all %d in all",
				when, recent, inMemory, folded, maxRecent, len(recs))
		}
		for _, r := range recs {
			got, err := s.RecordByEvent(ctx, r.Envelope.Hash())
			if err != nil || got == nil || got.Seq != r.Seq {
				t.Fatalf("%s: RecordByEvent of seq %d: %v, %v", when, r.Seq, got, err)
			}
			st, err := s.WriteState(ctx, "room", storetest.Author("alice").AgentID(), r.Envelope.Hash())
			if err != nil || st.Record == nil || st.Record.Seq != r.Seq {
				t.Fatalf("%s: WriteState of seq %d: %+v, %v", when, r.Seq, st, err)
			}
		}
		last := recs[len(recs)-1]
		for _, old := range []*adp.Record{recs[1], last} {
			again := adp.NewRecord("room", last, last.ReceivedAt+1, old.Envelope)
			if err := s.Append(ctx, storetest.Commit(again)); !errors.Is(err, adphost.ErrDuplicateEvent) {
				t.Fatalf("%s: the envelope of seq %d again: %v, want ErrDuplicateEvent", when, old.Seq, err)
			}
		}
	}
	check(s, "open")
	// A process that stops without Close (killed) leaves the newest
	// entries in events-recent; Open reads them back.
	s.db.Close()
	if s, err = Open(path, nil); err != nil {
		t.Fatal(err)
	}
	check(s, "reopened after a kill")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s, "reopened after Close")
	if len(s.recent.m) != 0 {
		t.Fatalf("%d entries in events-recent after Close, want 0", len(s.recent.m))
	}
}

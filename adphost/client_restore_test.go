package adphost_test

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
)

// urlLog records request URIs.
type urlLog struct {
	mu   sync.Mutex
	uris []string
	next http.RoundTripper
}

func (l *urlLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.uris = append(l.uris, r.URL.RequestURI())
	l.mu.Unlock()
	return l.next.RoundTrip(r)
}

// TestClientRestore: a client given a stored replica (Client.Restore)
// resumes from its latest record instead of verifying the history again,
// keeps verifying what follows, and refuses a snapshot of another room.
func TestClientRestore(t *testing.T) {
	w := newWorld(t, nil)
	ctx := ctxT(t)
	alice := w.client("alice")
	create := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "restore")))
	room := create.RoomID
	for _, s := range []string{"one", "two", "three"} {
		mustv(alice.SendMessage(ctx, room, text(s)))
	}
	snap := mustv(alice.Verified(room).Snapshot())

	log := &urlLog{next: w.hc.Transport}
	fresh := w.clientWith("alice", &http.Client{Transport: log})
	if err := fresh.Restore(room, snap); err != nil {
		t.Fatal(err)
	}
	if got := fresh.Verified(room).Latest(); got != alice.Verified(room).Latest() {
		t.Fatalf("restored latest %+v", got)
	}
	mustv(alice.SendMessage(ctx, room, text("four")))
	l := mustv(fresh.Sync(ctx, room))
	if l.Seq != 5 {
		t.Fatalf("synced to %d", l.Seq)
	}
	for _, u := range log.uris {
		if strings.Contains(u, "after_seq=0") {
			t.Fatalf("restored client re-read the history: %v", log.uris)
		}
	}
	// The restored replica keeps judging: a record it holds must match.
	var recs []*adp.Record
	for rec, err := range alice.Events(ctx, room, 0) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if err := fresh.Admit(ctx, room, recs[4]); err != nil {
		t.Fatalf("admit the held record 5: %v", err)
	}
	forged := *recs[4]
	forged.Envelope = recs[3].Envelope
	forged.Hash = forged.ComputeHash()
	if err := fresh.Admit(ctx, room, &forged); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("admit a forged record: %v", err)
	}
	if err := w.client("bob").Restore("other-room", snap); err == nil {
		t.Fatal("a snapshot restored under another room id")
	}
	bad := strings.Replace(string(snap), `"role":"moderator"`, `"role":"overlord"`, 1)
	if err := w.client("bob").Restore(room, []byte(bad)); err == nil {
		t.Fatal("a doctored snapshot was restored")
	}
}

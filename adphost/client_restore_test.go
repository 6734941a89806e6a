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

// TestClientRestoredReplica: a client given a restored replica
// (ClientOptions.NewReplica, adp.RestoreReplica) resumes from its latest
// record instead of verifying the history again, keeps verifying what
// follows, and refuses another room's replica; a doctored snapshot is not
// restored.
func TestClientRestoredReplica(t *testing.T) {
	w := newWorld(t, nil)
	ctx := ctxT(t)
	alice := w.client("alice")
	create := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "restore")))
	room := create.RoomID
	for _, s := range []string{"one", "two", "three"} {
		mustv(alice.SendMessage(ctx, room, text(s)))
	}
	own := mustv(alice.Replica(room))
	snap := mustv(own.Snapshot())

	restored := mustv(adp.RestoreReplica(snap, nil))
	log := &urlLog{next: w.hc.Transport}
	newClient := func(name string, rep *adp.Replica) *adp.Client {
		return mustv(adp.NewClient(w.url, &adp.ClientOptions{
			Signer: key(name), HTTPClient: &http.Client{Transport: log}, Now: w.clock.Now, AllowLoopbackHTTP: true,
			NewReplica: func(string) (*adp.Replica, error) { return rep, nil },
		}))
	}
	fresh := newClient("alice", restored)
	if got := restored.Latest(); got != own.Latest() {
		t.Fatalf("restored latest %+v", got)
	}
	mustv(alice.SendMessage(ctx, room, text("four")))
	l := mustv(fresh.Sync(ctx, room))
	if l.Seq != 5 || restored.Latest().Seq != 5 {
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
	if err := restored.Admit(ctx, recs[4]); err != nil {
		t.Fatalf("admit the held record 5: %v", err)
	}
	forged := *recs[4]
	forged.Envelope = recs[3].Envelope
	forged.Hash = forged.ComputeHash()
	if err := restored.Admit(ctx, &forged); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("admit a forged record: %v", err)
	}
	if _, err := newClient("bob", restored).Sync(ctx, "other-room"); err == nil {
		t.Fatal("a replica used for another room id")
	}
	bad := strings.Replace(string(snap), `"role":"moderator"`, `"role":"overlord"`, 1)
	if _, err := adp.RestoreReplica([]byte(bad), nil); err == nil {
		t.Fatal("a doctored snapshot was restored")
	}
}

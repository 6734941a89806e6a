package connector

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// failingEvents fails every history read while fail is set.
type failingEvents struct {
	mu   sync.Mutex
	fail bool
}

func (f *failingEvents) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail && strings.Contains(r.URL.Path, "/events") && !strings.HasSuffix(r.URL.Path, "/live") {
		return nil, errors.New("history unavailable")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestOpenReadsHistoryOnce: room_open reads the history once, page by
// page as it stores it (never a download to verify and a second one to
// store).
func TestOpenReadsHistoryOnce(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	for range 20 {
		say(t, alice, room, "x")
	}
	ct := &countingTransport{}
	bob := openTest(t, t.TempDir(), testKey(t, "bob"), srv.URL, func(o *Options) { o.HTTPClient = &http.Client{Transport: ct}; o.NoSubscribe = true })
	defer bob.Close()
	r := must[*RoomOpenResult](t)(bob.RoomOpen(ctx, "b", RoomOpenInput{Host: srv.URL, RoomID: room}))
	if r.Sync.SyncedSeq != 21 {
		t.Fatalf("synced %d", r.Sync.SyncedSeq)
	}
	if n := ct.count("after_seq=0&"); n != 1 {
		t.Fatalf("the history was read %d times: %v", n, ct.urls)
	}
}

// TestRemoteSeqHint (connector §4.2 remote_seq; ADP §16 room resource):
// reconciliation reads the room
// resource, so remote_seq shows the host's latest record while the
// history could not be read; the room view carries the resource fields
// url, extra, pre_hash and received_at.
func TestRemoteSeqHint(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	fe := &failingEvents{}
	bob := openTest(t, t.TempDir(), testKey(t, "bob"), srv.URL, func(o *Options) { o.HTTPClient = &http.Client{Transport: fe}; o.NoSubscribe = true })
	defer bob.Close()
	st := must[*RoomOpenResult](t)(bob.RoomOpen(ctx, "b", RoomOpenInput{Host: srv.URL, RoomID: room}))
	v := st.Room
	if v.URL == "" || string(v.Extra) != "{}" || v.PreHash != nil || v.ReceivedAt == 0 {
		t.Fatalf("room view: url %q extra %s pre_hash %v received_at %d", v.URL, v.Extra, v.PreHash, v.ReceivedAt)
	}
	say(t, alice, room, "one")
	say(t, alice, room, "two")
	fe.mu.Lock()
	fe.fail = true
	fe.mu.Unlock()
	if _, err := bob.RoomState(ctx, "b", RoomStateInput{RoomID: room, Refresh: true}); err == nil {
		t.Fatal("refresh without history succeeded")
	}
	s := must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room}))
	if s.Sync.SyncedSeq != 1 || s.Sync.RemoteSeq != 3 {
		t.Fatalf("sync: synced %d remote %d", s.Sync.SyncedSeq, s.Sync.RemoteSeq)
	}
	if s.Room.PreHash != nil {
		t.Fatal("pre_hash at seq 1")
	}
}

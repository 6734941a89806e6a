package connector

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// heldRefusal forwards the first live-stream request at once but hands its
// answer back only when release is closed: the host refuses the stream
// before the agent's join is accepted, and the engine reads the refusal
// after the join.
type heldRefusal struct {
	once    sync.Once
	got     chan struct{}
	release chan struct{}
}

func (h *heldRefusal) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if strings.HasSuffix(req.URL.Path, "/events/live") {
		first := false
		h.once.Do(func() { first = true })
		if first {
			close(h.got)
			<-h.release
		}
	}
	return resp, err
}

// A subscription refused for a reason the verified state contradicts (the
// stream was opened before this agent's join was accepted) follows again
// instead of ending: the agent still wakes on a mention.
func TestStaleRefusalDoesNotEndSubscription(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	hold := &heldRefusal{got: make(chan struct{}), release: make(chan struct{})}
	bob := openTest(t, t.TempDir(), testKey(t, "bob"), srv.URL, func(o *Options) {
		o.HTTPClient = &http.Client{Transport: hold}
	})
	defer bob.Close()
	room := createRoom(t, alice, srv.URL)

	// bob opens the room as a reader: its stream is refused (not a member).
	must[*RoomOpenResult](t)(bob.RoomOpen(ctx, "b", RoomOpenInput{Host: srv.URL, RoomID: room}))
	select {
	case <-hold.got:
	case <-time.After(20 * time.Second):
		t.Fatal("no live-stream request")
	}
	// bob joins while that refusal is still on its way back.
	must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker"}))
	close(hold.release)

	waitSynced(t, alice, room, 2)
	must[*WriteResult](t)(alice.SendMessage(ctx, "a", SendMessageInput{RoomID: room, Content: "Bob?",
		Mentions: []string{bob.AgentID().String()}}))
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		in := must[*InboxNextResult](t)(bob.InboxNext(ctx, "b", InboxNextInput{Kinds: []string{KindMention}, WaitMS: 1000}))
		if len(in.Items) > 0 {
			return
		}
	}
	t.Fatal("bob's subscription ended on a stale refusal: no mention reached the inbox")
}

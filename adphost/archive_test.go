package adphost_test

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
)

// failingReads is a MemoryStore whose log reads after failAfter fail
// once failAfter is set.
type failingReads struct {
	*adphost.MemoryStore
	failAfter atomic.Int64
}

func (f *failingReads) Records(ctx context.Context, room string, after int64, limit, maxBytes int) ([]*adp.Record, error) {
	if n := f.failAfter.Load(); n > 0 && after >= n {
		return nil, errors.New("test: the database went away")
	}
	return f.MemoryStore.Records(ctx, room, after, limit, maxBytes)
}

// TestArchiveStreamFails: an archive's records and transcript are read
// from the Store as they are sent, a page at a time; a Store that fails
// midway aborts the answer, so that the client sees a broken body rather
// than a short archive that looks whole.
func TestArchiveStreamFails(t *testing.T) {
	ctx := ctxT(t)
	store := &failingReads{MemoryStore: adphost.NewMemoryStore()}
	w := newWorld(t, &adphost.Options{Store: store, RateLimits: adphost.Unlimited(), MaxPageBytes: 1})
	alice := w.client("alice")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "archive"))).RoomID
	for range 5 {
		mustv(alice.SendMessage(ctx, room, text("m")))
	}
	w.clock.Advance(time.Second)
	mustv(alice.CloseRoom(ctx, room, adp.Notice{Reason: "done"}))
	manifest, records, err := alice.Archive(ctx, room)
	if err != nil || len(manifest) == 0 || len(records) == 0 {
		t.Fatalf("the archive of a readable Store: %v", err)
	}
	store.failAfter.Store(3)
	for _, path := range []string{"/archive.jsonl", "/archive.md"} {
		resp, err := w.hc.Get(w.url + "/v1/rooms/" + room + path)
		if err != nil {
			continue // aborted before its headers were sent
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Fatalf("%s read to its end (%d bytes) while the Store failed", path, len(body))
		}
	}
}

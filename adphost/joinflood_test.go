package adphost_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/identity"
)

// TestJoinFloodKeepsWritesMoving: a flood of join requests to a public
// room (approved at once, so no pending bound stops them) does not hold up
// the creator's writes to the room, nor its list of requests
// (adphosttest.CheckJoinFlood: 5,000 requests, a write p99 within 100 ms,
// every page within 5 s).
func TestJoinFloodKeepsWritesMoving(t *testing.T) {
	adphosttest.CheckJoinFlood(t, func(ctx context.Context) (adphosttest.FloodTarget, error) {
		w := newWorld(t, &adphost.Options{RateLimits: adphosttest.FloodLimits()})
		rec, err := w.client("alice").CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "flooded"))
		if err != nil {
			return adphosttest.FloodTarget{}, err
		}
		return adphosttest.FloodTarget{Base: w.url, HTTPClient: w.hc, Creator: key("alice"), Room: rec.RoomID, Now: w.clock.Now}, nil
	})
}

// spyStore is a MemoryStore that records the join-request calls and
// room loads made of it, and may hold one kind of call until released.
type spyStore struct {
	*adphost.MemoryStore
	mu    sync.Mutex
	calls []string
	hold  string        // the call to hold
	held  chan struct{} // closed when a held call arrives
	free  chan struct{} // closed to release it
}

func newSpyStore() *spyStore { return &spyStore{MemoryStore: adphost.NewMemoryStore()} }

func (s *spyStore) record(call string) {
	s.mu.Lock()
	s.calls = append(s.calls, call)
	hold := s.hold == call
	if hold {
		s.hold = ""
	}
	s.mu.Unlock()
	if hold {
		close(s.held)
		<-s.free
	}
}

// holdNext makes the next call named call wait until the returned
// release runs; held is closed when it arrives.
func (s *spyStore) holdNext(call string) (held chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold, s.held, s.free = call, make(chan struct{}), make(chan struct{})
	return s.held, sync.OnceFunc(func() { close(s.free) })
}

func (s *spyStore) reset() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

func (s *spyStore) TakeQuota(ctx context.Context, q adphost.Quota) error {
	if strings.HasSuffix(q.Key, "join-request") {
		s.record("TakeQuota")
	}
	return s.MemoryStore.TakeQuota(ctx, q)
}

func (s *spyStore) Snapshot(ctx context.Context, roomID string) (int64, []byte, error) {
	s.record("Snapshot")
	return s.MemoryStore.Snapshot(ctx, roomID)
}

func (s *spyStore) JoinRequests(ctx context.Context, roomID string) ([]*adp.JoinRequestResource, error) {
	s.record("JoinRequests")
	return s.MemoryStore.JoinRequests(ctx, roomID)
}

func (s *spyStore) CountPendingJoinRequests(ctx context.Context, roomID string, now int64) (int, error) {
	s.record("CountPendingJoinRequests")
	return s.MemoryStore.CountPendingJoinRequests(ctx, roomID, now)
}

func (s *spyStore) PendingJoinRequests(ctx context.Context, roomID string, now int64) ([]*adp.JoinRequestResource, error) {
	s.record("PendingJoinRequests")
	return s.MemoryStore.PendingJoinRequests(ctx, roomID, now)
}

func (s *spyStore) JoinRequestsAfter(ctx context.Context, roomID string, after adphost.JoinRequestKey, limit int) ([]*adp.JoinRequestResource, error) {
	s.record("JoinRequestsAfter")
	return s.MemoryStore.JoinRequestsAfter(ctx, roomID, after, limit)
}

func (s *spyStore) PutJoinRequest(ctx context.Context, jr *adp.JoinRequestResource) error {
	s.record("PutJoinRequest")
	return s.MemoryStore.PutJoinRequest(ctx, jr)
}

// TestJoinRequestOutsideRoomLock: a join request's quota, pending count
// and store write never hold the room's write lock: while each of them is
// held up in the Store, the creator's message write goes through.
func TestJoinRequestOutsideRoomLock(t *testing.T) {
	for _, call := range []string{"TakeQuota", "CountPendingJoinRequests", "PutJoinRequest"} {
		t.Run(call, func(t *testing.T) {
			ctx := ctxT(t)
			st := newSpyStore()
			w := newWorld(t, &adphost.Options{Store: st, RateLimits: adphosttest.FloodLimits()})
			alice := w.client("alice")
			room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityRestricted, "busy"))).RoomID
			held, release := st.holdNext(call)
			defer release()
			applied := make(chan error, 1)
			go func() {
				_, err := w.client("applicant").RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker})
				applied <- err
			}()
			select {
			case <-held:
			case err := <-applied:
				t.Fatalf("the join request (%v) never called %s", err, call)
			}
			wrote := make(chan error, 1)
			go func() {
				_, err := alice.SendMessage(ctx, room, text("while an applicant waits on the store"))
				wrote <- err
			}()
			select {
			case err := <-wrote:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("the room's write waited for the join request's %s", call)
			}
			release()
			if err := <-applied; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestJoinRequestQuotaFirst: an applicant over its join-request quota is
// refused before the host reads anything for it, not even the room (here
// on a second process, whose cache does not hold it).
func TestJoinRequestQuotaFirst(t *testing.T) {
	ctx := ctxT(t)
	st := newSpyStore()
	w := newWorld(t, &adphost.Options{Store: st, RateLimits: adphosttest.FloodLimits()})
	room := mustv(w.client("alice").CreateRoom(ctx, roomSpec(t, adp.VisibilityRestricted, "quota"))).RoomID
	other := newWorld(t, &adphost.Options{Store: st, RateLimits: adphosttest.FloodLimits()})
	spam := w.client("spammer")
	for range 10 {
		mustv(spam.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	}
	st.reset()
	_, err := other.client("spammer").RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker})
	wantCode(t, err, identity.ErrRateLimited, 429)
	if calls := st.reset(); !slices.Equal(calls, []string{"TakeQuota"}) {
		t.Fatalf("an applicant over its quota cost %v", calls)
	}
}

// TestJoinRequestListPagedInStore: a page of the reviewers' list reads
// that page from the Store (one more request, to know whether a page
// follows), never the room's whole list, and the pages meet end to end.
func TestJoinRequestListPagedInStore(t *testing.T) {
	ctx := ctxT(t)
	st := newSpyStore()
	w := newWorld(t, &adphost.Options{Store: st, RateLimits: adphosttest.FloodLimits()})
	room := mustv(w.client("alice").CreateRoom(ctx, roomSpec(t, adp.VisibilityRestricted, "paged"))).RoomID
	for i := range 25 {
		w.clock.Advance(time.Millisecond)
		mustv(w.client(fmt.Sprint("applicant", i)).RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker}))
	}
	st.reset()
	var got []string
	for path, pages := "/v1/rooms/"+room+"/join-requests?limit=10", 0; path != ""; pages++ {
		if pages == 3 {
			t.Fatalf("more than 3 pages of 25 requests: %v", got)
		}
		a := w.probe("GET", path, "alice", nil, room)
		var page identity.List[adp.JoinRequestResource]
		if a.status != 200 || json.Unmarshal([]byte(strings.ReplaceAll(a.body, "ROOM", room)), &page) != nil {
			t.Fatalf("page %d: %v", pages, a)
		}
		for _, jr := range page.Result {
			got = append(got, jr.Request.Applicant.String())
		}
		path = ""
		if page.NextCursor != "" {
			path = "/v1/rooms/" + room + "/join-requests?limit=10&cursor=" + url.QueryEscape(page.NextCursor)
		}
	}
	var want []string
	for i := range 25 {
		want = append(want, id(fmt.Sprint("applicant", i)).String())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listed %d requests, not the 25 in creation order", len(got))
	}
	if calls := st.reset(); !slices.Equal(calls, []string{"JoinRequestsAfter", "JoinRequestsAfter", "JoinRequestsAfter"}) {
		t.Fatalf("three pages read %v", calls)
	}
}

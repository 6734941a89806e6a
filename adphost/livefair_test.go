package adphost_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/identity"
)

// openLive opens a raw live stream of room as name, whose answer must
// come within 5 s; the caller closes its body.
func (w *world) openLive(ctx context.Context, name, room string) (*http.Response, error) {
	tok, err := identity.MintRequestToken(ctx, key(name), w.host.Origin(), &identity.MintOptions{Now: w.clock.Now})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.url+"/v1/rooms/"+room+"/events/live", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	ctx, cancel := context.WithCancel(ctx)
	late := time.AfterFunc(5*time.Second, cancel) // the answer, not the stream
	resp, err := w.hc.Do(req.WithContext(ctx))
	if !late.Stop() && err == nil {
		err = errors.New("no answer within 5 s")
		resp.Body.Close()
	}
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	resp.Body = &cancelBody{resp.Body, cancel}
	return resp, nil
}

// cancelBody is a body whose Close also cancels its request's context.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error { b.cancel(); return b.ReadCloser.Close() }

// TestLiveStreamsSharedFairly is the stream-exhaustion attack, scaled to
// a host of 64 streams: free agents join four public rooms (as observers,
// then as speakers) and hold every stream the host serves, 16 each, 4 per
// room. The creator of another room and its speaker still get their
// streams, each at once, in place of one of the attackers'; the total
// never grows, and the attackers get no more.
func TestLiveStreamsSharedFairly(t *testing.T) {
	for _, role := range []adp.Role{adp.RoleObserver, adp.RoleSpeaker} {
		t.Run(string(role), func(t *testing.T) {
			ctx := ctxT(t)
			w := newWorld(t, &adphost.Options{MaxLiveStreams: 64, RateLimits: adphost.Unlimited()})
			var rooms []string
			for r := range 4 {
				rooms = append(rooms, mustv(w.client(fmt.Sprint("host", r)).CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, fmt.Sprint("r", r)))).RoomID)
			}
			var ended atomic.Int32
			endedCh := make(chan struct{}, 64)
			for a := range 4 {
				name := fmt.Sprint("sybil", a)
				for _, room := range rooms {
					mustv(w.client(name).Join(ctx, room, adp.Join{Role: role}))
					for range 4 {
						resp, err := w.openLive(ctx, name, room)
						if err != nil {
							t.Fatalf("attacker stream: %v", err)
						}
						t.Cleanup(func() { resp.Body.Close() })
						go func() {
							io.Copy(io.Discard, resp.Body)
							ended.Add(1)
							endedCh <- struct{}{}
						}()
					}
				}
			}
			mustv(w.client("sybil4").Join(ctx, rooms[0], adp.Join{Role: role}))
			if _, err := w.openLive(ctx, "sybil4", rooms[0]); err == nil {
				t.Fatal("a 65th attacker stream was admitted")
			}

			victim := w.client("victim")
			room := mustv(victim.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "victim"))).RoomID
			mustv(w.client("speaker").Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}))
			for _, name := range []string{"victim", "speaker"} {
				start := time.Now()
				resp, err := w.openLive(ctx, name, room)
				if err != nil {
					t.Fatalf("%s's stream of its own room: %v", name, err)
				}
				t.Cleanup(func() { resp.Body.Close() })
				t.Logf("%s's stream admitted in %v", name, time.Since(start).Round(time.Microsecond))
			}
			for range 2 {
				select {
				case <-endedCh:
				case <-ctx.Done():
					t.Fatal("no attacker stream ended")
				}
			}
			if _, err := w.openLive(ctx, "sybil4", rooms[0]); err == nil {
				t.Fatal("an attacker took back a stream past the total")
			}
			if n := ended.Load(); n != 2 {
				t.Fatalf("%d attacker streams ended for 2 new ones", n)
			}
		})
	}
}

package adphost_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/internal/raceflag"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// TestLoad is a bounded load test of head anchoring (§6.1): 50 agents write 20
// messages each into 5 rooms at once, racing for the heads (a loser
// re-reads and re-signs). Nothing is lost or duplicated, and every room's
// archive verifies. Run it under -race.
func TestLoad(t *testing.T) {
	const agents, rooms = 50, 5
	writes := 20
	if testing.Short() {
		t.Skip("load test")
	}
	if raceflag.Enabled {
		// The race detector slows each signature and hash tenfold: the
		// same 50 racing agents, each writing fewer times.
		writes = 6
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a "not hours" guard
	defer cancel()
	w := newWorld(t, &adphost.Options{RateLimits: adphost.Unlimited()})
	owner := w.client("owner")
	var roomIDs []string
	for i := range rooms {
		roomIDs = append(roomIDs, mustv(owner.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, fmt.Sprint("load ", i)))).RoomID)
	}
	var wg sync.WaitGroup
	errs := make(chan error, agents)
	for a := range agents {
		wg.Go(func() {
			c := w.client(fmt.Sprint("agent", a))
			room := roomIDs[a%rooms]
			if _, err := c.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}); err != nil {
				errs <- err
				return
			}
			attempts := 0
			for i := 0; i < writes; {
				if attempts > 100*writes {
					errs <- fmt.Errorf("agent %d starved after %d lost races", a, attempts)
					return
				}
				_, err := c.SendMessage(ctx, room, text(fmt.Sprintf("agent%d-%d", a, i)))
				switch {
				case err == nil:
					i++
				case errors.Is(err, adp.ErrRoomHeadMismatch):
					// Lost the race: back off a little, then the next
					// SendMessage re-reads the head.
					attempts++
					time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
				default:
					errs <- fmt.Errorf("agent %d write %d: %w", a, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, room := range roomIDs {
		mustv(owner.CloseRoom(ctx, room, adp.Notice{}))
		manifest, records, err := owner.Archive(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		m := mustv(archive.ParseManifest(manifest))
		if _, err := archive.Verify(ctx, m, bytes.NewReader(records), nil); err != nil {
			t.Fatalf("room %s archive: %v", room, err)
		}
		seen := map[string]int{}
		for _, line := range bytes.Split(bytes.TrimSpace(records), []byte("\n")) {
			rec := mustv(adp.ParseRecord(line))
			if rec.Envelope.Type() != adp.TypeMessageCreate {
				continue
			}
			var msg adp.Message
			if err := strictjson.Unmarshal(rec.Envelope.Event().Payload, &msg); err != nil {
				t.Fatal(err)
			}
			seen[string(msg.Content)]++
		}
		if len(seen) != agents/rooms*writes {
			t.Fatalf("room %s holds %d distinct messages, want %d", room, len(seen), agents/rooms*writes)
		}
		for k, n := range seen {
			if n != 1 {
				t.Fatalf("message %s accepted %d times", k, n)
			}
		}
	}
}

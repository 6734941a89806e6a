package adphost_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
)

// TestRoomLimits is D16: by default the host applies §21's recommended
// room duration (10 minutes to 7 days) and caps of 100 speaking members
// and 1,000 observers per room; all four are Options, and a negative
// value lifts one.
func TestRoomLimits(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, &adphost.Options{RateLimits: adphost.Unlimited(), MaxSpeakers: 2, MaxObservers: 1})
	alice := w.client("alice")
	lasting := func(d time.Duration) adp.RoomCreate {
		s := roomSpec(t, adp.VisibilityPublic, "limits")
		s.EndTime = t0.Add(d).UnixMilli()
		return s
	}
	for _, d := range []time.Duration{9 * time.Minute, 7*24*time.Hour + time.Millisecond} {
		_, err := alice.CreateRoom(ctx, lasting(d))
		wantCode(t, err, adp.ErrInvalidEvent, 400)
	}
	mustv(alice.CreateRoom(ctx, lasting(10*time.Minute)))
	room := mustv(alice.CreateRoom(ctx, lasting(7*24*time.Hour))).RoomID
	end := t0.Add(8 * 24 * time.Hour).UnixMilli()
	_, err := alice.UpdateRoom(ctx, room, adp.RoomUpdate{EndTime: &end})
	wantCode(t, err, adp.ErrInvalidEvent, 400)

	// Two speaking members (the creator is one of them) and one observer.
	mustv(w.client("bob").Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}))
	_, err = w.client("carol").Join(ctx, room, adp.Join{Role: adp.RoleSpeaker})
	wantCode(t, err, adp.ErrMaxSpeakersExceeded, 400)
	mustv(w.client("carol").Join(ctx, room, adp.Join{Role: adp.RoleObserver}))
	_, err = w.client("dave").Join(ctx, room, adp.Join{Role: adp.RoleObserver})
	wantCode(t, err, adp.ErrRoleNotAllowed, 400)

	// Lifted bounds.
	w = newWorld(t, &adphost.Options{MinRoomDuration: -1, MaxRoomDuration: -1})
	alice = w.client("alice")
	mustv(alice.CreateRoom(ctx, lasting(time.Minute)))
	mustv(alice.CreateRoom(ctx, lasting(30*24*time.Hour)))
}

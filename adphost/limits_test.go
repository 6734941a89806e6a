package adphost_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
)

// TestRoomLimits: by default the host applies §21's recommended
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

// TestQuotasPublished: the discovery document publishes the quota
// policy the host enforces (§21 SHOULD) in its "quotas" member, which
// adp.Client's strict-but-open discovery parser keeps aside; a limit the
// host lifted is absent.
func TestQuotasPublished(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, &adphost.Options{RateLimits: &adphost.RateLimits{Message: 7, StatusWrites: -1}, MaxSpeakers: 50, MinRoomDuration: -1})
	d := mustv(w.client("alice").Discover(ctx))
	var got adphost.QuotaPolicy
	if err := json.Unmarshal(d.Extra["quotas"], &got); err != nil {
		t.Fatalf("quotas %s: %v", d.Extra["quotas"], err)
	}
	if got != w.host.Quotas() {
		t.Fatalf("published %+v, enforced %+v", got, w.host.Quotas())
	}
	if got.Message != 7 || got.Signal != 60 || got.Control != 10 || got.StatusWrites != 0 || got.MaxHinted != 600 ||
		got.MaxSpeakers != 50 || got.MaxObservers != 1000 || got.MinRoomDuration != 0 ||
		got.MaxRoomDuration != (7*24*time.Hour).Milliseconds() || got.MaxPayloadBytes != 64<<10 ||
		got.MaxHintedPayloadBytes != 256<<10 || got.MaxPageBytes != adphost.DefaultMaxPageBytes {
		t.Fatalf("published %+v", got)
	}
}

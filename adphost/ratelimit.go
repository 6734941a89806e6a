package adphost

import (
	"context"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
)

// RateLimits are per-agent quotas in events per minute (§21). A type's
// rate_hint replaces its kind's quota for that type, capped at MaxHinted,
// and all of an agent's hinted events together stay within MaxHinted.
// Zero fields take the defaults; a negative field means unlimited.
type RateLimits struct {
	// Message, Signal and Control are the §21 defaults per kind: 5, 60
	// and 10. Lifecycle writes (room.create, room.update, room.close,
	// room.cancel) count as control.
	Message, Signal, Control int
	// JoinRequests and StatusWrites limit the two JWT-authenticated
	// writes; the defaults are 10 and 60 (the text says only SHOULD).
	JoinRequests, StatusWrites int
	// MaxHinted caps a rate_hint, and is the one ceiling all of an
	// agent's hinted events share, whatever their types and rooms; 0
	// means 600.
	MaxHinted int
}

// DefaultRateLimits returns the §21 defaults.
func DefaultRateLimits() RateLimits {
	return RateLimits{Message: 5, Signal: 60, Control: 10, JoinRequests: 10, StatusWrites: 60, MaxHinted: 600}
}

// Unlimited returns limits that never refuse, for load tests.
func Unlimited() *RateLimits {
	return &RateLimits{Message: -1, Signal: -1, Control: -1, JoinRequests: -1, StatusWrites: -1, MaxHinted: -1}
}

func (l *RateLimits) withDefaults() RateLimits {
	d, o := DefaultRateLimits(), *l
	for _, p := range []struct{ v, d *int }{{&o.Message, &d.Message}, {&o.Signal, &d.Signal}, {&o.Control, &d.Control},
		{&o.JoinRequests, &d.JoinRequests}, {&o.StatusWrites, &d.StatusWrites}, {&o.MaxHinted, &d.MaxHinted}} {
		if *p.v == 0 {
			*p.v = *p.d
		}
	}
	return o
}

// rateKey names one quota: an agent, and a kind (host-wide) or a hinted
// type (per room).
type rateKey struct {
	agent identity.AgentID
	room  string
	class string
}

// rateClass picks the quota an event counts against.
func (h *Host) rateClass(hr *hostRoom, ev *adp.Event) (rateKey, int) {
	key := rateKey{agent: ev.Actor}
	switch adp.BuiltinCategory(ev.Type) {
	case adp.CategoryMessage:
		key.class = "message"
		return key, h.limits.Message
	case adp.CategorySignal:
		key.class = "signal"
		return key, h.limits.Signal
	case adp.CategoryControl, adp.CategoryLifecycle:
		key.class = "control"
		return key, h.limits.Control
	}
	def := hr.reg.Lookup(ev.Type)
	if def == nil { // the room refuses it with type_not_defined
		return key, -1
	}
	if def.RateHint > 0 {
		limit := int(def.RateHint)
		if h.limits.MaxHinted > 0 {
			limit = min(limit, h.limits.MaxHinted)
		}
		return rateKey{agent: ev.Actor, room: hr.id, class: "type:" + ev.Type}, limit
	}
	key.class = string(def.Kind)
	switch def.Kind {
	case adp.KindMessage:
		return key, h.limits.Message
	case adp.KindSignal:
		return key, h.limits.Signal
	}
	return key, h.limits.Control
}

// hintedCeiling is the quota all of an agent's hinted events share
// (host-wide, MaxHinted), besides each type's own: a hint adjusts a
// default "within host limits" (§21), so declaring many hinted types does
// not multiply what one agent may send. ok is false for an event that is
// not hinted, or when MaxHinted is unlimited.
func (h *Host) hintedCeiling(key rateKey, ev *adp.Event) (rateKey, int, bool) {
	if key.room == "" || h.limits.MaxHinted < 0 { // only hinted keys name a room
		return rateKey{}, 0, false
	}
	return rateKey{agent: ev.Actor, class: "hinted"}, h.limits.MaxHinted, true
}

// String is the key's name in the Store's quota windows.
func (k rateKey) String() string { return k.agent.String() + "|" + k.room + "|" + k.class }

// rateWindow is the quota window of §21, one minute in ms.
const rateWindow = int64(time.Minute / time.Millisecond)

// take counts one use of key against limit in the Store's shared window,
// or refuses with rate_limited; for the JWT writes (join requests and
// statuses), which have no record to append with.
func (h *Host) take(ctx context.Context, key rateKey, limit int, now time.Time) error {
	if limit < 0 {
		return nil
	}
	return h.store.TakeQuota(ctx, Quota{Key: key.String(), Limit: limit, Now: now.UnixMilli(), Window: rateWindow})
}

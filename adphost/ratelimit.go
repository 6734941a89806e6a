package adphost

import (
	"sync"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
)

// RateLimits are per-agent quotas in events per minute (§21). A type's
// rate_hint replaces its kind's quota for that type, capped at MaxHinted.
// Zero fields take the defaults; a negative field means unlimited.
type RateLimits struct {
	// Message, Signal and Control are the §21 defaults per kind: 5, 60
	// and 10. Lifecycle writes (room.create, room.update, room.close,
	// room.cancel) count as control.
	Message, Signal, Control int
	// JoinRequests and StatusWrites limit the two JWT-authenticated
	// writes; the defaults are 10 and 60 (the text says only SHOULD).
	JoinRequests, StatusWrites int
	// MaxHinted caps a rate_hint; 0 means 600.
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

// limiter keeps a sliding one-minute window of accepted events per key.
// Every window holds at most its limit of timestamps, and idle keys are
// swept, so memory follows the agents active within the last minute.
type limiter struct {
	mu        sync.Mutex
	windows   map[rateKey][]int64
	lastSweep int64
}

func newLimiter() *limiter { return &limiter{windows: map[rateKey][]int64{}} }

const rateWindow = int64(time.Minute / time.Millisecond)

// check refuses with rate_limited when key used its limit within the last
// minute. It does not count the event: consume does, once it is accepted.
func (l *limiter) check(key rateKey, limit int, now time.Time) error {
	if limit < 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.window(key, limit, now.UnixMilli())
	return err
}

// window trims key's window to the last minute, stores it and returns it,
// refusing with rate_limited when it already holds limit uses. l.mu is held.
func (l *limiter) window(key rateKey, limit int, ms int64) ([]int64, error) {
	w := trim(l.windows[key], ms)
	l.windows[key] = w
	if len(w) >= limit {
		return nil, identity.Errorf(identity.CodeRateLimited, "%s quota of %d per minute is used up", key.class, limit)
	}
	return w, nil
}

// consume counts one accepted event.
func (l *limiter) consume(key rateKey, limit int, now time.Time) {
	if limit < 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ms := now.UnixMilli()
	if ms-l.lastSweep > rateWindow {
		for k, w := range l.windows {
			if len(trim(w, ms)) == 0 {
				delete(l.windows, k)
			}
		}
		l.lastSweep = ms
	}
	w := append(trim(l.windows[key], ms), ms)
	if len(w) > limit {
		w = w[len(w)-limit:]
	}
	l.windows[key] = w
}

// trim drops timestamps older than one minute.
func trim(w []int64, ms int64) []int64 {
	i := 0
	for i < len(w) && w[i] <= ms-rateWindow {
		i++
	}
	return w[i:]
}

// take is check and consume in one step, for the JWT writes.
func (l *limiter) take(key rateKey, limit int, now time.Time) error {
	if limit < 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ms := now.UnixMilli()
	w, err := l.window(key, limit, ms)
	if err != nil {
		return err
	}
	l.windows[key] = append(w, ms)
	return nil
}

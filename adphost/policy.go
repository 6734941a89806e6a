package adphost

import (
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
)

// The §21 recommended room limits, the defaults of Options.
const (
	DefaultMinRoomDuration = 10 * time.Minute
	DefaultMaxRoomDuration = 7 * 24 * time.Hour
	DefaultMaxSpeakers     = 100
	DefaultMaxObservers    = 1000
)

// roomLimits are the host's room limits (§21), on top of a room's own
// policy.max_speakers.
type roomLimits struct {
	minDuration, maxDuration time.Duration // 0: none
	speakers, observers      int           // 0: none
}

func newRoomLimits(o *Options) roomLimits {
	pick := func(v, def time.Duration) time.Duration {
		switch {
		case v < 0:
			return 0
		case v == 0:
			return def
		}
		return v
	}
	count := func(v, def int) int {
		switch {
		case v < 0:
			return 0
		case v == 0:
			return def
		}
		return v
	}
	return roomLimits{
		minDuration: pick(o.MinRoomDuration, DefaultMinRoomDuration),
		maxDuration: pick(o.MaxRoomDuration, DefaultMaxRoomDuration),
		speakers:    count(o.MaxSpeakers, DefaultMaxSpeakers),
		observers:   count(o.MaxObservers, DefaultMaxObservers),
	}
}

// checkRoomLimits applies the host's room limits to a write before the
// rule table judges it: the duration of a room.create, or of the schedule
// a room.update leaves (invalid_event), and the number of active speaking
// members (max_speakers_exceeded) and observers (role_not_allowed) a
// join, an approving review or a role update would reach. A payload that
// does not parse is left to the rule table.
func (h *Host) checkRoomLimits(room *adp.Room, ev *adp.Event) error {
	l := h.roomLimits
	payload, err := ev.Builtin() // decoded once: the rule table reuses it
	if err != nil {
		return nil
	}
	switch p := payload.(type) {
	case *adp.RoomCreate:
		return l.duration(p.StartTime, p.EndTime)
	case *adp.RoomUpdate:
		if p.StartTime != nil || p.EndTime != nil {
			c := room.Contract()
			start, end := c.StartTime, c.EndTime
			if p.StartTime != nil {
				start = *p.StartTime
			}
			if p.EndTime != nil {
				end = *p.EndTime
			}
			return l.duration(start, end)
		}
	case *adp.Join:
		if !isActive(room, ev.Actor) {
			return l.seat(room, p.Role)
		}
	case *adp.JoinReview:
		if p.Decision == adp.DecisionApprove && !isActive(room, p.Request.Applicant) {
			return l.seat(room, p.Role)
		}
	case *adp.RoleUpdate:
		if m, ok := room.Member(p.Member); ok && m.Status == adp.MemberActive && speaking(m.Role) != speaking(p.Role) {
			return l.seat(room, p.Role)
		}
	}
	return nil
}

// duration refuses a schedule outside the host's range.
func (l roomLimits) duration(start, end int64) error {
	d := time.Duration(end-start) * time.Millisecond
	switch {
	case end <= start:
		return nil // the rule table's error
	case l.minDuration > 0 && d < l.minDuration:
		return identity.Errorf(identity.CodeInvalidEvent, "the room lasts %v; this host's rooms last at least %v", d, l.minDuration)
	case l.maxDuration > 0 && d > l.maxDuration:
		return identity.Errorf(identity.CodeInvalidEvent, "the room lasts %v; this host's rooms last at most %v", d, l.maxDuration)
	}
	return nil
}

// seat refuses one more active member of role past the host's caps.
func (l roomLimits) seat(room *adp.Room, role adp.Role) error {
	speakers, observers := 0, 0
	for _, m := range room.Members() {
		if m.Status != adp.MemberActive {
			continue
		}
		if speaking(m.Role) {
			speakers++
		} else if m.Role == adp.RoleObserver {
			observers++
		}
	}
	switch {
	case speaking(role) && l.speakers > 0 && speakers >= l.speakers:
		return identity.Errorf(adp.CodeMaxSpeakersExceeded, "this host allows at most %d speaking members per room", l.speakers)
	case role == adp.RoleObserver && l.observers > 0 && observers >= l.observers:
		return identity.Errorf(adp.CodeRoleNotAllowed, "this host allows at most %d observers per room", l.observers)
	}
	return nil
}

// speaking reports a role that speaks (moderator or speaker), as the
// room's max_speakers counts them.
func speaking(r adp.Role) bool { return r == adp.RoleModerator || r == adp.RoleSpeaker }

package adp

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// Created reports whether the room.create has been accepted.
func (r *Room) Created() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.st.Created
}

// Status returns the room status at time at: the recorded status advanced
// by start_time and end_time (§8).
func (r *Room) Status(at time.Time) Status {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.statusAt(at.UnixMilli())
}

// Creator returns the creator's Agent ID and the room.create created_at.
func (r *Room) Creator() (identity.AgentID, int64) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.st.Creator, r.st.CreatedAt
}

// Contract returns a copy of the current contract.
func (r *Room) Contract() Contract {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c := r.st.Contract
	c.Tags = slices.Clone(c.Tags)
	c.Policy.ModeratorAgentIDs = slices.Clone(c.Policy.ModeratorAgentIDs)
	c.Policy.Invites = maps.Clone(c.Policy.Invites)
	c.Policy.OpenRoles = slices.Clone(c.Policy.OpenRoles)
	return c
}

// Member returns the membership of id, if it ever joined.
func (r *Room) Member(id identity.AgentID) (Member, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if m := r.st.Members[id]; m != nil {
		return *m, true
	}
	return Member{}, false
}

// ReviewSeq returns the seq of the room.join.review that decided join
// request id, with ok false when the log holds none (the request is still
// pending, unknown, or was approved automatically in a public room). A
// host uses it to bring its stored requests in line with the log.
func (r *Room) ReviewSeq(id string) (seq int64, ok bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if rv := r.st.Reviews[id]; rv != nil && !rv.Auto {
		return rv.Seq, true
	}
	return 0, false
}

// Members returns every membership, in the order the members joined.
func (r *Room) Members() []Member {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Member, 0, len(r.st.Members))
	for _, m := range r.st.Members {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.JoinedSeq, b.JoinedSeq) })
	return out
}

// Banned reports whether id is banned from the room (§10.5).
func (r *Room) Banned(id identity.AgentID) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.st.Bans[id]
}

// Head returns the room head: the latest non-signal record (seed §6.1);
// in the 2026-09-24 draft the latest genesis, contract or control record
// (§5.1), so messages do not move it.
func (r *Room) Head() RecordRef {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.st.Head
}

// Latest returns the latest record's acceptance fields (§16).
func (r *Room) Latest() Latest {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.st.Latest
}

// Registry returns a copy of the type registry in force: the room's types
// change only through its log (room.create, type.define), so a Declare on
// the copy never reaches the room, and later writes to the room never
// change the copy. The copy shares the definitions, which are immutable
// by contract (see [packs.Definition]), so it costs two small map copies; it
// may be read from any number of goroutines.
func (r *Room) Registry() *packs.Registry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.st.Registry.Clone()
}

// BaseFor returns the Base a new event of type typ should carry (seed
// §6.1, 2026-09-24 §5.1): see [NextBase]. In the seed that is the latest
// record for signal types (membership events and custom signal kinds)
// and the room head for every other type; in the 2026-09-24 draft the
// latest record for every type, which each class's rule admits.
func (r *Room) BaseFor(typ string) (Base, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.st.Created {
		return Base{}, identity.NewError(CodeRoomNotFound, "the room has no room.create yet")
	}
	var def *packs.Definition
	if !r.draft.IsBuiltin(typ) {
		if def = r.st.Registry.Lookup(typ); def == nil {
			return Base{}, identity.Errorf(CodeTypeNotDefined, "type %q is not defined in this room", clip(typ))
		}
	}
	class, ok := ClassOf(r.draft, typ, def)
	if !ok {
		return Base{}, identity.Errorf(identity.CodeInvalidEvent, "%s carries no base", clip(typ))
	}
	latest := RecordRef{Seq: r.st.Latest.Seq, Hash: r.st.Latest.Hash}
	return NextBase(r.draft, class, r.id, r.st.Head, latest), nil
}

// CheckJoinRequest judges a room.join.request a host is asked to hold
// (2026-09-24 §10) at time at, and returns its payload: the envelope must
// verify (Agent Identity hash and signature; the live window and nonce
// are the host's [envelope.Verifier]'s), be a room.join.request for this
// room, which must exist and not have ended or been cancelled; the actor
// must not be an active member, and the role must be allowed by the
// policy (observer only where observers are). A banned agent may still
// ask: its request is held for review, never approved automatically. A
// draft without signed join requests refuses with invalid_event.
func (r *Room) CheckJoinRequest(ctx context.Context, env *envelope.Envelope, at time.Time) (*JoinRequestPayload, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.rules.signedJoin {
		return nil, identity.Errorf(identity.CodeInvalidEvent, "the %s draft has no room.join.request", r.draft)
	}
	if err := env.Verify(); err != nil {
		return nil, err
	}
	ev, err := ParseEventIn(r.draft, env)
	if err != nil {
		return nil, err
	}
	switch {
	case ev.Type != TypeRoomJoinRequest:
		return nil, identity.Errorf(identity.CodeInvalidEvent, "a join request is a room.join.request, not a %s", clip(ev.Type))
	case !r.st.Created:
		return nil, identity.Errorf(CodeRoomNotFound, "room %q has no room.create yet", clip(r.id))
	case ev.RoomID != r.id:
		return nil, identity.Errorf(identity.CodeInvalidEvent, "event room_id %q is not this room (%q)", clip(ev.RoomID), clip(r.id))
	}
	if err := r.checkState(ev.Type, r.statusAt(r.clock(at))); err != nil {
		return nil, err
	}
	v, err := checkBuiltinPayload(r.draft, ev.Type, ev.Payload)
	if err != nil {
		return nil, err
	}
	p := v.(*JoinRequestPayload)
	if r.activeMember(ev.Actor) != nil {
		return nil, invalid("the actor is already an active member")
	}
	if err := r.checkRole(p.Role); err != nil {
		return nil, err
	}
	return p, nil
}

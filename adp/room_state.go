package adp

import (
	"cmp"
	"slices"
	"time"

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

// Head returns the room head: the latest non-signal record (§6.1).
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

// BaseFor returns the Base a new event of type typ must carry (§6.1): the
// latest record for signal types (membership events and custom signal
// kinds), the room head for every other type.
func (r *Room) BaseFor(typ string) (Base, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.st.Created {
		return Base{}, identity.NewError(CodeRoomNotFound, "the room has no room.create yet")
	}
	signal := BuiltinCategory(typ) == CategorySignal
	if !IsBuiltin(typ) {
		def := r.st.Registry.Lookup(typ)
		if def == nil {
			return Base{}, identity.Errorf(CodeTypeNotDefined, "type %q is not defined in this room", clip(typ))
		}
		signal = def.Kind == KindSignal
	}
	if signal {
		return Base{RoomID: r.id, Seq: r.st.Latest.Seq, Hash: r.st.Latest.Hash}, nil
	}
	return Base{RoomID: r.id, Seq: r.st.Head.Seq, Hash: r.st.Head.Hash}, nil
}

package adp

import (
	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/packs"
)

// snapshot is the persistent form of a Room.
type snapshot struct {
	Version int    `json:"version"`
	ID      string `json:"id"`
	// Draft is the room's draft, omitted for the default one (so that a
	// snapshot of the default draft is what it always was).
	Draft    Draft          `json:"draft,omitzero"`
	State    state          `json:"state"`
	Registry packs.Snapshot `json:"registry"`
	// Records and Events are the MemoryIndex; a custom Index persists
	// itself.
	Records []envelope.Hash `json:"records,omitzero"`
	Events  []envelope.Hash `json:"events,omitzero"`
}

// Snapshot returns the room state as strict JSON, for a host to persist and
// RestoreRoom to load. With the default MemoryIndex the index is included;
// a custom Index is the caller's to persist.
//
// The index is most of a long room's snapshot, so it is written without
// reflection, and its two hash lists are kept as text between snapshots
// (the event hashes sorted, so that the bytes depend only on the
// history): each snapshot encodes only the records and events accepted
// since the previous one, and merges the new events in.
// The bytes are those json.Marshal(…, json.Deterministic(true)) gives for
// the whole snapshot struct (TestSnapshotEncoding).
func (r *Room) Snapshot() ([]byte, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := snapshot{Version: 1, ID: r.id, Draft: r.snapshotDraft(), State: r.st, Registry: r.st.Registry.Snapshot()}
	head, err := json.Marshal(s, json.Deterministic(true))
	m, ok := r.index.(*MemoryIndex)
	if err != nil || !ok {
		return head, err
	}
	records, events := m.snapshotLists()
	b := make([]byte, 0, len(head)+len(records)+len(events)+len(`,"records":[],"events":[]}`))
	b = append(b, head[:len(head)-1]...) // without the closing brace
	// omitzero omits only a nil slice; the events are never nil.
	if m.records != nil {
		b = appendList(b, `,"records":[`, records)
	}
	b = appendList(b, `,"events":[`, events)
	return append(b, '}'), nil
}

// snapshotDraft is the room's draft as a snapshot records it: zero for
// the default.
func (r *Room) snapshotDraft() Draft {
	if r.draft == DefaultDraft {
		return 0
	}
	return r.draft
}

// appendList appends name and the items (each ending in a comma) as a
// JSON array, as json.Marshal writes a []envelope.Hash member.
func appendList(b []byte, name string, items []byte) []byte {
	b = append(b, name...)
	if len(items) > 0 {
		b = append(b, items[:len(items)-1]...)
	}
	return append(b, ']')
}

// RestoreRoom loads a Snapshot. opts must configure the room as it was
// (same Packs fetcher, and the same custom Index if one was used).
func RestoreRoom(b []byte, opts *RoomOptions) (*Room, error) {
	var s snapshot
	if err := strictjson.Unmarshal(b, &s); err != nil {
		return nil, identity.Wrap(identity.CodeInvalidRequest, "room snapshot", err)
	}
	if s.Version != 1 {
		return nil, identity.Errorf(identity.CodeInvalidRequest, "room snapshot version %d is not supported", s.Version)
	}
	var want Draft
	if opts != nil {
		want = opts.Draft
	}
	if s.Draft.OrDefault() != want.OrDefault() {
		return nil, identity.Errorf(identity.CodeInvalidRequest, "room snapshot follows the %s draft; the options name the %s draft", s.Draft.OrDefault(), want.OrDefault())
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	r := NewRoom(s.ID, opts)
	reg, err := packs.Restore(s.Registry, r.packOptions())
	if err != nil {
		return nil, err
	}
	r.st = s.State
	r.st.Registry = reg
	if r.st.Members == nil {
		r.st.Members = map[identity.AgentID]*Member{}
	}
	if m, ok := r.index.(*MemoryIndex); ok && (opts == nil || opts.Index == nil) {
		if n := int64(len(s.Records)); n != r.st.Latest.Seq || n > 0 && (s.Records[n-1] != r.st.Latest.Hash || s.Records[r.st.Head.Seq-1] != r.st.Head.Hash) {
			return nil, identity.NewError(identity.CodeInvalidRequest, "room snapshot index does not match its latest record and head")
		}
		m.records = s.Records
		for _, h := range s.Events {
			m.events[h] = struct{}{}
		}
		m.restoreSorted(s.Events)
	}
	return r, nil
}

// check validates a decoded snapshot as strictly as live input: a snapshot
// is bytes from storage, and a room restored from a doctored one would
// judge every later write by state no history could have produced (a
// member with role "overlord", a review decided "maybe", a seq from the
// future). The contract passes the room.create payload rules; members,
// bans and reviews use only the protocol's vocabularies, and every seq
// names a record the room holds. It does not replay history, so it cannot
// prove the state is the one the log produces; it proves the state is one
// the rules could have produced field by field.
func (s *snapshot) check() error {
	st := &s.State
	l := st.Latest
	switch {
	case s.ID == "":
		return badSnapshot("room id is empty")
	case l.Seq < 0 || l.ReceivedAt < 0:
		return badSnapshot("latest record seq %d / received_at %d is negative", l.Seq, l.ReceivedAt)
	case !st.Created:
		if l != (Latest{}) || st.Head != (RecordRef{}) || st.Status != "" || len(st.Members) > 0 || len(st.Bans) > 0 || len(st.Reviews) > 0 {
			return badSnapshot("a room without its room.create has state")
		}
		return nil
	case l.Seq < 1 || (l.Seq == 1) != (l.PreHash == envelope.Hash{}):
		return badSnapshot("latest record seq %d and its pre_hash disagree", l.Seq)
	case st.Head.Seq < 1 || st.Head.Seq > l.Seq || (st.Head.Seq == l.Seq) != (st.Head.Hash == l.Hash):
		return badSnapshot("head seq %d does not fit latest seq %d", st.Head.Seq, l.Seq)
	case st.CreatedAt < 0:
		return badSnapshot("created_at is negative")
	}
	switch st.Status {
	case StatusScheduled, StatusActive, StatusEnded, StatusCancelled:
	default:
		return badSnapshot("unknown room status %q", clip(string(st.Status)))
	}
	if err := st.Contract.check(s.Draft); err != nil {
		return err
	}
	if st.Members[st.Creator] == nil {
		return badSnapshot("the creator is not a member")
	}
	inLog := func(seq int64) bool { return seq >= 1 && seq <= l.Seq }
	for id, m := range st.Members {
		switch {
		case m == nil || m.ID != id:
			return badSnapshot("member %s is keyed under another id", id)
		case !validRole(m.Role):
			return badSnapshot("member %s has unknown role %q", id, clip(string(m.Role)))
		case !inLog(m.JoinedSeq) || m.LastEventSeq < m.JoinedSeq || m.LastEventSeq > l.Seq:
			return badSnapshot("member %s names records outside the log", id)
		case m.JoinedSeq == 1 && id != st.Creator:
			return badSnapshot("member %s claims the room.create", id)
		}
		switch m.Status {
		case MemberActive:
			if m.LeftSeq != 0 {
				return badSnapshot("active member %s has left_seq", id)
			}
		case MemberLeft, MemberRemoved, MemberBanned:
			if m.LeftSeq <= m.JoinedSeq || m.LeftSeq > l.Seq {
				return badSnapshot("member %s has left_seq %d outside its membership", id, m.LeftSeq)
			}
		default:
			return badSnapshot("member %s has unknown status %q", id, clip(string(m.Status)))
		}
		if (m.Status == MemberBanned) != st.Bans[id] {
			return badSnapshot("member %s: status and ban list disagree", id)
		}
	}
	for id, banned := range st.Bans {
		if !banned {
			return badSnapshot("ban list entry %s is false", id)
		}
	}
	for id, rv := range st.Reviews {
		switch {
		case id == "" || rv == nil:
			return badSnapshot("empty join review entry")
		case rv.Applicant.IsZero():
			return badSnapshot("join review %q has no applicant", clip(id))
		case rv.Decision != DecisionApprove && rv.Decision != DecisionReject:
			return badSnapshot("join review %q has unknown decision %q", clip(id), clip(string(rv.Decision)))
		case (rv.Decision == DecisionApprove || rv.Role != "") && !validRole(rv.Role):
			return badSnapshot("join review %q has unknown role %q", clip(id), clip(string(rv.Role)))
		case !inLog(rv.Seq) || rv.ExpiresAt < 0:
			return badSnapshot("join review %q names a record outside the log", clip(id))
		case rv.Consumed && rv.Decision != DecisionApprove, rv.Auto && !rv.Consumed:
			return badSnapshot("join review %q is consumed without an approval", clip(id))
		}
	}
	return nil
}

// check applies the room.create payload rules (kernel schema and §9) to
// the contract: a room.update replaces fields under the same rules, so
// every contract a log can produce passes.
func (k *Contract) check(d Draft) error {
	p := RoomCreate{
		Host: k.Host, Topic: k.Topic, Agenda: k.Agenda, Guidance: k.Guidance, Visibility: k.Visibility,
		StartTime: k.StartTime, EndTime: k.EndTime, Tags: k.Tags, Language: k.Language,
		Policy: &k.Policy, Extra: k.Extra,
	}
	raw, err := json.Marshal(p, json.Deterministic(true))
	if err == nil {
		_, err = checkBuiltinPayload(d, TypeRoomCreate, raw)
	}
	if err != nil {
		return identity.Wrap(identity.CodeInvalidRequest, "room snapshot contract", err)
	}
	return nil
}

func validRole(r Role) bool {
	return r == RoleModerator || r == RoleSpeaker || r == RoleObserver
}

func badSnapshot(format string, args ...any) error {
	return identity.Errorf(identity.CodeInvalidRequest, "room snapshot: "+format, args...)
}

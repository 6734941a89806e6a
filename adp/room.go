package adp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// RoomOptions configures a Room. A nil *RoomOptions means defaults, which
// suit a verifier replaying history: no network, no host policy beyond the
// protocol's MUSTs and the §21 payload limit.
type RoomOptions struct {
	// Draft is the draft of ADP the room follows; the zero value is the
	// default draft, 2026-07-04. It selects every rule draftTable (and,
	// for the type registry, packs) holds per draft.
	Draft Draft
	// Host is this host's API origin, such as "https://api.al.ink". In a
	// draft that binds room.create to its host (2026-09-24 §8.1), a
	// room.create naming another is refused with host_mismatch. "" checks
	// only that room.create names an origin, which is what a verifier
	// replaying an archive can do.
	Host string
	// AllowLoopbackHTTP admits a room.create whose host is a loopback
	// development origin over plain HTTP (http://127.0.0.1:8080), as the
	// rest of the SDK does when asked; by default only HTTPS origins are.
	AllowLoopbackHTTP bool
	// Packs configures the type registry: hosts pass an HTTPS fetcher for
	// external packs, archive verifiers a static fetcher over the archived
	// pack documents. nil refuses external packs (pack_unavailable).
	Packs *packs.Options
	// Index remembers record and event hashes; nil means a MemoryIndex.
	Index Index
	// JoinRequests lets a host check reviews and request-based joins
	// against its join-request store (§11). nil trusts the log, which is
	// what a verifier replaying history must do: the join requests
	// themselves are not part of it.
	// In the 2026-09-24 draft (§10) a review is checked against the
	// stored request named by the embedded request's event ID: only its
	// status counts, which must be pending (join_request_not_pending
	// otherwise; join_request_not_found when the store has none).
	JoinRequests JoinRequestStore
	// AcceptContentType is the host's message content_type policy (§12);
	// nil accepts every non-empty content type.
	AcceptContentType func(contentType string) bool
	// MaxPayloadBytes is the host's limit on the canonical payload of an
	// event whose type carries no max_payload_hint (every built-in type
	// included); 0 means MaxPayloadBytes (64 KiB, §21).
	MaxPayloadBytes int
	// MaxHintedPayloadBytes is the host's ceiling for types that carry a
	// max_payload_hint (§21 "带类型提示的 payload 上限"): such a type's
	// limit is its hint, clamped to this ceiling, so a hint moves the limit
	// within the host's bounds and never past them. 0 means
	// MaxHintedPayloadBytes (256 KiB) when MaxPayloadBytes is 0 too — the
	// SDK host's defaults — and the effective MaxPayloadBytes otherwise, so
	// a host that set its own limit and nothing for hints keeps that
	// limit. A ceiling below the effective MaxPayloadBytes is raised to it.
	MaxHintedPayloadBytes int
	// URL is the room's canonical URL (§7.2). When set, room_head_mismatch
	// errors carry an events_url for catching up.
	URL string
}

// JoinRequestStatus is the review state of a join request (§11).
type JoinRequestStatus string

// The four join-request states.
const (
	JoinPending  JoinRequestStatus = "pending"
	JoinApproved JoinRequestStatus = "approved"
	JoinRejected JoinRequestStatus = "rejected"
	JoinExpired  JoinRequestStatus = "expired"
)

// JoinRequestStore is a host's store of join requests (HTTP resources, not
// room events). Lookup returns the stored immutable request and its status,
// or an error with code join_request_not_found. A public room's automatic
// approvals (§11) leave no room.join.review in the log, so the store is
// where a join naming one finds it: Lookup reports it approved, and its
// role is the approved role.
type JoinRequestStore interface {
	Lookup(ctx context.Context, roomID, requestID string) (JoinRequest, JoinRequestStatus, error)
}

// Contract is the room's current contract (§9, §16): what room.create
// established and room.update revised.
type Contract struct {
	// Host is the origin room.create named (2026-09-24 only); it is not
	// updatable.
	Host       string         `json:"host,omitzero"`
	Topic      string         `json:"topic"`
	Agenda     string         `json:"agenda,omitzero"`
	Guidance   string         `json:"guidance,omitzero"`
	Visibility Visibility     `json:"visibility"`
	StartTime  int64          `json:"start_time"`
	EndTime    int64          `json:"end_time"`
	Tags       []string       `json:"tags,omitzero"`
	Language   string         `json:"language,omitzero"`
	Policy     Policy         `json:"policy"`
	Extra      jsontext.Value `json:"extra,omitzero"`
}

// Member is one agent's membership (§10). Seq fields name records.
type Member struct {
	ID           identity.AgentID `json:"id"`
	Role         Role             `json:"role"`
	Status       MemberStatus     `json:"status"`
	Perspective  string           `json:"perspective,omitzero"`
	JoinedSeq    int64            `json:"joined_seq"`
	LeftSeq      int64            `json:"left_seq,omitzero"`
	LastEventSeq int64            `json:"last_event_seq"`
}

// RecordRef names an accepted record: the room head and latest record.
type RecordRef struct {
	Seq  int64         `json:"seq"`
	Hash envelope.Hash `json:"hash"`
}

// review is a room.join.review decision the log recorded, keyed by request,
// or (Auto) a public room's automatic approval (§11), which the log shows
// only as the room.join that consumed it.
type review struct {
	Applicant   identity.AgentID `json:"applicant"`
	Decision    Decision         `json:"decision"`
	Role        Role             `json:"role,omitzero"`
	Perspective string           `json:"perspective,omitzero"`
	ExpiresAt   int64            `json:"expires_at"`
	Seq         int64            `json:"seq"`
	Consumed    bool             `json:"consumed,omitzero"`
	Auto        bool             `json:"auto,omitzero"`
}

// Room replays one room's records into its state and judges new writes by
// every rule a host must enforce (§6–§15). Hosts call Accept before
// appending a write; verifiers call Apply for each record of a history.
// Both run the same rule table (check), so a room verified offline is
// judged exactly as its host had to judge it, and Apply never accepts what
// Check refuses.
//
// A Room is safe for concurrent use: writes are serialized (the head
// precondition is a compare-and-swap), reads see a consistent state.
type Room struct {
	mu    sync.RWMutex
	id    string
	opts  RoomOptions
	draft Draft       // opts.Draft, never zero
	rules *draftRules // rulesOf(draft)

	st    state
	index Index
}

// state is everything a snapshot holds besides the index.
type state struct {
	Created   bool                         `json:"created"`
	Creator   identity.AgentID             `json:"creator"`
	CreatedAt int64                        `json:"created_at"`
	Status    Status                       `json:"status"`
	Contract  Contract                     `json:"contract"`
	Members   map[identity.AgentID]*Member `json:"members"`
	Bans      map[identity.AgentID]bool    `json:"bans,omitzero"`
	Reviews   map[string]*review           `json:"reviews,omitzero"`
	Latest    Latest                       `json:"latest"`
	Head      RecordRef                    `json:"head"`
	Registry  *packs.Registry              `json:"-"`
}

// NewRoom returns an empty room with the host-assigned id. Its first write
// must be the room.create.
func NewRoom(id string, opts *RoomOptions) *Room {
	r := &Room{id: id}
	if opts != nil {
		r.opts = *opts
	}
	r.draft = r.opts.Draft.OrDefault()
	r.rules = rulesOf(r.draft)
	r.index = r.opts.Index
	if r.index == nil {
		r.index = NewMemoryIndex()
	}
	r.st.Members = map[identity.AgentID]*Member{}
	r.st.Registry = packs.NewRegistry(r.packOptions())
	return r
}

// packOptions are the registry options: the caller's, in the room's draft.
func (r *Room) packOptions() *packs.Options {
	var o packs.Options
	if r.opts.Packs != nil {
		o = *r.opts.Packs
	}
	o.Draft = r.draft
	return &o
}

// ID returns the room ID.
func (r *Room) ID() string { return r.id }

// Draft returns the draft the room follows.
func (r *Room) Draft() Draft { return r.draft }

// Check reports whether the host may accept env at time at, without
// changing anything. The envelope's hash and signature are verified (once:
// envelope remembers a successful verification).
func (r *Room) Check(ctx context.Context, env *envelope.Envelope, at time.Time) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, err := r.check(ctx, env, nil, r.clock(at), false)
	return err
}

// clock is the acceptance time of a write offered at at, in Unix ms: at,
// but never before the latest record's received_at. received_at must not
// decrease along the chain (Apply refuses it), so a host whose clock
// steps back keeps writing the latest received_at until its clock catches
// up, rather than backdating a record — which could, for instance, make
// an expired join request count.
func (r *Room) clock(at time.Time) int64 {
	return max(at.UnixMilli(), r.st.Latest.ReceivedAt)
}

// Accept is the host path (§6.1, §15): it checks env at time at, assigns
// the next seq with received_at = at, links the record into the chain and
// commits the state change atomically. On error nothing changes.
//
// received_at never decreases: if at is before the latest record's
// received_at (the host clock stepped back), Accept uses the latest
// received_at instead, and judges the write at that time. Check does the
// same, so the two agree.
//
// Run the envelope through an [envelope.Verifier] first: Accept enforces room
// rules, not the live-write window or nonce replay protection.
func (r *Room) Accept(ctx context.Context, env *envelope.Envelope, at time.Time) (*Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ms := r.clock(at)
	c, err := r.check(ctx, env, nil, ms, false)
	if err != nil {
		return nil, err
	}
	rec := r.nextRecord(env, ms)
	r.commit(c, rec)
	return rec, nil
}

// nextRecord is the record env becomes as the room's next (r.mu held):
// the next seq, the link to the latest record, received_at ms and the
// record hash.
func (r *Room) nextRecord(env *envelope.Envelope, ms int64) *Record {
	rec := &Record{RoomID: r.id, Seq: r.st.Latest.Seq + 1, ReceivedAt: ms, Envelope: env, Draft: r.draft}
	if rec.Seq > 1 {
		rec.PreHash = r.st.Latest.Hash
	}
	rec.Hash = rec.ComputeHash()
	return rec
}

// Pending is a write that [Room.Prepare] judged acceptable: [Pending.Record]
// is the record the room would append, and [Pending.Commit] applies it.
// It lets a host put the record into durable storage between the judgment
// and the state change without judging the write twice.
type Pending struct {
	// Record is the record the write becomes: the next seq, the chain
	// link, received_at and the record hash.
	Record *Record
	room   *Room
	change *change
	// committed is set by Commit, with prev, what Undo puts back; a
	// change with effects beyond its record (membership, lifecycle) keeps
	// the whole state it replaced in prevState instead.
	committed bool
	prev      undoState
	prevState *state
}

// undoState is the part of a room's state a change without side effects
// (change.apply nil) replaces when it commits.
type undoState struct {
	status       Status
	latest       Latest
	head         RecordRef
	registry     *packs.Registry
	member       bool // the actor is a member, whose LastEventSeq moved
	lastEventSeq int64
}

// Prepare is [Room.Accept] without the state change, for an envelope the
// caller has read with [ParseEvent] or [ParseEventIn] (a host routes a
// write by its room and type before judging it; ev is not parsed again,
// and its typed payload, [Event.Builtin], is decoded once): it judges the
// write at time at exactly as Accept does and returns the record Accept
// would append. The room does not change until [Pending.Commit]. An Event
// not read by ParseEvent is refused with invalid_event.
func (r *Room) Prepare(ctx context.Context, ev *Event, at time.Time) (*Pending, error) {
	if ev.env == nil {
		return nil, identity.NewError(identity.CodeInvalidEvent, "the event was not read by ParseEvent")
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	ms := r.clock(at)
	c, err := r.check(ctx, ev.env, ev, ms, false)
	if err != nil {
		return nil, err
	}
	rec := r.nextRecord(ev.env, ms)
	// Encoded once (CanonicalInput): a host writes the record to its
	// Store, its answer and its live stream.
	rec.wire, rec.parsed = rec.AppendJSON(nil), rec.fields()
	return &Pending{Record: rec, room: r, change: c}, nil
}

// Commit applies the prepared record to its room, as Accept would have.
// The judgment holds only for the state it was made on: if the room has
// taken another record since Prepare (its latest record is no longer the
// one Record links to), Commit changes nothing and returns an
// invalid_record error. A Pending commits at most once.
func (p *Pending) Commit() error {
	r := p.room
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.committed || p.change == nil {
		return identity.Errorf(CodeInvalidRecord, "record %d is already committed (or undone)", p.Record.Seq)
	}
	// The record hash is the one Prepare computed from the record, which
	// is immutable: only the link to the room's latest record can have
	// gone stale.
	if err := r.checkChain(p.Record); err != nil {
		return err
	}
	s := &r.st
	if p.change.apply != nil {
		// Membership and lifecycle changes reach beyond the record: the
		// state they replace is kept whole, in memory, for Undo.
		p.prevState = s.clone()
	} else {
		p.prev = undoState{status: s.Status, latest: s.Latest, head: s.Head, registry: s.Registry}
		if m := s.Members[p.change.ev.Actor]; m != nil {
			p.prev.member, p.prev.lastEventSeq = true, m.LastEventSeq
		}
	}
	r.commit(p.change, p.Record)
	p.committed = true
	return nil
}

// ErrCannotUndo is returned by [Pending.Undo] for a Pending it cannot take
// back; the room is unchanged.
var ErrCannotUndo = errors.New("adp: the committed record cannot be undone")

// Undo takes back a committed Pending whose record is still the room's
// latest: the room is again exactly as it was before [Pending.Commit].
// A host commits a judged write to its replica before the durable append
// (several at once with group commit) and undoes them, newest first, when
// that append fails, instead of rebuilding the replica from storage it
// may not be able to reach.
//
// Every write can be undone in a room with the default [MemoryIndex]; a
// membership or lifecycle change costs its Commit a copy of the room's
// members, bans and reviews. Undo returns an error wrapping
// ErrCannotUndo, and changes nothing, for a Pending not committed or
// already undone, a record that is no longer the latest, or a custom
// Index.
func (p *Pending) Undo() error {
	r := p.room
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.st
	m, ok := r.index.(*MemoryIndex)
	switch {
	case !p.committed:
		return fmt.Errorf("%w: record %d is not committed", ErrCannotUndo, p.Record.Seq)
	case s.Latest.Seq != p.Record.Seq || s.Latest.Hash != p.Record.Hash:
		return fmt.Errorf("%w: record %d is not the room's latest", ErrCannotUndo, p.Record.Seq)
	case !ok || !m.undoAdd(p.Record.Seq, p.Record.Hash, p.change.ev.Hash):
		return fmt.Errorf("%w: the room's index cannot drop record %d", ErrCannotUndo, p.Record.Seq)
	}
	if p.prevState != nil {
		r.st = *p.prevState
	} else {
		s.Status, s.Latest, s.Head, s.Registry = p.prev.status, p.prev.latest, p.prev.head, p.prev.registry
		if m := s.Members[p.change.ev.Actor]; p.prev.member && m != nil {
			m.LastEventSeq = p.prev.lastEventSeq
		}
	}
	p.committed, p.change, p.prev, p.prevState = false, nil, undoState{}, nil
	return nil
}

// Apply replays one record of a history (§19 step 3): the record must be
// the next link of the chain, with a correct record hash and a received_at
// not before the previous record's, and its envelope must verify and be
// acceptable at its received_at. On error nothing changes; the error
// carries the §20 code the host should have answered (or invalid_record
// for a broken chain or a received_at that goes back).
//
// A redacted record (2026-09-24 §14.1) keeps its place in the chain and
// its class: its type must be message.create or a custom type defined at
// its seq, acceptable in the room's state at its acceptance time, and its
// event ID new to the room. Its signature, payload and permissions cannot
// be checked; the caller reports it.
//
// With [RoomOptions.JoinRequests], a review or a join naming a request is
// checked against the stored request's content, not its status: the
// record was accepted while the request was pending (or approved), and
// the store now holds its outcome.
func (r *Room) Apply(ctx context.Context, rec *Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkLink(rec); err != nil {
		return err
	}
	if rec.Redacted != nil {
		c, err := r.checkRedacted(rec)
		if err != nil {
			return err
		}
		r.commit(c, rec)
		return nil
	}
	c, err := r.check(ctx, rec.Envelope, nil, rec.ReceivedAt, true)
	if err != nil {
		return err
	}
	r.commit(c, rec)
	return nil
}

func (r *Room) checkLink(rec *Record) error {
	if err := r.checkChain(rec); err != nil {
		return err
	}
	return rec.CheckHash()
}

// checkChain is checkLink without the record hash.
func (r *Room) checkChain(rec *Record) error {
	switch {
	case rec.Draft.OrDefault() != r.draft:
		return identity.Errorf(CodeInvalidRecord, "record %d follows the %s draft; the room follows the %s draft", rec.Seq, rec.Draft.OrDefault(), r.draft)
	case rec.RoomID != r.id:
		return identity.Errorf(CodeInvalidRecord, "record %d: room_id %q is not %q", rec.Seq, clip(rec.RoomID), clip(r.id))
	case rec.Seq != r.st.Latest.Seq+1:
		return identity.Errorf(CodeInvalidRecord, "record seq %d does not follow %d", rec.Seq, r.st.Latest.Seq)
	case rec.Seq > 1 && rec.PreHash != r.st.Latest.Hash:
		return identity.Errorf(CodeInvalidRecord, "record %d: pre_hash is not the hash of record %d", rec.Seq, r.st.Latest.Seq)
	case rec.Envelope == nil && rec.Redacted == nil:
		return identity.Errorf(CodeInvalidRecord, "record %d has no envelope", rec.Seq)
	case rec.ReceivedAt < r.st.Latest.ReceivedAt:
		// Acceptance times follow acceptance order (§15); a record dated
		// before its predecessor would be judged at a time the host had
		// already passed.
		return identity.Errorf(CodeInvalidRecord, "record %d: received_at %d is before the previous record's %d", rec.Seq, rec.ReceivedAt, r.st.Latest.ReceivedAt)
	}
	return nil
}

// change is the outcome of a successful check: the effects to commit.
type change struct {
	ev       *Event          // nil for a redacted record
	advances bool            // the record becomes the room head
	registry *packs.Registry // replaces the registry when set
	apply    func(s *state, seq int64)
	// replay marks a record of the log being applied: it was accepted
	// when its join request had the status it needed, and the stored
	// request now shows the outcome (approved after a review, consumed
	// after a join). The request's content is checked; its status is not.
	replay bool
}

// check runs the full rule table for env at time at (Unix ms), with env's
// event already parsed when ev is not nil (see Room.PrepareEvent). It
// never mutates r. replay is set for a record of the log (Apply): see
// change.replay.
func (r *Room) check(ctx context.Context, env *envelope.Envelope, ev *Event, at int64, replay bool) (*change, error) {
	if err := env.Verify(); err != nil {
		return nil, err
	}
	if ev == nil {
		var err error
		if ev, err = ParseEventIn(r.draft, env); err != nil {
			return nil, err
		}
	} else if ev.draft != r.draft {
		return nil, identity.Errorf(identity.CodeInvalidEvent, "the event was read in the %s draft; the room follows the %s draft", ev.draft, r.draft)
	}
	if ev.Type == TypeRoomCreate {
		return r.checkCreate(ctx, ev, at)
	}
	s := &r.st
	if !s.Created {
		return nil, identity.Errorf(CodeRoomNotFound, "room %q has no room.create yet", clip(r.id))
	}
	if ev.RoomID != r.id {
		return nil, identity.Errorf(identity.CodeInvalidEvent, "event room_id %q is not this room (%q)", clip(ev.RoomID), clip(r.id))
	}
	if r.index.HasEvent(ev.Hash) {
		return nil, identity.Errorf(identity.CodeInvalidEvent, "envelope %s is already accepted in this room", ev.Hash)
	}

	// Resolve the type and its freshness class: built-in, or a
	// definition in force (seed §13.2, §13.6; 2026-09-24 §5.1, §12.2).
	var def *packs.Definition
	builtin := r.draft.IsBuiltin(ev.Type)
	if !builtin {
		if def = s.Registry.Lookup(ev.Type); def == nil {
			return nil, identity.Errorf(CodeTypeNotDefined, "type %q is not defined in this room", clip(ev.Type))
		}
	}
	class, ok := classOf(r.draft, ev.Type, builtin, def)
	if !ok { // draft-dependent: room.join.request (2026-09-24 §10)
		return nil, identity.Errorf(identity.CodeInvalidEvent, "%s is never a record: a host holds it as a join request", clip(ev.Type))
	}

	// Freshness (draft-dependent: seed §6.1, 2026-09-24 §5.1) comes
	// before state, permission and payload checks.
	fresh := class.Rule(r.draft)
	if err := r.checkBase(ev, fresh.Base); err != nil {
		return nil, err
	}

	// State restrictions (§8, §14).
	status := r.statusAt(at)
	if err := r.checkState(ev.Type, status); err != nil {
		return nil, err
	}

	c := &change{ev: ev, advances: fresh.Advances, replay: replay}
	if def != nil {
		return c, r.checkCustom(ev, def)
	}
	payload, err := ev.Builtin() // ev.draft is r.draft
	if err != nil {
		return nil, err
	}
	if err := r.checkSize(ev, def); err != nil {
		return nil, err
	}
	switch p := payload.(type) {
	case *RoomUpdate:
		err = r.checkUpdate(c, p, status, at)
	case *Join:
		err = r.checkJoin(ctx, c, p, at)
	case *JoinReview:
		err = r.checkReview(ctx, c, p, at)
	case *SignedJoinReview:
		err = r.checkSignedReview(ctx, c, p)
	case *RoleUpdate:
		err = r.checkRoleUpdate(c, p)
	case *MemberRemove:
		err = r.checkRemove(c, p)
	case *packs.Declaration:
		err = r.checkTypeDefine(ctx, c, p)
	case *Message:
		err = r.checkMessage(c, p)
	case *Notice:
		err = r.checkNotice(c)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// clone returns a copy of s that the commit of a change cannot reach:
// the members, bans and reviews, which changes update in place, are
// copied; the contract's slices and maps and the registry are replaced,
// never changed, by a commit.
func (s *state) clone() *state {
	c := *s
	c.Members = make(map[identity.AgentID]*Member, len(s.Members))
	for id, m := range s.Members {
		mc := *m
		c.Members[id] = &mc
	}
	c.Bans = maps.Clone(s.Bans)
	if s.Reviews != nil {
		c.Reviews = make(map[string]*review, len(s.Reviews))
		for id, rv := range s.Reviews {
			rc := *rv
			c.Reviews[id] = &rc
		}
	}
	return &c
}

// commit applies a checked change and links rec into the history.
func (r *Room) commit(c *change, rec *Record) {
	s := &r.st
	if rec.Seq != 1 {
		s.Status = r.statusAt(rec.ReceivedAt)
	}
	if c.registry != nil {
		s.Registry = c.registry
	}
	if c.apply != nil {
		c.apply(s, rec.Seq)
	}
	if c.ev != nil {
		if m := s.Members[c.ev.Actor]; m != nil {
			m.LastEventSeq = rec.Seq
		}
	}
	s.Latest = Latest{Seq: rec.Seq, PreHash: rec.PreHash, Hash: rec.Hash, ReceivedAt: rec.ReceivedAt}
	if c.advances {
		s.Head = RecordRef{Seq: rec.Seq, Hash: rec.Hash}
	}
	r.index.Add(rec.Seq, rec.Hash, rec.EventHash())
}

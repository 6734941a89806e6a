package adp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// ReplicaOptions configures a Replica. A nil *ReplicaOptions means an
// in-memory replica of a default-draft room that persists nothing.
type ReplicaOptions struct {
	// Room configures the room the replica replays (its Draft above
	// all). Its Index must be nil: a replica keeps its index in memory
	// and in its snapshots.
	Room RoomOptions
	// Admitted, when set, receives every batch of newly verified records,
	// in seq order, exactly once, before any read of the replica can see
	// them: persist them here. room is the replica's state with the batch
	// applied, for deriving what the owner stores beside the records (a
	// snapshot, notifications); read it, never change it.
	//
	// Admitted runs with the replica locked: it must not call back into
	// the replica, or into a Client or sse.Follow working on it, which
	// would wait for it forever. It may block (a disk write); readers of
	// the replica wait meanwhile.
	//
	// An error fails the replica: the batch stays applied in memory but
	// not persisted, so every later Admit answers ErrReplicaFailed, and
	// its owner drops it and restores a new one from what it persisted
	// (a Client does so through ClientOptions.NewReplica).
	Admitted func(ctx context.Context, recs []*Record, room *Room) error
}

// ErrGap is Replica.Admit's answer to a record beyond the next one: the
// records between must be admitted first.
var ErrGap = errors.New("adp: record beyond the replica's next seq")

// ErrReplicaFailed is the answer of a Replica whose Admitted hook failed:
// it holds records its owner did not persist and admits nothing more.
var ErrReplicaFailed = errors.New("adp: the replica's Admitted hook failed; restore a new replica")

// recentRecords is how many admitted records a Replica keeps, so that a
// second copy of one (a write's answer and the live stream's, a history
// page a follower reads after the client) is matched field by field to
// the verified record instead of verified again, and a follower can
// deliver what another reader admitted without fetching it. Records are
// at most about 262 KB, so this bounds the window at a few MiB.
const recentRecords = 16

// Replica is one room's verified state, owned by the caller: the records
// an adp.Client reads or writes and the records sse.Follow receives are
// verified into it — the envelope's hash and signature, the record hash,
// the chain link and every room rule (Room.Apply) — and its Admitted hook
// persists each new record exactly once. It is the one holder of "the
// verified history of room R" in a process: pass the same Replica to the
// Client (ClientOptions.NewReplica, or Client.Replica's cache) and to
// sse.Options.
//
// A record admitted twice is verified once: a later copy at a seq the
// replica holds must match the verified record field by field (within
// the last 16 records; older ones are checked in full), and the answer to
// a write submitted through the replica carries the envelope that was
// signed and checked then, matched by its canonical bytes and signature.
//
// A Replica is safe for concurrent use. Reads see the state as of a
// whole admitted batch.
type Replica struct {
	id   string
	opts ReplicaOptions

	// fetch serializes a Client's reads of the room's history into the
	// replica (held across requests, so two readers do not download the
	// same pages); mu guards the state and is held only while records
	// are applied and persisted.
	fetch sync.Mutex
	mu    sync.RWMutex
	room  *Room
	index *MemoryIndex
	// recent holds the last admitted records, at seq % recentRecords.
	recent [recentRecords]*Record
	failed error

	// own holds the envelopes being submitted through the replica, by
	// event hash, until their answer is admitted.
	ownMu sync.Mutex
	own   map[envelope.Hash]*envelope.Envelope

	// pageSize is the history page size this room's reads use: below
	// the client's after an oversized page, growing back after small
	// ones (0: the client's).
	pageSize atomic.Int64
}

// NewReplica returns an empty replica of the room with the host-assigned
// id; its first record is the room.create.
func NewReplica(roomID string, opts *ReplicaOptions) *Replica {
	r := newReplica(roomID, opts)
	ro := r.opts.Room
	ro.Index = r.index
	r.room = NewRoom(roomID, &ro)
	return r
}

func newReplica(roomID string, opts *ReplicaOptions) *Replica {
	r := &Replica{id: roomID, index: NewMemoryIndex()}
	if opts != nil {
		r.opts = *opts
	}
	return r
}

// RestoreReplica loads a replica from a Snapshot its owner persisted. The
// snapshot is checked like any stored input (RestoreRoom). Records the
// owner stored after the snapshot follow with Replay.
func RestoreReplica(snapshot []byte, opts *ReplicaOptions) (*Replica, error) {
	var ro RoomOptions
	if opts != nil {
		ro = opts.Room
	}
	if ro.Index != nil {
		return nil, errors.New("adp: ReplicaOptions.Room.Index must be nil")
	}
	room, err := RestoreRoom(snapshot, &ro)
	if err != nil {
		return nil, err
	}
	idx, ok := room.index.(*MemoryIndex)
	if !ok {
		return nil, errors.New("adp: restored room has no memory index")
	}
	r := newReplica(room.ID(), opts)
	r.room, r.index = room, idx
	return r, nil
}

// ID returns the room ID.
func (r *Replica) ID() string { return r.id }

// Draft returns the draft the room follows.
func (r *Replica) Draft() Draft { return r.room.Draft() }

// Admit verifies records obtained elsewhere (a live stream) into the
// replica, in order: a record the replica holds must be the same record;
// the next one must link and pass every room rule. The new ones go to
// the Admitted hook as one batch. A record beyond the next one is ErrGap
// (the records before it were admitted and handed to the hook). A record
// that fails verification fails the batch: without a hook the records
// before it stay admitted; with one, none of the batch is handed to it and
// the replica fails (ErrReplicaFailed), so its owner never persists part
// of a batch the host spoiled.
func (r *Replica) Admit(ctx context.Context, recs ...*Record) error {
	return r.admit(ctx, recs, true)
}

// Replay admits records the owner persisted itself (those after the
// snapshot it restored from), verifying them exactly as Admit does but
// without calling the Admitted hook.
func (r *Replica) Replay(ctx context.Context, recs ...*Record) error {
	return r.admit(ctx, recs, false)
}

// admit is Admit, calling the hook when persist is set.
func (r *Replica) admit(ctx context.Context, recs []*Record, persist bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed != nil {
		return r.failed
	}
	var fresh []*Record
	var err error
	for _, rec := range recs {
		var isNew bool
		if isNew, err = r.admitOne(ctx, rec); err != nil {
			break
		}
		if isNew {
			fresh = append(fresh, rec)
		}
	}
	if persist && len(fresh) > 0 && r.opts.Admitted != nil {
		if err != nil && !errors.Is(err, ErrGap) {
			// A batch the host spoiled is persisted whole or not at all:
			// its verified records before the bad one are not handed to
			// the hook, so the replica holds what its owner did not
			// persist, and fails.
			r.failed = fmt.Errorf("%w: records %d to %d not persisted: %w", ErrReplicaFailed, fresh[0].Seq, fresh[len(fresh)-1].Seq, err)
			return err
		}
		if herr := r.opts.Admitted(ctx, fresh, r.room); herr != nil {
			r.failed = fmt.Errorf("%w: records %d to %d: %w", ErrReplicaFailed, fresh[0].Seq, fresh[len(fresh)-1].Seq, herr)
			return r.failed
		}
	}
	return err
}

// admitOne verifies one record against the replica (r.mu held); isNew
// reports that it was applied.
func (r *Replica) admitOne(ctx context.Context, rec *Record) (isNew bool, err error) {
	if rec.RoomID != r.id {
		return false, identity.Errorf(CodeInvalidRecord, "host returned a record of room %q for room %q", clip(rec.RoomID), clip(r.id))
	}
	latest := r.room.Latest().Seq
	switch {
	case rec.Seq < 1:
		return false, identity.Errorf(CodeInvalidRecord, "record seq %d is not positive", rec.Seq)
	case rec.Seq <= latest:
		return false, r.checkKnown(rec)
	case rec.Seq == latest+1:
		r.adoptOwn(rec)
		if err := r.room.Apply(ctx, rec); err != nil {
			var e *identity.Error
			if errors.As(err, &e) && e.Code == CodeInvalidRecord {
				return false, err
			}
			return false, identity.Wrap(CodeInvalidRecord, "host record "+strconv.FormatInt(rec.Seq, 10)+" breaks the room rules", err)
		}
		r.recent[rec.Seq%recentRecords] = rec
		return true, nil
	}
	return false, ErrGap
}

// checkKnown checks a record at a seq the replica holds (r.mu held): the
// same record as the one verified there. A recent one is compared field
// by field; an older one, of which only the hashes are kept, is checked
// in full (record hash, envelope, and the record hash at that seq).
func (r *Replica) checkKnown(rec *Record) error {
	if old := r.recent[rec.Seq%recentRecords]; old != nil && old.Seq == rec.Seq {
		if !sameRecord(old, rec) {
			return identity.Errorf(CodeInvalidRecord, "host record %d differs from the verified record at that seq", rec.Seq)
		}
		return nil
	}
	if err := rec.CheckHash(); err != nil {
		return err
	}
	if rec.Envelope != nil {
		if err := rec.Envelope.Verify(); err != nil {
			return identity.Wrap(CodeInvalidRecord, "host record "+strconv.FormatInt(rec.Seq, 10), err)
		}
	}
	if !r.index.HasRecord(rec.Seq, rec.Hash) {
		return identity.Errorf(CodeInvalidRecord, "host record %d differs from the verified record at that seq", rec.Seq)
	}
	return nil
}

// sameRecord reports whether b carries exactly the acceptance data and
// envelope of the verified record a: every field the record hash covers,
// and the envelope's canonical event and signature.
func sameRecord(a, b *Record) bool {
	if a.RoomID != b.RoomID || a.Seq != b.Seq || a.PreHash != b.PreHash || a.Hash != b.Hash ||
		a.ReceivedAt != b.ReceivedAt || a.Draft.OrDefault() != b.Draft.OrDefault() {
		return false
	}
	switch {
	case a.Envelope != nil && b.Envelope != nil:
		return sameEnvelope(a.Envelope, b.Envelope)
	case a.Redacted != nil && b.Redacted != nil:
		return *a.Redacted == *b.Redacted
	}
	return false
}

// sameEnvelope reports whether b is a byte-identical copy of a: the same
// canonical event, claimed hash and signature.
func sameEnvelope(a, b *envelope.Envelope) bool {
	return a == b || a.Hash() == b.Hash() && a.Signature() == b.Signature() && bytes.Equal(a.Canonical(), b.Canonical())
}

// expect registers an envelope about to be submitted through the
// replica; forget removes it once its answer is handled.
func (r *Replica) expect(env *envelope.Envelope) {
	r.ownMu.Lock()
	defer r.ownMu.Unlock()
	if r.own == nil {
		r.own = map[envelope.Hash]*envelope.Envelope{}
	}
	r.own[env.Hash()] = env
}

func (r *Replica) forget(env *envelope.Envelope) {
	r.ownMu.Lock()
	defer r.ownMu.Unlock()
	delete(r.own, env.Hash())
}

// ownCopy returns the envelope submitted through the replica of which
// env is a copy, or nil.
func (r *Replica) ownCopy(env *envelope.Envelope) *envelope.Envelope {
	if env == nil {
		return nil
	}
	r.ownMu.Lock()
	own := r.own[env.Hash()]
	r.ownMu.Unlock()
	if own == nil || !sameEnvelope(own, env) {
		return nil
	}
	return own
}

// adoptOwn gives rec the envelope submitted through the replica that it
// is a copy of, whose signature was checked when it was signed.
func (r *Replica) adoptOwn(rec *Record) {
	if own := r.ownCopy(rec.Envelope); own != nil {
		rec.useEnvelope(own)
	}
}

// Known reports whether Admit would take rec without checking its
// signature: the replica holds the same record at its seq among its
// recent ones, or rec carries an envelope being submitted through the
// replica. A follower skips its early signature check of such records.
func (r *Replica) Known(rec *Record) bool {
	r.mu.RLock()
	latest := r.room.Latest().Seq
	old := r.recent[rec.Seq%recentRecords]
	r.mu.RUnlock()
	if rec.Seq <= latest {
		return old != nil && old.Seq == rec.Seq && sameRecord(old, rec)
	}
	return r.ownCopy(rec.Envelope) != nil
}

// Since returns the verified records after seq after up to the latest
// one, when the replica still keeps them all (its last 16), and whether
// it did; a follower delivers them without reading the history again.
func (r *Replica) Since(after int64) ([]*Record, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	latest := r.room.Latest().Seq
	if after >= latest {
		return nil, true
	}
	if latest-after > recentRecords {
		return nil, false
	}
	out := make([]*Record, 0, latest-after)
	for seq := after + 1; seq <= latest; seq++ {
		rec := r.recent[seq%recentRecords]
		if rec == nil || rec.Seq != seq {
			return nil, false
		}
		out = append(out, rec)
	}
	return out, true
}

// Latest returns the latest record's acceptance fields (seq 0 before the
// room.create).
func (r *Replica) Latest() Latest {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.room.Latest()
}

// Head returns the room head (§6.1).
func (r *Replica) Head() RecordRef {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.room.Head()
}

// BaseFor returns the base an event of type typ signs on (Room.BaseFor).
func (r *Replica) BaseFor(typ string) (Base, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.room.BaseFor(typ)
}

// Check reports whether a host may accept env at time at, judged by every
// room rule on the verified state (Room.Check), before it is sent.
func (r *Replica) Check(ctx context.Context, env *envelope.Envelope, at time.Time) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.room.Check(ctx, env, at)
}

// Read calls f with the verified room, under the replica's read lock: one
// consistent view for several reads (members, contract, registry). f must
// not keep the room, change it, or call back into the replica.
func (r *Replica) Read(f func(room *Room)) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f(r.room)
}

// Snapshot returns the verified state as strict JSON for RestoreReplica
// (Room.Snapshot, the index included).
func (r *Replica) Snapshot() ([]byte, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.room.Snapshot()
}

// Err returns the error that failed the replica (ErrReplicaFailed), or
// nil.
func (r *Replica) Err() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.failed
}

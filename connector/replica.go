package connector

import (
	"bytes"
	"context"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/packs"
)

// replica returns the room's verified state: one adp.Replica per room for
// the engine's life, made on first use from the stored snapshot and the
// stored records after it (verified again locally, never downloaded), and
// made again the same way when its Admitted hook failed. The host's
// adp.Client is given the same object (ClientOptions.NewReplica), so the
// client's reads and writes and the live stream verify into it, and its
// hook (admitted) persists every record once.
//
// It reads the store: never call it within a store transaction.
func (e *Engine) replica(h *hostState, roomID string) (*adp.Replica, error) {
	k := roomKey{h.name, roomID}
	r := e.rt(k)
	e.repMu.Lock()
	defer e.repMu.Unlock()
	if r.rep != nil && r.rep.Err() == nil {
		return r.rep, nil
	}
	if r.rep != nil {
		e.opts.Logger.Warn("connector: reloading a room's verified state", "host", k.host, "room", k.room, "err", r.rep.Err())
	}
	var snap storedSnapshot
	var recs []*adp.Record
	if err := e.store.View(func(tx stateTx) error {
		sr, err := loadRoom(tx, k)
		if err != nil {
			return err
		}
		if snap, err = loadSnapshot(tx, k, sr); err != nil || len(snap.Snapshot) == 0 {
			return err
		}
		return e.records(tx, k, snap.Seq, 0, func(rec *adp.Record) bool {
			recs = append(recs, rec)
			return true
		})
	}); err != nil {
		return nil, err
	}
	if err := e.learnDraft(h); err != nil {
		return nil, err
	}
	opts := &adp.ReplicaOptions{
		Room: adp.RoomOptions{Draft: h.draft(), AllowLoopbackHTTP: e.opts.AllowLoopbackHTTP},
		Admitted: func(ctx context.Context, recs []*adp.Record, room *adp.Room) error {
			return e.admitted(k, recs, room)
		}}
	rep := adp.NewReplica(roomID, opts)
	if len(snap.Snapshot) > 0 {
		var err error
		if rep, err = adp.RestoreReplica(snap.Snapshot, opts); err != nil {
			return nil, fmt.Errorf("connector: restoring room %s: %w", clip(roomID), err)
		}
		if rep.ID() != roomID {
			return nil, fmt.Errorf("connector: the stored snapshot of room %s is of room %s", clip(roomID), clip(rep.ID()))
		}
		if err := rep.Replay(context.Background(), recs...); err != nil {
			return nil, fmt.Errorf("connector: restoring room %s: %w", clip(roomID), err)
		}
	}
	r.rep = rep
	return rep, nil
}

// openReplica is replica for a room whose state the caller reads: nil when
// the host is disabled or the state cannot be loaded.
func (e *Engine) openReplica(k roomKey) *adp.Replica {
	h := e.hosts[k.host]
	if h == nil || h.client == nil {
		return nil
	}
	rep, err := e.replica(h, k.room)
	if err != nil {
		e.opts.Logger.Warn("connector: loading a room's verified state failed", "host", k.host, "room", k.room, "err", err)
		return nil
	}
	return rep
}

// verified calls f with the room's verified state under its replica's
// read lock, or with nil when no record of it is verified yet. Never call
// it within a store transaction: the replica's hook writes the store with
// the replica locked.
func (e *Engine) verified(k roomKey, f func(room *adp.Room)) {
	rep := e.openReplica(k)
	if rep == nil || rep.Latest().Seq == 0 {
		f(nil)
		return
	}
	rep.Read(f)
}

// registry returns a copy of the room's type registry in force (nil when
// nothing is verified yet), safe to use within a store transaction.
func (e *Engine) registry(k roomKey) *packs.Registry {
	var reg *packs.Registry
	e.verified(k, func(room *adp.Room) {
		if room != nil {
			reg = room.Registry()
		}
	})
	return reg
}

// admitted is the Admitted hook of the room's replica: it persists one
// batch of newly verified records in one transaction with the inbox items
// they create, the new synced_seq and head, a replica snapshot when one is
// due (or none is stored yet), and the removal of the outbox entries of
// this agent's writes among them. It runs with the replica locked, so it
// reads the room only through room.
func (e *Engine) admitted(k roomKey, add []*adp.Record, room *adp.Room) error {
	head := room.Head()
	latest := room.Latest().Seq
	reg := room.Registry()
	every := int64(e.opts.SnapshotEvery)
	if every <= 0 {
		every = 256
	}
	e.mu.Lock()
	backfilling := e.rooms[k] != nil && e.rooms[k].backfill
	e.mu.Unlock()
	var newInbox, changedState bool
	// Deferred: after a power loss the engine downloads these records
	// again, and each write among them is still in the outbox, flushed
	// before it was sent, to be replayed and matched (ReplayOutbox).
	err := e.store.UpdateDeferred(func(tx stateTx) error {
		sr, err := loadRoom(tx, k)
		if err != nil {
			return err
		}
		// The first sync reads the room's past: only recent mentions and
		// turn assignments in it are news (Options.BackfillWindow).
		backfill := sr.SyncedSeq == 0 || backfilling
		for _, rec := range add {
			if err := tx.Put(bRecords, reckey(k.host, k.room, rec.Seq), jsontext.Value(rec.AppendJSON(nil))); err != nil {
				return err
			}
			n, sc, err := e.inboxFromRecord(tx, k, reg, sr, rec, backfill)
			if err != nil {
				return err
			}
			newInbox = newInbox || n
			changedState = changedState || sc
			sr.SyncedSeq = rec.Seq
			if e.unread(rec, reg, sr.ReadSeq) {
				sr.Unread++
			}
			if err := e.ownWriteDone(tx, k, rec); err != nil {
				return err
			}
		}
		if head.Seq <= sr.SyncedSeq {
			sr.HeadSeq, sr.HeadHash = head.Seq, head.Hash.String()
		}
		if sr.SnapSeq == 0 && len(sr.Snapshot) == 0 || sr.SyncedSeq-sr.SnapSeq >= every {
			snap, err := room.Snapshot()
			if err != nil {
				return err
			}
			if err := tx.Put(bSnapshots, rkey(k.host, k.room), storedSnapshot{Seq: latest, Snapshot: snap}); err != nil {
				return err
			}
			sr.Snapshot, sr.SnapSeq = nil, latest
		}
		if sr.RemoteSeq < sr.SyncedSeq {
			sr.RemoteSeq = sr.SyncedSeq
		}
		return tx.Put(bRooms, rkey(k.host, k.room), sr)
	})
	if err != nil {
		return err
	}
	// Notifications are queued, never delivered from here (the replica is
	// locked).
	uris := []string{RoomURI(k.room, "timeline"), RoomURI(k.room)}
	if changedState {
		uris = append(uris, RoomURI(k.room, "members"), RoomURI(k.room, "types"))
	}
	if newInbox {
		uris = append(uris, URIInboxPending)
		e.wakeInbox()
	}
	e.notify(uris...)
	return nil
}

// ownWriteDone removes the outbox entry of rec when rec is this agent's
// write sent from it (the entry is keyed by the envelope's nonce), in the
// transaction that stores the record: an accepted write is never sent
// again, whichever copy of its record (the answer, the live stream, a
// later sync) arrived first.
func (e *Engine) ownWriteDone(tx stateTx, k roomKey, rec *adp.Record) error {
	if rec.Envelope == nil || rec.Envelope.Actor() != e.agent {
		return nil
	}
	id := outboxID(rec.Envelope.Event().Nonce)
	// sentAs: the entry is the one this record's envelope was sent from.
	sentAs := func(ent *outboxEntry) bool {
		return ent.Host == k.host && bytes.Equal(ent.Envelope, rec.Envelope.AppendJSON(nil))
	}
	var ent outboxEntry
	ok, err := tx.Get(bOutbox, id, &ent)
	if err != nil || !ok || !sentAs(&ent) {
		return err
	}
	return tx.Delete(bOutbox, id)
}

// storedSnapshot is a room's replica snapshot as of record Seq.
type storedSnapshot struct {
	Seq      int64          `json:"seq"`
	Snapshot jsontext.Value `json:"snapshot"`
}

// loadSnapshot returns the room's stored snapshot: in bSnapshots, or where
// older stores kept it, in its storedRoom.
func loadSnapshot(tx stateTx, k roomKey, sr *storedRoom) (storedSnapshot, error) {
	var snap storedSnapshot
	ok, err := tx.Get(bSnapshots, rkey(k.host, k.room), &snap)
	if err != nil || ok {
		return snap, err
	}
	return storedSnapshot{Seq: sr.SnapSeq, Snapshot: sr.Snapshot}, nil
}

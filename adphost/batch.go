package adphost

import (
	"context"
	"errors"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
)

// Group commit. On a BatchAppender store a room's writes are led: the
// writer that finds no other writing leads, with no hand-off to another
// goroutine; writers arriving meanwhile queue, and when the leader is
// done the first of them leads everything queued: it judges those writes
// in order against the replica and appends them with one AppendBatch, one
// durable commit for all. Each write is answered, and published to live
// subscribers, only once the batch is stored. A batch that fails puts the
// replica back as it was, without announcing anything, and then every
// write of it is judged and appended again on its own (catching up first
// when another process appended), so that one write's refusal or a lost
// append race never becomes another write's answer.
//
// While a batch is in flight the replica holds its judged records; the
// room's lock is held until they are stored or undone, so that only a
// reader that took the replica before the batch began can see them.

// roomWrite is one write of a room's group commit.
type roomWrite struct {
	env  *envelope.Envelope
	ev   *adp.Event
	pf   *prefetch
	done chan struct{} // closed when rec and err are set, or to make it lead
	lead bool
	rec  *adp.Record
	err  error
}

// maxBatch bounds the writes of one batch.
const maxBatch = 64

// batchable reports whether a write may share a batch: a lifecycle or
// membership write changes the room's index entry and is appended on its
// own.
func batchable(ev *adp.Event) bool {
	return !adp.IsBuiltin(ev.Type) || ev.Type == adp.TypeMessageCreate
}

// commitGrouped is commit on a BatchAppender store.
func (h *Host) commitGrouped(ctx context.Context, hr *hostRoom, w *roomWrite) (*adp.Record, error) {
	hr.qmu.Lock()
	if hr.writing {
		w.done = make(chan struct{})
		hr.queue = append(hr.queue, w)
		hr.qmu.Unlock()
		<-w.done // not ctx: the leader may be appending this write
		if !w.lead {
			return w.rec, w.err
		}
	} else {
		hr.writing = true
		hr.qmu.Unlock()
	}

	hr.mu.Lock()
	batch := []*roomWrite{w}
	hr.qmu.Lock()
	if batchable(w.ev) {
		n := 0
		for n < len(hr.queue) && len(batch) < maxBatch && batchable(hr.queue[n].ev) {
			batch = append(batch, hr.queue[n])
			n++
		}
		hr.queue = append(hr.queue[:0:0], hr.queue[n:]...)
	}
	hr.qmu.Unlock()
	if len(batch) == 1 {
		w.rec, w.err = h.commitLocked(ctx, hr, w.env, w.ev, w.pf)
	} else {
		// The batch's appends serve every write of it: they do not end
		// with the leader's request.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.deadline+10*time.Second)
		h.commitBatch(bctx, hr, batch)
		cancel()
	}
	hr.mu.Unlock()
	for _, o := range batch[1:] {
		close(o.done)
	}

	hr.qmu.Lock()
	if len(hr.queue) > 0 {
		next := hr.queue[0]
		hr.queue = hr.queue[1:]
		next.lead = true
		close(next.done)
	} else {
		hr.writing = false
	}
	hr.qmu.Unlock()
	return w.rec, w.err
}

// judgedWrite is a write of a batch that passed the replica's rules.
type judgedWrite struct {
	w    *roomWrite
	c    *Commit
	hint hintedUse
}

// commitBatch judges and appends batch (hr.mu held), setting each write's
// answer.
func (h *Host) commitBatch(ctx context.Context, hr *hostRoom, batch []*roomWrite) {
	var head int64
	for _, w := range batch {
		if w.pf != nil && w.pf.ok {
			head = max(head, w.pf.st.Head)
		}
	}
	if head > hr.room.Latest().Seq {
		if err := h.catchUp(ctx, hr); err != nil {
			for _, w := range batch {
				w.err = err
			}
			return
		}
	}
	before := hr.room.Latest().Seq
	now := h.now()
	var ok []judgedWrite
	var cs []*Commit
	for _, w := range batch {
		c, hint, err := h.precheck(ctx, hr, w.ev, now)
		var p *adp.Pending
		if err == nil {
			p, err = hr.room.PrepareEvent(ctx, w.ev, now) // w.ev is w.env's, read once
		}
		if err == nil {
			err = p.Commit() // the next write is judged after this one
		}
		if err != nil {
			if errors.Is(err, ErrHeadMoved) || (ruleRefusal(err) && h.storeAhead(ctx, hr, before)) {
				// Judged on a replica that is behind (the Store has
				// records past the batch's start): start again, each
				// write on its own after catching up.
				h.unbatch(ctx, hr, batch, before)
				return
			}
			w.err = err
			continue
		}
		c.Record = p.Record
		ok = append(ok, judgedWrite{w, c, hint})
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		return
	}
	var err error
	if len(cs) == 1 {
		err = h.store.Append(ctx, cs[0])
	} else {
		err = h.store.(BatchAppender).AppendBatch(ctx, cs)
	}
	if err != nil {
		h.unbatch(ctx, hr, batch, before)
		return
	}
	hr.seq.Store(hr.room.Latest().Seq)
	due := false
	for _, j := range ok {
		h.stored(ctx, hr, j.w.ev, j.c.Record, j.hint, now)
		due = due || snapshotDue(j.c.Record.Seq, int64(h.snapEvery))
		j.w.rec = j.c.Record
	}
	if due {
		h.snapshot(ctx, hr)
	}
	for _, j := range ok {
		h.afterAccept(ctx, hr, j.w.ev, j.c.Record)
	}
}

// unbatch undoes a batch that was not stored (hr.mu held): the replica
// goes back to seq before, announcing nothing, and every write of the
// batch is judged and appended again on its own.
func (h *Host) unbatch(ctx context.Context, hr *hostRoom, batch []*roomWrite, before int64) {
	if err := h.rollback(ctx, hr, before); err != nil {
		for _, w := range batch {
			w.rec, w.err = nil, err
		}
		return
	}
	for _, w := range batch {
		w.rec, w.err = h.commitLocked(ctx, hr, w.env, w.ev, w.pf)
		if w.err != nil {
			w.rec = nil
		}
	}
}

// rollback rebuilds hr's replica at seq (hr.mu held) from the Store,
// without announcing any record: the records up to seq were announced
// already, and those after it are announced by the next catch-up.
func (h *Host) rollback(ctx context.Context, hr *hostRoom, seq int64) error {
	if hr.room.Latest().Seq == seq {
		return nil
	}
	opts := h.roomOpts
	opts.URL = h.RoomURL(hr.id)
	room := adp.NewRoom(hr.id, &opts)
	if at, snap, err := h.store.Snapshot(ctx, hr.id); err != nil {
		return err
	} else if snap != nil && at <= seq {
		if room, err = adp.RestoreRoom(snap, &opts); err != nil {
			return err
		}
	}
	for room.Latest().Seq < seq {
		recs, err := h.store.Records(ctx, hr.id, room.Latest().Seq, int(min(seq-room.Latest().Seq, 500)))
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			return errors.New("adphost: the Store lost records the replica had")
		}
		for _, rec := range recs {
			ev, err := adp.ParseEvent(rec.Envelope)
			if err != nil {
				return err
			}
			if err := room.Apply(context.WithValue(ctx, replayKey{}, ev.Type), rec); err != nil {
				return err
			}
		}
	}
	hr.room, hr.reg, hr.ix = room, room.Registry(), nil
	hr.seq.Store(seq)
	return nil
}

// storeAhead reports whether the Store's log has records after seq.
func (h *Host) storeAhead(ctx context.Context, hr *hostRoom, seq int64) bool {
	head, err := h.store.Head(ctx, hr.id)
	return err == nil && head > seq
}

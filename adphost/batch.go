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
// subscribers, only once the batch is stored. A batch that fails is taken
// back out of the replica in memory (adp.Pending.Undo), without reading
// the Store or announcing anything. When the Store refused it (a lost
// append race, one write's used nonce or quota), every write that passed
// the batch's judgment is judged and appended again on its own (catching
// up first when another process appended), so that one write's refusal or
// a lost race never becomes another write's answer; the refused writes
// keep their answers. When the Store failed (a database that is down),
// every write of it is answered service_unavailable, to be sent again.
//
// While a batch is in flight the replica holds its judged records; the
// room's lock is held until they are stored or undone, so that only a
// reader that took the replica before the batch began can see them.

// roomWrite is one write of a room's group commit.
type roomWrite struct {
	env *envelope.Envelope
	ev  *adp.Event
	pf  *prefetch
	rec *adp.Record
	err error
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
	hr.writes.Do(w, func(lead, next *roomWrite, n int) bool {
		return n < maxBatch && batchable(lead.ev) && batchable(next.ev)
	}, func(batch []*roomWrite) {
		hr.mu.Lock()
		defer hr.mu.Unlock()
		switch {
		case hr.dropped.Load():
			for _, o := range batch {
				o.err = errDropped
			}
		case len(batch) == 1:
			batch[0].rec, batch[0].err = h.commitLocked(ctx, hr, batch[0].env, batch[0].ev, batch[0].pf)
		default:
			// The batch's appends serve every write of it: they do not
			// end with the leader's request.
			bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.deadline+10*time.Second)
			h.commitBatch(bctx, hr, batch)
			cancel()
		}
	})
	return w.rec, w.err
}

// judgedWrite is a write of a batch that passed the replica's rules and
// is committed to it, pending the batch's append.
type judgedWrite struct {
	w    *roomWrite
	c    *Commit
	hint hintedUse
	p    *adp.Pending
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
	for i, w := range batch {
		c, hint, err := h.precheck(ctx, hr, w.ev, now)
		if errors.Is(err, ErrHeadMoved) {
			// The private gate found the Store ahead of the replica.
			h.rejudge(ctx, hr, ok, batch[i:])
			return
		}
		var p *adp.Pending
		if err == nil {
			if p, err = hr.room.Prepare(ctx, w.ev, now); err == nil { // w.ev is w.env's, read once
				err = p.Commit() // the next write is judged after this one
			}
			if ruleRefusal(err) && h.storeAhead(ctx, hr, before) {
				// Judged on a replica that is behind (the Store has
				// records past the batch's start): this write and the
				// rest again, each on its own after catching up.
				h.rejudge(ctx, hr, ok, batch[i:])
				return
			}
		}
		if err != nil {
			// A verdict (or precheck's failure to reach one) that stands:
			// an outsider's refusal was charged to its quota once.
			w.err = err
			continue
		}
		c.Record = p.Record
		ok = append(ok, judgedWrite{w, c, hint, p})
	}
	if len(ok) == 0 {
		return
	}
	var err error
	if len(ok) == 1 {
		err = h.store.Append(ctx, ok[0].c)
	} else {
		cs := make([]*Commit, len(ok))
		for i, j := range ok {
			cs[i] = j.c
		}
		err = h.store.(BatchAppender).AppendBatch(ctx, cs)
	}
	if err != nil {
		if storeVerdict(err) {
			// A lost append race, or one write's refusal the batch's
			// error does not name: each write again, on its own.
			h.rejudge(ctx, hr, ok, nil)
			return
		}
		// The Store failed: no verdict on any write, and whether the
		// batch was stored is unknown (a connection lost at commit).
		// The replica goes back, and checks the Store's head at its
		// next use.
		if h.undo(hr, ok) {
			hr.unsure.Store(true)
		}
		for _, j := range ok {
			j.w.err = unavailable(err)
		}
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

// rejudge undoes the batch's judged writes ok and judges and appends them
// again, then rest, each on its own (hr.mu held); the answers of the
// batch's refused writes stand. The replica is put back in memory, never
// rebuilt from the Store: that would cost a room's load on every lost
// race, and fail when the Store cannot be read.
func (h *Host) rejudge(ctx context.Context, hr *hostRoom, ok []judgedWrite, rest []*roomWrite) {
	if !h.undo(hr, ok) {
		for _, j := range ok {
			j.w.err = errDropped
		}
		for _, w := range rest {
			w.err = errDropped
		}
		return
	}
	for _, j := range ok {
		j.w.rec, j.w.err = h.commitLocked(ctx, hr, j.w.env, j.w.ev, j.w.pf)
	}
	for _, w := range rest {
		w.rec, w.err = h.commitLocked(ctx, hr, w.env, w.ev, w.pf)
	}
}

// undo takes the judged writes ok back out of the replica, newest first,
// announcing nothing (hr.mu held). A replica that cannot be put back is
// ahead of the Store: it is dropped, and undo reports false.
func (h *Host) undo(hr *hostRoom, ok []judgedWrite) bool {
	for i := len(ok) - 1; i >= 0; i-- {
		if err := ok[i].p.Undo(); err != nil {
			h.drop(hr, err)
			return false
		}
	}
	return true
}

// storeVerdict reports whether err, an append's failure, is the Store's
// verdict on the write (a moved head, a duplicate envelope, a used nonce
// or quota) rather than a failure to reach one.
func storeVerdict(err error) bool {
	return errors.Is(err, ErrHeadMoved) || errors.Is(err, ErrDuplicateEvent) || ruleRefusal(err)
}

// storeAhead reports whether the Store's log has records after seq.
func (h *Host) storeAhead(ctx context.Context, hr *hostRoom, seq int64) bool {
	head, err := h.store.Head(ctx, hr.id)
	return err == nil && head > seq
}

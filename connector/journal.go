package connector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/internal/opcount"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// The outbox journal (Dir/outbox.log) makes a room write's outbox entry
// durable before its envelope is sent with one flush: the entry is
// written to the journal and fdatasync'd, where a bbolt commit flushes
// twice (its pages, then its meta page). The next store commit moves the
// journaled entries into the outbox bucket, with the stored nonce, in the
// same transaction (journaledStore.Update); an entry that commit settles
// (the agent's own record stored, or the write dropped) never reaches the
// bucket. At Open, the entries above the stored nonce — journaled, maybe
// sent, not yet moved when the process stopped — are moved before anything
// reads the outbox, so ReplayOutbox sends them again as it does the
// bucket's.
//
// Entries are journaled under Engine.writeMu, in nonce order, and a commit
// that stores a nonce moves every entry journaled before it: an entry above
// the stored nonce is one no commit took. Once a commit has taken every
// entry, the next one is written at the start of the file again, over
// entries every later open skips (their nonces are at or below the stored
// one); an entry cut short by a crash fails its checksum and ends the
// journal, and was never sent (the send waits for the flush).
//
// A frame is the payload's length (4 bytes, big-endian), the CRC-32C of
// the length and payload (4 bytes), and the payload, a journaledEntry in
// JSON.

// journalName is the journal's file name in the state directory.
const journalName = "outbox.log"

// maxJournalFrame bounds one frame's payload when the journal is read.
const maxJournalFrame = 16 << 20

var journalCRC = crc32.MakeTable(crc32.Castagnoli)

// journaledEntry is one frame's payload.
type journaledEntry struct {
	ID    string       `json:"id"`
	Nonce int64        `json:"nonce"`
	Entry *outboxEntry `json:"entry"`
}

// outboxJournal is the open journal. Its methods are safe for concurrent
// use.
type outboxJournal struct {
	mu      sync.Mutex
	f       *os.File
	off     int64            // where the next frame goes
	pending []journaledEntry // journaled, not yet taken by a commit
	max     int64            // the highest nonce journaled
}

// openJournal opens (creating) the journal in dir and returns it with the
// entries above stored, the nonce the store holds, as pending.
func openJournal(dir string, stored int64) (*outboxJournal, error) {
	f, err := os.OpenFile(filepath.Join(dir, journalName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	j := &outboxJournal{f: f, max: stored}
	raw, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	for off := 0; ; {
		ent, n := readJournalFrame(raw[off:])
		if n == 0 {
			j.off = int64(off)
			break
		}
		off += n
		if ent.Nonce > stored {
			j.pending = append(j.pending, ent)
			j.max = max(j.max, ent.Nonce)
		}
	}
	if len(j.pending) == 0 {
		j.off = 0
	}
	return j, nil
}

// readJournalFrame decodes the frame at the start of b; n is 0 at the end
// of the journal (no whole frame with a good checksum and payload).
func readJournalFrame(b []byte) (ent journaledEntry, n int) {
	if len(b) < 8 {
		return ent, 0
	}
	l := binary.BigEndian.Uint32(b)
	if l > maxJournalFrame || uint64(len(b)-8) < uint64(l) {
		return ent, 0
	}
	sum := crc32.Update(crc32.Checksum(b[:4], journalCRC), journalCRC, b[8:8+l])
	if sum != binary.BigEndian.Uint32(b[4:]) {
		return ent, 0
	}
	if err := strictjson.Unmarshal(b[8:8+l], &ent); err != nil || ent.Entry == nil || ent.ID != outboxID(ent.Nonce) {
		return journaledEntry{}, 0
	}
	return ent, 8 + int(l)
}

// append journals ent under nonce n and flushes it; only then may its
// envelope be sent. n must be above every nonce journaled or stored
// (saved).
func (j *outboxJournal) append(n, saved int64, ent *outboxEntry) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if n <= max(saved, j.max) {
		return "", fmt.Errorf("connector: nonce %d is not above the stored nonce %d", n, max(saved, j.max))
	}
	je := journaledEntry{ID: outboxID(n), Nonce: n, Entry: ent}
	payload, err := json.Marshal(je, json.Deterministic(true))
	if err != nil {
		return "", err
	}
	frame := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint32(frame, uint32(len(payload)))
	frame = append(frame, payload...)
	binary.BigEndian.PutUint32(frame[4:], crc32.Update(crc32.Checksum(frame[:4], journalCRC), journalCRC, payload))
	if _, err := j.f.WriteAt(frame, j.off); err != nil {
		return "", err
	}
	opcount.JournalFlush()
	if err := fdatasync(j.f); err != nil {
		return "", err
	}
	j.off += int64(len(frame))
	j.max = n
	j.pending = append(j.pending, je)
	return je.ID, nil
}

// taken returns the pending entries, for a commit to move.
func (j *outboxJournal) taken() []journaledEntry {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.pending[:len(j.pending):len(j.pending)]
}

// moved forgets the first n pending entries, which a commit moved; once
// none is pending, the next frame goes at the start of the file.
func (j *outboxJournal) moved(n int) {
	if n == 0 {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pending = append([]journaledEntry(nil), j.pending[n:]...)
	if len(j.pending) == 0 {
		j.off = 0
	}
}

// isPending reports whether the entry id is journaled and not yet moved.
func (j *outboxJournal) isPending(id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, p := range j.pending {
		if p.ID == id {
			return true
		}
	}
	return false
}

func (j *outboxJournal) close() error { return j.f.Close() }

// journaledStore is the engine's store with the outbox journal in front
// of its outbox bucket: each commit moves the journaled entries in.
type journaledStore struct {
	stateStore
	j  *outboxJournal
	mu sync.Mutex // one Update at a time, from taking the entries to forgetting them
}

// Update runs fn in one transaction with the journaled entries: those fn
// settles (journalTx.settle) are dropped, the others put in the outbox
// bucket, and the stored nonce raised to the last of them, when fn's
// changes commit.
func (s *journaledStore) Update(fn func(stateTx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	take := s.j.taken()
	err := s.stateStore.Update(func(tx stateTx) error {
		jt := &journalTx{stateTx: tx, take: take}
		if err := fn(jt); err != nil {
			return err
		}
		return jt.move()
	})
	if err == nil {
		s.j.moved(len(take))
	}
	return err
}

// openJournaled opens the outbox journal of the store st in dir and moves
// the entries no commit took before the process stopped into the outbox
// bucket.
func openJournaled(dir string, st stateStore) (*journaledStore, error) {
	var stored int64
	if err := st.View(func(tx stateTx) error {
		_, err := tx.Get(bMeta, "nonce", &stored)
		return err
	}); err != nil {
		return nil, err
	}
	j, err := openJournal(dir, stored)
	if err != nil {
		return nil, err
	}
	s := &journaledStore{stateStore: st, j: j}
	if len(j.pending) > 0 {
		if err := s.Update(func(stateTx) error { return nil }); err != nil {
			j.close()
			return nil, err
		}
	}
	return s, nil
}

// Close closes the journal and the store.
func (s *journaledStore) Close() error {
	return errors.Join(s.j.close(), s.stateStore.Close())
}

// journalTx is a transaction of journaledStore.
type journalTx struct {
	stateTx
	take    []journaledEntry
	settled map[string]bool
}

// settle resolves the journaled entry id within the transaction when it
// is one it takes and match accepts it: the entry is not moved to the
// outbox bucket (the transaction records what became of it). It reports
// whether it did.
func (t *journalTx) settle(id string, match func(*outboxEntry) bool) bool {
	for _, p := range t.take {
		if p.ID == id && !t.settled[id] && match(p.Entry) {
			if t.settled == nil {
				t.settled = map[string]bool{}
			}
			t.settled[id] = true
			return true
		}
	}
	return false
}

// move puts the taken entries fn did not settle into the outbox bucket
// and raises the stored nonce to the last taken.
func (t *journalTx) move() error {
	if len(t.take) == 0 {
		return nil
	}
	for _, p := range t.take {
		if !t.settled[p.ID] {
			if err := t.Put(bOutbox, p.ID, p.Entry); err != nil {
				return err
			}
		}
	}
	var saved int64
	if _, err := t.Get(bMeta, "nonce", &saved); err != nil {
		return err
	}
	if n := t.take[len(t.take)-1].Nonce; n > saved {
		return t.Put(bMeta, "nonce", n)
	}
	return nil
}

// settleJournaled settles the journaled entry id in tx when tx is a
// journalTx that takes it (see journalTx.settle).
func settleJournaled(tx stateTx, id string, match func(*outboxEntry) bool) bool {
	jt, ok := tx.(*journalTx)
	return ok && jt.settle(id, match)
}

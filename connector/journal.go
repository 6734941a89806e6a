package connector

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/go-json-experiment/json"
	bolt "go.etcd.io/bbolt"

	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// Earlier versions made a room write's outbox entry durable in an outbox
// journal (Dir/outbox.log) instead of the state log: a frame per entry,
// moved into the outbox bucket by the next commit. Open moves what such a
// journal still holds (the entries above the stored nonce: journaled,
// maybe sent, never moved) into the outbox bucket, where ReplayOutbox
// sends them again, and removes the file.
//
// A frame is the payload's length (4 bytes, big-endian), the CRC-32C of
// the length and payload (4 bytes), and the payload, a journaledEntry in
// JSON.

// journalName is the outbox journal's file name in the state directory.
const journalName = "outbox.log"

// maxJournalFrame bounds one frame's payload when the journal is read.
const maxJournalFrame = 16 << 20

// journaledEntry is one outbox journal frame's payload.
type journaledEntry struct {
	ID    string       `json:"id"`
	Nonce int64        `json:"nonce"`
	Entry *outboxEntry `json:"entry"`
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
	sum := crc32.Update(crc32.Checksum(b[:4], walCRC), walCRC, b[8:8+l])
	if sum != binary.BigEndian.Uint32(b[4:]) {
		return ent, 0
	}
	if err := strictjson.Unmarshal(b[8:8+l], &ent); err != nil || ent.Entry == nil || ent.ID != outboxID(ent.Nonce) {
		return journaledEntry{}, 0
	}
	return ent, 8 + int(l)
}

// migrateOutboxJournal moves the entries an outbox journal in dir holds
// above db's stored nonce into the outbox bucket, raising the stored
// nonce, in one flushed commit, then removes the journal.
func migrateOutboxJournal(dir string, db *bolt.DB) error {
	path := filepath.Join(dir, journalName)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists([]byte(bMeta))
		if err != nil {
			return err
		}
		var stored int64
		if v := meta.Get([]byte("nonce")); v != nil {
			if err := strictjson.Unmarshal(v, &stored); err != nil {
				return err
			}
		}
		outbox, err := tx.CreateBucketIfNotExists([]byte(bOutbox))
		if err != nil {
			return err
		}
		for off := 0; ; {
			ent, n := readJournalFrame(raw[off:])
			if n == 0 {
				break
			}
			off += n
			if ent.Nonce <= stored {
				continue
			}
			v, err := json.Marshal(ent.Entry, json.Deterministic(true))
			if err != nil {
				return err
			}
			if err := outbox.Put([]byte(ent.ID), v); err != nil {
				return err
			}
			stored = ent.Nonce
			if err := meta.Put([]byte("nonce"), strconv.AppendInt(nil, stored, 10)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return os.Remove(path)
}

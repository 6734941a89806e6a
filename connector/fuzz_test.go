package connector

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// FuzzParseSeed: whatever a key file decrypts to, parsing never panics and
// yields a key only for the exact seed format.
func FuzzParseSeed(f *testing.F) {
	f.Add([]byte(seedMagic + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"))
	f.Add([]byte(seedMagic))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := parseSeed(b)
		if (k == nil) == (err == nil) {
			t.Fatalf("key %v, err %v", k, err)
		}
	})
}

// FuzzStoredValues: stored values are decoded strictly and never panic; a
// value that decodes re-encodes to one that decodes the same way.
func FuzzStoredValues(f *testing.F) {
	f.Add([]byte(`{"host":"h","room_id":"r","synced_seq":3,"remote_seq":3,"read_seq":1,"subscribe":true}`))
	f.Add([]byte(`{"item":{"id":"inbox_x","kind":"room.mention","priority":"high","host":"h","room_id":"r","seq":1,"event_id":"e","actor":"a","created_at":1,"requires_response":true,"deadline":null,"reason":"r","suggested_tools":[]},"state":"pending"}`))
	f.Add([]byte(`{"host":"h","room_id":"r","envelope":{},"created_at":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var sr storedRoom
		_ = unmarshalStored(b, &sr)
		var it storedInbox
		_ = unmarshalStored(b, &it)
		var ob outboxEntry
		_ = unmarshalStored(b, &ob)
		var d storedDraft
		_ = unmarshalStored(b, &d)
	})
}

// FuzzJournalFrame: whatever the outbox journal holds, reading a frame
// never panics and takes only a whole frame; a frame the journal writes
// reads back as written, also when garbage follows it.
func FuzzJournalFrame(f *testing.F) {
	dir := f.TempDir()
	j, err := openJournal(dir, 0)
	if err != nil {
		f.Fatal(err)
	}
	defer j.close()
	ent := &outboxEntry{Host: "http://h", RoomID: "r", Envelope: jsontext.Value(`{"event":{}}`), CreatedAt: 1}
	if _, err := j.append(7, 0, ent); err != nil {
		f.Fatal(err)
	}
	frame, err := os.ReadFile(filepath.Join(dir, journalName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(frame, []byte(nil))
	f.Add(frame[:len(frame)-1], []byte("x"))
	f.Add([]byte{0, 0, 0, 2, 0, 0, 0, 0, '{', '}'}, []byte(nil))
	f.Fuzz(func(t *testing.T, b, tail []byte) {
		if _, n := readJournalFrame(b); n < 0 || n > len(b) || n > 0 && n < 8 {
			t.Fatalf("frame of %d bytes in %d", n, len(b))
		}
		got, n := readJournalFrame(append(append([]byte(nil), frame...), tail...))
		if n != len(frame) || got.Nonce != 7 || got.ID != outboxID(7) || got.Entry.Host != ent.Host || string(got.Entry.Envelope) != string(ent.Envelope) {
			t.Fatalf("the written frame reads back as %+v (%d bytes of %d)", got, n, len(frame))
		}
	})
}

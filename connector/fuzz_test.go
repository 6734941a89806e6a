package connector

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"
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

// legacyJournalFrame is a frame of the outbox journal earlier versions
// wrote (journal.go).
func legacyJournalFrame(t testing.TB, nonce int64, ent *outboxEntry) []byte {
	payload, err := json.Marshal(journaledEntry{ID: outboxID(nonce), Nonce: nonce, Entry: ent}, json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	frame = binary.BigEndian.AppendUint32(frame, crc32.Update(crc32.Checksum(frame, walCRC), walCRC, payload))
	return append(frame, payload...)
}

// FuzzJournalFrame: whatever an outbox journal of an earlier version
// holds, reading a frame never panics and takes only a whole frame; a
// well-formed frame reads back as written, also when garbage follows it.
func FuzzJournalFrame(f *testing.F) {
	ent := &outboxEntry{Host: "http://h", RoomID: "r", Envelope: jsontext.Value(`{"event":{}}`), CreatedAt: 1}
	frame := legacyJournalFrame(f, 7, ent)
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

// FuzzWALFrame: whatever the state log holds, reading a frame never
// panics and takes only a whole frame; a frame the store writes reads back
// as written (the same changes, encoded again to the same bytes), also
// when garbage follows it.
func FuzzWALFrame(f *testing.F) {
	ch := walChanges{bOutbox: {"00000000000000000007": []byte(`{"host":"h"}`), "x": nil}, bMeta: {"nonce": []byte("7")}}
	frame := appendWALFrame(nil, 42, walFlushed, ch)
	f.Add(frame, []byte(nil))
	f.Add(frame[:len(frame)-1], []byte("x"))
	f.Add(appendWALFrame(nil, 1, 0, walChanges{"b": {"": nil}}), []byte{0})
	f.Fuzz(func(t *testing.T, b, tail []byte) {
		fr, n := readWALFrame(b)
		if n < 0 || n > len(b) || n > 0 && n < 17 {
			t.Fatalf("frame of %d bytes in %d", n, len(b))
		}
		if n > 0 {
			// A frame read is one the store could have written.
			if again := appendWALFrame(nil, fr.lsn, fr.flags, fr.changes); !bytes.Equal(again, b[:n]) {
				t.Fatalf("frame %x encodes again as %x", b[:n], again)
			}
		}
		got, n := readWALFrame(append(append([]byte(nil), frame...), tail...))
		if n != len(frame) || got.lsn != 42 || got.flags != walFlushed || !reflect.DeepEqual(got.changes, ch) {
			t.Fatalf("the written frame reads back as %+v (%d bytes of %d)", got, n, len(frame))
		}
	})
}

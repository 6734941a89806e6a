package adp

import (
	"testing"
)

// FuzzParseRecordList: a hostile history page never panics, and a page
// that parses holds records that re-encode and parse to the same hash.
func FuzzParseRecordList(f *testing.F) {
	f.Add([]byte(`{"result":[]}`))
	f.Add([]byte(`{"result":[],"next_cursor":"Yzox"}`))
	f.Add([]byte(`{"result":[{"room_id":"r","seq":1,"pre_hash":null,"hash":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","received_at":1,"envelope":{}}]}`))
	f.Add([]byte(`{"result":[1],"x":2}`))
	f.Add([]byte(`{"result":[],"next_cursor":null,"count":{"n":[1,2]}}`))
	f.Add([]byte(`{"x":9007199254740993,"result":[]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"result":[{"accepted_at":1,"room_id":"r","seq":1,"pre_hash":null,"hash":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","envelope":{}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, d := range drafts() {
			recs, _, err := parseRecordList(d, b)
			if err != nil {
				continue
			}
			for _, r := range recs {
				again, err := ParseRecordIn(d, r.AppendJSON(nil))
				if err != nil {
					t.Fatalf("a parsed record does not re-parse: %v", err)
				}
				if again.ComputeHash() != r.ComputeHash() {
					t.Fatal("re-encoding changed the record")
				}
			}
		}
	})
}

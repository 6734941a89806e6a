package sse

import (
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
)

// TestAheadSkipsDuplicates: a hostile stream cannot make the follower
// verify one record many times. Copies of a record ahead of the gap are recognised by seq
// before their signatures are checked again; only the first copy of each
// seq is pre-checked, and what was delivered is forgotten.
func TestAheadSkipsDuplicates(t *testing.T) {
	f := &follower{o: Options{RoomID: "r", MaxPending: 8}}
	rec := func(seq int64) raw {
		return raw{kind: rawEvent, typ: EventRecord, rec: &adp.Record{RoomID: "r", Seq: seq}}
	}
	seqs := func(recs []*adp.Record) []int64 {
		var out []int64
		for _, r := range recs {
			out = append(out, r.Seq)
		}
		return out
	}
	if got := seqs(f.ahead([]raw{rec(2), rec(2), rec(2), rec(3)})); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("first batch pre-checks %v, want [2 3]", got)
	}
	for range 1000 {
		if got := f.ahead([]raw{rec(2), rec(3), rec(3)}); len(got) != 0 {
			t.Fatalf("a repeated copy is pre-checked again: %v", seqs(got))
		}
	}
	foreign := raw{kind: rawEvent, typ: EventRecord, rec: &adp.Record{RoomID: "other", Seq: 4}}
	if got := seqs(f.ahead([]raw{rec(4), foreign, rec(20)})); len(got) != 1 || got[0] != 4 {
		t.Fatalf("pre-checks %v, want [4] (not another room's, not beyond MaxPending)", got)
	}
	f.lastSeq.Store(3)
	if got := seqs(f.ahead([]raw{rec(3), rec(5)})); len(got) != 1 || got[0] != 5 || len(f.prechecked) != 2 {
		t.Fatalf("after delivery pre-checks %v with %d remembered, want [5] with 2", got, len(f.prechecked))
	}
}

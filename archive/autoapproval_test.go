package archive_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
)

// TestVerifyAutoApprovedJoins: a public room's history in which members
// join with automatically approved requests — no room.join.review in the
// log (§9.2, §11) — verifies.
func TestVerifyAutoApprovedJoins(t *testing.T) {
	recs := vectorRecords(t, "auto-approval")
	m, log, _ := build(t, recs, fixedClock)
	rep, err := archive.Verify(context.Background(), m, bytes.NewReader(log), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Valid || rep.Records != int64(len(recs)) || len(rep.Members) != 4 {
		t.Fatalf("report %+v", rep)
	}
}

// TestVerifyRefusesDecreasingReceivedAt: received_at must not go back
// along the chain (§15), so a host cannot backdate a record to a time
// when, say, a join request was still valid.
func TestVerifyRefusesDecreasingReceivedAt(t *testing.T) {
	recs := vectorRecords(t, "cancelled")
	// Relink the chain with record 3 dated a millisecond before record 2:
	// every hash and pre_hash is right, only the time goes back.
	out := make([]*adp.Record, len(recs))
	for i, r := range recs {
		at := r.ReceivedAt
		if i == 2 {
			at = recs[1].ReceivedAt - 1
		}
		var prev *adp.Record
		if i > 0 {
			prev = out[i-1]
		}
		out[i] = adp.NewRecord(r.RoomID, prev, at, r.Envelope)
	}
	m, log, _ := build(t, out, fixedClock)
	rep, err := archive.Verify(context.Background(), m, bytes.NewReader(log), nil)
	wantFailure(t, rep, err, adp.CodeInvalidRecord, 3)
}

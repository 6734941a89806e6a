package archive_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
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

// TestEventsDigestCoversExtraRecordMembers: members a record carries
// beyond the six of §15 are outside the record hash but inside
// events_sha3_256, which covers the records as given, canonicalized.
func TestEventsDigestCoversExtraRecordMembers(t *testing.T) {
	recs := vectorRecords(t, "cancelled")
	plain, _, _ := build(t, recs, fixedClock)
	withExtra := slices.Clone(recs)
	c := *recs[1]
	c.Extra = envelope.Fields{{Name: "host_note", Value: jsontext.Value(`{"b":1,"a":"x"}`)}}
	withExtra[1] = &c
	m, log, _ := build(t, withExtra, fixedClock)
	if m.EventsSHA3256 == plain.EventsSHA3256 || m.LastHash != plain.LastHash {
		t.Fatal("an extra record member changed the record hash or left events_sha3_256 unchanged")
	}
	if _, err := archive.Verify(context.Background(), m, bytes.NewReader(log), nil); err != nil {
		t.Fatal(err)
	}
	// The digest is over the canonical form: member order and whitespace
	// inside the extra member do not matter, its content does.
	reordered := bytes.Replace(log, []byte(`{"a":"x","b":1}`), []byte(`{ "b": 1, "a": "x" }`), 1)
	if bytes.Equal(reordered, log) {
		t.Fatal("the extra member is not in the log")
	}
	if _, err := archive.Verify(context.Background(), m, bytes.NewReader(reordered), nil); err != nil {
		t.Fatalf("a re-encoded extra member: %v", err)
	}
	altered := bytes.Replace(log, []byte(`{"a":"x","b":1}`), []byte(`{"a":"y","b":1}`), 1)
	rep, err := archive.Verify(context.Background(), m, bytes.NewReader(altered), nil)
	wantFailure(t, rep, err, archive.CodeArchiveMismatch, 0)
}

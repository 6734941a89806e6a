package boltstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	bolt "go.etcd.io/bbolt"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/adphost/storetest"
	"github.com/agentprotocols/go-sdk/identity"
)

// TestConformance: the bbolt store passes the Store suite.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) adphost.Store {
		s, err := Open(filepath.Join(t.TempDir(), "host.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestReopen: everything survives closing and reopening the file.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "host.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := storetest.Author("creator")
	env, err := adp.NewRoomCreate(ctx, a, adp.RoomCreate{Topic: "t", Visibility: adp.VisibilityPublic,
		StartTime: storetest.T0.UnixMilli(), EndTime: storetest.T0.Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	r1 := adp.NewRecord("room", nil, 1, env)
	if err := s.Append(ctx, storetest.Commit(r1)); err != nil {
		t.Fatal(err)
	}
	jr := &adp.JoinRequestResource{Request: adp.JoinRequest{ID: "jr_1", RoomID: "room", Applicant: a.AgentID(), Role: adp.RoleSpeaker, CreatedAt: 1, ExpiresAt: 2}, Status: adp.JoinPending}
	if err := s.PutJoinRequest(ctx, jr); err != nil {
		t.Fatal(err)
	}
	if err := s.PutStatus(ctx, &adp.AgentStatus{RoomID: "room", AgentID: a.AgentID(), State: "idle", ExpiresAt: 5}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSnapshot(ctx, "room", 1, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rec, err := s.RecordByEvent(ctx, env.Hash()); err != nil || rec == nil || rec.Seq != 1 || rec.Hash != r1.Hash {
		t.Fatalf("by event: %v, %v", rec, err)
	}
	if got, err := s.JoinRequest(ctx, "room", "jr_1"); err != nil || got == nil || got.Status != adp.JoinPending {
		t.Fatalf("join request: %v, %v", got, err)
	}
	if sts, err := s.Statuses(ctx, "room"); err != nil || len(sts) != 1 {
		t.Fatalf("statuses: %v, %v", sts, err)
	}
	if n, _, err := s.MaxNonce(ctx, a.AgentID()); err != nil || n == 0 {
		t.Fatalf("nonce %d %v", n, err)
	}
	if seq, snap, err := s.Snapshot(ctx, "room"); err != nil || seq != 1 || string(snap) != "{}" {
		t.Fatalf("snapshot %d %q %v", seq, snap, err)
	}
	if list, err := s.PublicRooms(ctx); err != nil || len(list) != 1 || list[0].Summary.ID != "room" {
		t.Fatalf("public rooms %+v %v", list, err)
	}
}

// TestJoinRequestIndex: a join request flood (§11) costs a lookup
// nothing. One join request is one key lookup (it
// never decodes the room's other requests, here a corrupt one), the list
// comes in creation order from the index, and a file from before the
// index gets one when it is opened.
func TestJoinRequestIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "host.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := identity.NewKeyFromSeed(make([]byte, 32))
	for _, r := range []struct {
		id string
		at int64
	}{{"jr_c", 1}, {"jr_a", 3}, {"jr_b", 2}} {
		jr := &adp.JoinRequestResource{Request: adp.JoinRequest{ID: r.id, RoomID: "room", Applicant: k.AgentID(), Role: adp.RoleSpeaker, CreatedAt: r.at, ExpiresAt: 9}, Status: adp.JoinPending}
		if err := s.PutJoinRequest(ctx, jr); err != nil {
			t.Fatal(err)
		}
	}
	order := func() []string {
		list, err := s.JoinRequests(ctx, "room")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, jr := range list {
			ids = append(ids, jr.Request.ID)
		}
		return ids
	}
	if got := order(); !slices.Equal(got, []string{"jr_c", "jr_b", "jr_a"}) {
		t.Fatalf("creation order: %v", got)
	}
	// An update keeps the request's place.
	jr, _ := s.JoinRequest(ctx, "room", "jr_c")
	jr.Status = adp.JoinRejected
	if err := s.PutJoinRequest(ctx, jr); err != nil {
		t.Fatal(err)
	}
	if got := order(); !slices.Equal(got, []string{"jr_c", "jr_b", "jr_a"}) {
		t.Fatalf("after an update: %v", got)
	}
	// One applicant's requests come from the applicant index.
	other := &adp.JoinRequestResource{Request: adp.JoinRequest{ID: "jr_z", RoomID: "room", Applicant: key2(t).AgentID(), Role: adp.RoleSpeaker, CreatedAt: 0, ExpiresAt: 9}, Status: adp.JoinPending}
	if err := s.PutJoinRequest(ctx, other); err != nil {
		t.Fatal(err)
	}
	var _ adphost.JoinRequestIndex = s
	for _, c := range []struct {
		who  identity.AgentID
		want []string
	}{{k.AgentID(), []string{"jr_c", "jr_b", "jr_a"}}, {key2(t).AgentID(), []string{"jr_z"}}} {
		list, err := s.ApplicantJoinRequests(ctx, "room", c.who)
		var got []string
		for _, jr := range list {
			got = append(got, jr.Request.ID)
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Fatalf("applicant's requests: %v, %v", got, err)
		}
	}
	pending := func() []string {
		list, err := s.PendingJoinRequests(ctx, "room", 0)
		n, cerr := s.CountPendingJoinRequests(ctx, "room", 0)
		var ids []string
		for _, jr := range list {
			ids = append(ids, jr.Request.ID)
		}
		if err != nil || cerr != nil || n != len(ids) {
			t.Fatalf("pending requests: %v (%d counted), %v, %v", ids, n, err, cerr)
		}
		return ids
	}
	if got := pending(); !slices.Equal(got, []string{"jr_z", "jr_b", "jr_a"}) {
		t.Fatalf("pending requests: %v", got)
	}
	s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bRequests).Bucket([]byte("room")).Put([]byte("jr_0"), []byte("{corrupt"))
	})
	if got, err := s.JoinRequest(ctx, "room", "jr_b"); err != nil || got == nil || got.Request.CreatedAt != 2 {
		t.Fatalf("lookup next to a corrupt request: %v, %v", got, err)
	}
	// A file without the index.
	s.db.Update(func(tx *bolt.Tx) error {
		tx.Bucket(bRequests).Bucket([]byte("room")).Delete([]byte("jr_0"))
		tx.DeleteBucket(bAppl)
		tx.DeleteBucket(bPending)
		return tx.DeleteBucket(bOrder)
	})
	s.Close()
	if s, err = Open(path, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := order(); !slices.Equal(got, []string{"jr_z", "jr_c", "jr_b", "jr_a"}) {
		t.Fatalf("rebuilt index: %v", got)
	}
	if list, err := s.ApplicantJoinRequests(ctx, "room", key2(t).AgentID()); err != nil || len(list) != 1 {
		t.Fatalf("rebuilt applicant index: %v, %v", list, err)
	}
	if got := pending(); !slices.Equal(got, []string{"jr_z", "jr_b", "jr_a"}) {
		t.Fatalf("rebuilt pending index: %v", got)
	}
}

// BenchmarkJoinRequestLookup: one request among 20,000 of a room (the
// flood a room's request quota allows), against the full list, which is what a lookup
// cost before the index (a scan, decode and sort of every request).
func BenchmarkJoinRequestLookup(b *testing.B) {
	ctx := context.Background()
	s, err := Open(filepath.Join(b.TempDir(), "host.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	k, _ := identity.NewKeyFromSeed(make([]byte, 32))
	s.db.Update(func(tx *bolt.Tx) error {
		r, _ := tx.Bucket(bRequests).CreateBucketIfNotExists([]byte("room"))
		for i := range 20000 {
			jr := adp.JoinRequestResource{Request: adp.JoinRequest{ID: fmt.Sprintf("jr_%05d", i), RoomID: "room", Applicant: k.AgentID(), Role: adp.RoleSpeaker, CreatedAt: int64(i), ExpiresAt: int64(i)}, Status: adp.JoinPending}
			v, _ := json.Marshal(&jr)
			r.Put([]byte(jr.Request.ID), v)
			indexRequest(tx, &jr.Request)
			indexPending(tx, nil, &jr)
		}
		return nil
	})
	b.Run("lookup", func(b *testing.B) {
		for b.Loop() {
			if jr, err := s.JoinRequest(ctx, "room", "jr_12345"); err != nil || jr == nil {
				b.Fatal(jr, err)
			}
		}
	})
	b.Run("pending", func(b *testing.B) { // the pending bound of a new request
		for b.Loop() {
			if n, err := s.CountPendingJoinRequests(ctx, "room", 19989); err != nil || n != 10 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("page", func(b *testing.B) { // one page of the reviewers' list
		for b.Loop() {
			if list, err := s.JoinRequestsAfter(ctx, "room", adphost.JoinRequestKey{CreatedAt: 12345, ID: "jr_12345"}, 100); err != nil || len(list) != 100 {
				b.Fatal(len(list), err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if list, err := s.JoinRequests(ctx, "room"); err != nil || len(list) != 20000 {
				b.Fatal(len(list), err)
			}
		}
	})
}

// key2 is a second applicant's key.
func key2(t *testing.T) *identity.PrivateKey {
	seed := make([]byte, 32)
	seed[0] = 1
	k, err := identity.NewKeyFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestRecordsOutliveTheFile: records read from the store are the caller's
// own, not views of bbolt's memory map, which ends with the read
// transaction (and is unmapped when the file grows or closes).
func TestRecordsOutliveTheFile(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "host.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := storetest.Chain(t, "room", 20)
	for i, r := range recs {
		c := storetest.Commit(r)
		c.Nonce.Nonce = int64(i + 1)
		if err := s.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Records(ctx, "room", 0, 100, 1<<30)
	if err != nil || len(got) != len(recs) {
		t.Fatalf("Records: %d, %v", len(got), err)
	}
	one, err := s.RecordByEvent(ctx, recs[3].Envelope.Hash())
	if err != nil || one == nil {
		t.Fatalf("RecordByEvent: %v", err)
	}
	s.Close() // unmaps the file
	// The parsed text and the payload are what a parse may share with
	// its input.
	same := func(r, built *adp.Record) bool {
		w := string(built.AppendJSON(nil))
		want, err := adp.ParseRecord([]byte(w))
		if err != nil {
			t.Fatal(err)
		}
		pc := r.CanonicalInput()
		return (pc == nil || string(pc) == w) && string(r.AppendJSON(nil)) == w &&
			string(r.Envelope.Event().Payload) == string(want.Envelope.Event().Payload)
	}
	for i, r := range got {
		if !same(r, recs[i]) {
			t.Fatalf("record %d differs once the file is closed", r.Seq)
		}
	}
	if !same(one, recs[3]) {
		t.Fatal("RecordByEvent's record differs once the file is closed")
	}
}

// TestOpenHeldFile: a file another Store (another process) holds is not
// waited for: Open fails with ErrLocked after LockTimeout, naming the
// file.
func TestOpenHeldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "host.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	s2, err := Open(path, &Options{LockTimeout: 100 * time.Millisecond})
	if err == nil {
		s2.Close()
		t.Fatal("a held file opened")
	}
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open of a held file: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Open of a held file took %v", d)
	}
}

// TestReadCost: one history page over records of 256 KiB costs the host
// memory in proportion to its byte budget, not to its limit, and an
// archive in proportion to the budget, not to the room.
func TestReadCost(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "host.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	adphosttest.CheckReadCost(t, s, 300)
}

// TestLaterDraft: a host of the 2026-09-24 draft on a bbolt file passes
// the wire-level check (its records, accepted_at first, and its signed
// join requests are kept as they came), and a host reopened on the file
// serves the room's history again.
func TestLaterDraft(t *testing.T) {
	path := filepath.Join(t.TempDir(), "host.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	adphosttest.CheckLaterDraft(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rooms, err := s.PublicRooms(t.Context())
	if err != nil || len(rooms) != 1 {
		t.Fatalf("rooms after reopening: %v, %v", rooms, err)
	}
	recs, err := s.Records(t.Context(), rooms[0].Summary.ID, 0, 100, 1<<20)
	if err != nil || len(recs) == 0 || recs[0].Draft != adp.Draft20260924 {
		t.Fatalf("records after reopening: %d, %v", len(recs), err)
	}
}

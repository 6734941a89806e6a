// Package storetest is the conformance suite of [adphost.Store]: one set
// of tests that the memory, bbolt and PostgreSQL stores all pass (append
// races, resubmission, nonce races, snapshots, the room index, join
// requests, statuses, quota windows, paging). A store of one's own is
// checked by calling [Run] from a test:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) adphost.Store { return open(t) })
//	}
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// Open returns an empty store for one test; the test's cleanup closes it.
type Open func(t *testing.T) adphost.Store

// Run runs every conformance test on stores from open; AppendBatch runs
// only on a Store with group commit (adphost.BatchAppender), the others on
// every Store.
func Run(t *testing.T, open Open) {
	_, batches := open(t).(adphost.BatchAppender)
	for _, c := range []struct {
		name string
		f    func(*testing.T, adphost.Store)
	}{
		{"AppendIfHead", appendIfHead},
		{"AppendRace", appendRace},
		{"Resubmission", resubmission},
		{"NonceCheckAndAdvance", nonceAdvance},
		{"NonceRace", nonceRace},
		{"Quota", quota},
		{"Snapshot", snapshot},
		{"Index", index},
		{"JoinRequests", joinRequests},
		{"HoldJoinRequest", holdJoinRequest},
		{"Invites", invites},
		{"JoinRequestIndex", joinRequestIndex},
		{"Statuses", statuses},
		{"Paging", paging},
		{"PageBytes", pageBytes},
		{"RecordsOutliveReads", recordsOutliveReads},
		{"AppendBatch", appendBatch},
		{"LaterDraft", laterDraft},
	} {
		if c.name == "AppendBatch" && !batches {
			continue
		}
		t.Run(c.name, func(t *testing.T) { c.f(t, open(t)) })
	}
}

// T0 is the suite's clock.
var T0 = time.UnixMilli(1779753600000)

var (
	keysMu sync.Mutex
	keys   = map[string]*envelope.Author{}
)

// Author returns a fixed author for name.
func Author(name string) *envelope.Author {
	keysMu.Lock()
	defer keysMu.Unlock()
	if a := keys[name]; a != nil {
		return a
	}
	seed := make([]byte, 32)
	copy(seed, "storetest:"+name)
	k, err := identity.NewKeyFromSeed(seed)
	if err != nil {
		panic(err)
	}
	a := envelope.NewAuthor(k)
	keys[name] = a
	return a
}

// chain builds records of a room: a room.create by "creator" and then
// messages, each linked to the one before.
type chain struct {
	t    *testing.T
	room string
	recs []*adp.Record
	n    int
}

func newChain(t *testing.T, room string) *chain {
	t.Helper()
	c := &chain{t: t, room: room}
	env, err := adp.NewRoomCreate(context.Background(), Author("creator"), adp.RoomCreate{
		Topic: "storetest " + room, Visibility: adp.VisibilityPublic, StartTime: T0.UnixMilli(), EndTime: T0.Add(time.Hour).UnixMilli(),
	})
	if err != nil {
		t.Fatal(err)
	}
	c.recs = []*adp.Record{adp.NewRecord(room, nil, T0.UnixMilli(), env)}
	return c
}

// next returns a new message record following the chain's last, signed
// by name, without adding it to the chain.
func (c *chain) next(name string) *adp.Record {
	c.t.Helper()
	return c.nextText(name, "")
}

// nextText is next with pad after the message's own text.
func (c *chain) nextText(name, pad string) *adp.Record {
	c.t.Helper()
	c.n++
	last := c.recs[len(c.recs)-1]
	env, err := adp.NewMessage(context.Background(), Author(name), adp.Base{RoomID: c.room, Seq: last.Seq, Hash: last.Hash},
		adp.Message{ContentType: "text/plain", Content: adp.TextContent(fmt.Sprintf("m%d", c.n) + pad)})
	if err != nil {
		c.t.Fatal(err)
	}
	return adp.NewRecord(c.room, last, last.ReceivedAt+1, env)
}

func (c *chain) add(rec *adp.Record) { c.recs = append(c.recs, rec) }

// Commit wraps rec with its actor's nonce (live for ten minutes after
// its received_at) and, for a seq 1 record, a public room's index entry.
func Commit(rec *adp.Record) *adphost.Commit {
	ev, err := adp.ParseEventIn(rec.Draft, rec.Envelope)
	if err != nil {
		panic(err)
	}
	c := &adphost.Commit{Record: rec, Nonce: adphost.NonceAdvance{Actor: ev.Actor, Nonce: ev.Nonce, Now: rec.ReceivedAt, ExpiresAt: rec.ReceivedAt + 600_000}}
	if rec.Seq == 1 {
		c.Index = &adphost.RoomIndex{
			Summary: adp.RoomSummary{ID: rec.RoomID, Status: adp.StatusScheduled, Creator: ev.Actor, Topic: "storetest " + rec.RoomID,
				Visibility: adp.VisibilityPublic, StartTime: T0.UnixMilli(), EndTime: T0.Add(time.Hour).UnixMilli(), Seq: 1, LastActivity: rec.ReceivedAt, Members: 1},
			Members: []adphost.MemberIndex{{Agent: ev.Actor, Role: adp.RoleModerator, Status: adp.MemberActive}},
		}
	}
	return c
}

// res carries a result and its error to get, which fails the test on
// the error.
type res[T any] struct {
	v   T
	err error
}

func try[T any](v T, err error) res[T] { return res[T]{v, err} }

func (r res[T]) get(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func sameRecord(t *testing.T, got, want *adp.Record) {
	t.Helper()
	if got == nil || got.RoomID != want.RoomID || got.Seq != want.Seq || got.Hash != want.Hash ||
		got.PreHash != want.PreHash || got.ReceivedAt != want.ReceivedAt || string(got.AppendJSON(nil)) != string(want.AppendJSON(nil)) {
		t.Fatalf("record %+v, want %+v", got, want)
	}
}

// appendIfHead: the log takes only the record that follows its last one.
func appendIfHead(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	c := newChain(t, "r1")
	r2 := c.next("alice")
	if err := s.Append(ctx, Commit(r2)); !errors.Is(err, adphost.ErrHeadMoved) {
		t.Fatalf("seq 2 into an empty log: %v", err)
	}
	ok(t, s.Append(ctx, Commit(c.recs[0])))
	if err := s.Append(ctx, Commit(c.recs[0])); !errors.Is(err, adphost.ErrHeadMoved) && !errors.Is(err, adphost.ErrDuplicateEvent) {
		t.Fatalf("seq 1 twice: %v", err)
	}
	forked := *r2
	forked.PreHash = envelope.Sum([]byte("other"))
	if err := s.Append(ctx, Commit(&forked)); !errors.Is(err, adphost.ErrHeadMoved) {
		t.Fatalf("a fork: %v", err)
	}
	ok(t, s.Append(ctx, Commit(r2)))
	c.add(r2)
	if h := try(s.Head(ctx, "r1")).get(t); h != 2 {
		t.Fatalf("head %d, want 2", h)
	}
	if h := try(s.Head(ctx, "none")).get(t); h != 0 {
		t.Fatalf("head of a missing room %d", h)
	}
	recs := try(s.Records(ctx, "r1", 0, 10, all)).get(t)
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	sameRecord(t, recs[0], c.recs[0])
	sameRecord(t, recs[1], r2)
}

// appendRace: writers racing on one head get one record in; every other
// gets ErrHeadMoved and nothing of it is kept (its nonce included).
func appendRace(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	c := newChain(t, "race")
	ok(t, s.Append(ctx, Commit(c.recs[0])))
	const n = 8
	cands := make([]*adp.Record, n)
	for i := range cands {
		cands[i] = c.next(fmt.Sprintf("racer%d", i))
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range cands {
		wg.Go(func() { errs[i] = s.Append(ctx, Commit(cands[i])) })
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("two racers appended seq 2")
		case err == nil:
			won = i
		case !errors.Is(err, adphost.ErrHeadMoved):
			t.Fatalf("racer %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no racer appended")
	}
	recs := try(s.Records(ctx, "race", 0, 100, all)).get(t)
	if len(recs) != 2 {
		t.Fatalf("%d records after the race", len(recs))
	}
	sameRecord(t, recs[1], cands[won])
	for i, r := range cands {
		if i == won {
			continue
		}
		if got := try(s.RecordByEvent(ctx, r.Envelope.Hash())).get(t); got != nil {
			t.Fatalf("a loser's envelope is indexed")
		}
		ev, _ := adp.ParseEvent(r.Envelope)
		if n, _ := must2(t)(s.MaxNonce(ctx, ev.Actor)); n != 0 {
			t.Fatalf("a loser's nonce was advanced to %d", n)
		}
	}
}

func must2(t *testing.T) func(a, b int64, err error) (int64, int64) {
	return func(a, b int64, err error) (int64, int64) {
		t.Helper()
		ok(t, err)
		return a, b
	}
}

// resubmission: an envelope with a record is found by its hash, and the
// same envelope is refused in another record (ErrDuplicateEvent), even in
// another room.
func resubmission(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	c := newChain(t, "rs")
	ok(t, s.Append(ctx, Commit(c.recs[0])))
	r2 := c.next("alice")
	ok(t, s.Append(ctx, Commit(r2)))
	c.add(r2)
	sameRecord(t, try(s.RecordByEvent(ctx, r2.Envelope.Hash())).get(t), r2)
	if got := try(s.RecordByEvent(ctx, envelope.Sum([]byte("nothing")))).get(t); got != nil {
		t.Fatalf("unknown hash found %v", got)
	}
	again := adp.NewRecord("rs", r2, r2.ReceivedAt+1, r2.Envelope)
	cm := Commit(again)
	cm.Nonce.Now = again.ReceivedAt + 10_000_000 // past the nonce entry: only the index refuses it
	if err := s.Append(ctx, cm); !errors.Is(err, adphost.ErrDuplicateEvent) {
		t.Fatalf("the same envelope again: %v", err)
	}
	// The same room.create as another room's first record.
	other := adp.NewRecord("rs-other", nil, T0.UnixMilli(), c.recs[0].Envelope)
	if err := s.Append(ctx, Commit(other)); !errors.Is(err, adphost.ErrDuplicateEvent) {
		t.Fatalf("the same room.create for another room: %v", err)
	}
	if h := try(s.Head(ctx, "rs-other")).get(t); h != 0 {
		t.Fatalf("the refused room exists with head %d", h)
	}
}

// nonceAdvance: a live entry refuses a nonce not greater than its own,
// with MaxSeenNonce; an expired entry takes any nonce.
func nonceAdvance(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	c := newChain(t, "nonce")
	ok(t, s.Append(ctx, Commit(c.recs[0])))
	actor := Author("alice").AgentID()
	step := func(nonce, now, exp int64) error {
		r := c.next("alice")
		cm := Commit(r)
		cm.Nonce = adphost.NonceAdvance{Actor: actor, Nonce: nonce, Now: now, ExpiresAt: exp}
		err := s.Append(ctx, cm)
		if err == nil {
			c.add(r)
		}
		return err
	}
	ok(t, step(100, 1000, 5000))
	if n, exp := must2(t)(s.MaxNonce(ctx, actor)); n != 100 || exp != 5000 {
		t.Fatalf("nonce entry %d/%d", n, exp)
	}
	for _, n := range []int64{100, 99} {
		err := step(n, 2000, 6000)
		var e *identity.Error
		if !errors.As(err, &e) || e.Code != identity.CodeNonceNotGreater || e.MaxSeenNonce != 100 {
			t.Fatalf("nonce %d: %v", n, err)
		}
	}
	ok(t, step(101, 2000, 6000))
	ok(t, step(50, 6000, 9000)) // the entry expired at 6000
	if n, exp := must2(t)(s.MaxNonce(ctx, actor)); n != 50 || exp != 9000 {
		t.Fatalf("nonce entry after expiry %d/%d", n, exp)
	}
	if h := try(s.Head(ctx, "nonce")).get(t); h != 4 {
		t.Fatalf("head %d, want 4 (refusals append nothing)", h)
	}
}

// nonceRace: one actor's envelopes with the same nonce, racing into
// different rooms, are accepted once.
func nonceRace(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	const n = 6
	actor := Author("alice").AgentID()
	cms := make([]*adphost.Commit, n)
	for i := range cms {
		c := newChain(t, fmt.Sprintf("nr%d", i))
		ok(t, s.Append(ctx, Commit(c.recs[0])))
		cms[i] = Commit(c.next("alice"))
		cms[i].Nonce = adphost.NonceAdvance{Actor: actor, Nonce: 7, Now: 1000, ExpiresAt: 100_000}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range cms {
		wg.Go(func() { errs[i] = s.Append(ctx, cms[i]) })
	}
	wg.Wait()
	accepted := 0
	for _, err := range errs {
		var e *identity.Error
		switch {
		case err == nil:
			accepted++
		case errors.As(err, &e) && e.Code == identity.CodeNonceNotGreater && e.MaxSeenNonce == 7:
		default:
			t.Fatalf("racer: %v", err)
		}
	}
	if accepted != 1 {
		t.Fatalf("%d envelopes with one nonce accepted", accepted)
	}
}

// quota: a window holds at most Limit uses within Window; an append whose
// quota is full appends nothing.
func quota(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	q := adphost.Quota{Key: "alice/message", Limit: 3, Window: 60_000, Now: 1000}
	for i := range 3 {
		q.Now = int64(1000 + i)
		ok(t, s.TakeQuota(ctx, q))
	}
	if n := try(s.QuotaUsed(ctx, q)).get(t); n != 3 {
		t.Fatalf("used %d", n)
	}
	if err := s.TakeQuota(ctx, q); !errors.Is(err, identity.ErrRateLimited) {
		t.Fatalf("a fourth use: %v", err)
	}
	c := newChain(t, "quota")
	ok(t, s.Append(ctx, Commit(c.recs[0])))
	cm := Commit(c.next("alice"))
	cm.Quota = &q
	if err := s.Append(ctx, cm); !errors.Is(err, identity.ErrRateLimited) {
		t.Fatalf("an append over quota: %v", err)
	}
	if h := try(s.Head(ctx, "quota")).get(t); h != 1 {
		t.Fatalf("a refused append moved the head to %d", h)
	}
	q.Now = 61_000 // the first use left the window
	if n := try(s.QuotaUsed(ctx, q)).get(t); n != 2 {
		t.Fatalf("used %d after a minute", n)
	}
	ok(t, s.Append(ctx, cm))
	if n := try(s.QuotaUsed(ctx, q)).get(t); n != 3 {
		t.Fatalf("used %d after the append", n)
	}
	// Racing takers of one window get exactly the room left in it.
	r := adphost.Quota{Key: "bob/signal", Limit: 5, Window: 60_000, Now: 5000}
	errs := make([]error, 12)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = s.TakeQuota(ctx, r) })
	}
	wg.Wait()
	took := 0
	for _, err := range errs {
		if err == nil {
			took++
		} else if !errors.Is(err, identity.ErrRateLimited) {
			t.Fatal(err)
		}
	}
	if took != 5 {
		t.Fatalf("%d racing takers got a use of 5", took)
	}
}

// snapshot: the newest snapshot is kept, an older one does not replace it,
// one at the same seq does.
func snapshot(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	if seq, b := must2b(t)(s.Snapshot(ctx, "snap")); seq != 0 || b != nil {
		t.Fatalf("a missing snapshot: %d %q", seq, b)
	}
	c := newChain(t, "snap")
	ok(t, s.Append(ctx, Commit(c.recs[0])))
	ok(t, s.PutSnapshot(ctx, "snap", 5, []byte(`{"at":5}`)))
	ok(t, s.PutSnapshot(ctx, "snap", 3, []byte(`{"at":3}`)))
	if seq, b := must2b(t)(s.Snapshot(ctx, "snap")); seq != 5 || string(b) != `{"at":5}` {
		t.Fatalf("snapshot %d %q", seq, b)
	}
	ok(t, s.PutSnapshot(ctx, "snap", 9, []byte(`{"at":9}`)))
	if seq, b := must2b(t)(s.Snapshot(ctx, "snap")); seq != 9 || string(b) != `{"at":9}` {
		t.Fatalf("snapshot %d %s", seq, b)
	}
	// One at the same seq replaces it: a snapshot that does not load is
	// rewritten where it was.
	ok(t, s.PutSnapshot(ctx, "snap", 9, []byte(`{"at":9,"again":true}`)))
	if seq, b := must2b(t)(s.Snapshot(ctx, "snap")); seq != 9 || string(b) != `{"at":9,"again":true}` {
		t.Fatalf("snapshot %d %q", seq, b)
	}
}

func must2b(t *testing.T) func(int64, []byte, error) (int64, []byte) {
	return func(a int64, b []byte, err error) (int64, []byte) {
		t.Helper()
		ok(t, err)
		return a, b
	}
}

// index: the room index lists non-private rooms for discovery and an
// agent's rooms (creator, member, applicant) with its own membership.
func index(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	creator, alice, bob := Author("creator").AgentID(), Author("alice").AgentID(), Author("bob").AgentID()
	pub := newChain(t, "ix-pub")
	ok(t, s.Append(ctx, Commit(pub.recs[0])))
	priv := newChain(t, "ix-priv")
	cm := Commit(priv.recs[0])
	cm.Index.Summary.Visibility = adp.VisibilityPrivate
	ok(t, s.Append(ctx, cm))
	// alice joins the public room: the commit replaces the members.
	r := pub.next("alice")
	cm = Commit(r)
	ix := *Commit(pub.recs[0]).Index
	ix.Summary.Seq, ix.Summary.Members = 2, 2
	ix.Members = append(ix.Members, adphost.MemberIndex{Agent: alice, Role: adp.RoleSpeaker, Status: adp.MemberActive})
	cm.Index = &ix
	ok(t, s.Append(ctx, cm))
	pub.add(r)
	// A message: index unchanged.
	ok(t, s.Append(ctx, Commit(pub.next("alice"))))

	list := try(s.PublicRooms(ctx)).get(t)
	if len(list) != 1 || list[0].Summary.ID != "ix-pub" || list[0].Summary.Seq != 3 || list[0].Summary.LastActivity != pub.recs[1].ReceivedAt+1 || list[0].Summary.Members != 2 || len(list[0].Members) != 0 {
		t.Fatalf("public rooms %+v", list)
	}
	mine := try(s.AgentRooms(ctx, alice)).get(t)
	if len(mine) != 1 || mine[0].Summary.ID != "ix-pub" || len(mine[0].Members) != 1 || mine[0].Members[0].Role != adp.RoleSpeaker {
		t.Fatalf("alice's rooms %+v", mine)
	}
	if got := try(s.AgentRooms(ctx, creator)).get(t); len(got) != 2 || got[0].Summary.ID != "ix-priv" || got[1].Summary.ID != "ix-pub" {
		t.Fatalf("the creator's rooms %+v", got)
	}
	if got := try(s.AgentRooms(ctx, bob)).get(t); len(got) != 0 {
		t.Fatalf("bob's rooms %+v", got)
	}
	ok(t, s.PutJoinRequest(ctx, joinRequest("ix-priv", "jr_1", bob, 10)))
	if got := try(s.AgentRooms(ctx, bob)).get(t); len(got) != 1 || got[0].Summary.ID != "ix-priv" || got[0].Members != nil {
		t.Fatalf("an applicant's rooms %+v", got)
	}
}

// invites: AgentRooms lists the rooms whose invitations name the agent,
// with its own invitation only; invitations are replaced with the members
// and kept when an entry leaves the members.
func invites(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	alice, bob, carol := Author("alice").AgentID(), Author("bob").AgentID(), Author("carol").AgentID()
	c := newChain(t, "inv")
	cm := Commit(c.recs[0])
	cm.Index.Summary.Visibility = adp.VisibilityPrivate
	cm.Index.Invites = []adphost.InviteIndex{{Agent: alice, Role: adp.RoleSpeaker}, {Agent: bob, Role: adp.RoleModerator}}
	ok(t, s.Append(ctx, cm))
	invitedAs := func(who identity.AgentID) []adphost.InviteIndex {
		t.Helper()
		list := try(s.AgentRooms(ctx, who)).get(t)
		if len(list) > 1 || len(list) == 1 && (list[0].Summary.ID != "inv" || list[0].Members != nil) {
			t.Fatalf("rooms of %s: %+v", who, list)
		}
		if len(list) == 0 {
			return nil
		}
		return list[0].Invites
	}
	if got := invitedAs(alice); len(got) != 1 || got[0] != (adphost.InviteIndex{Agent: alice, Role: adp.RoleSpeaker}) {
		t.Fatalf("alice's invitation %+v", got)
	}
	if got := invitedAs(bob); len(got) != 1 || got[0].Role != adp.RoleModerator {
		t.Fatalf("bob's invitation %+v", got)
	}
	if got := invitedAs(carol); got != nil {
		t.Fatalf("carol is not invited: %+v", got)
	}
	for _, ix := range try(s.PublicRooms(ctx)).get(t) {
		if ix.Invites != nil {
			t.Fatalf("public rooms list invitations: %+v", ix)
		}
	}
	// An entry without members keeps the invitations.
	r := c.next("alice")
	cm = Commit(r)
	ix := *Commit(c.recs[0]).Index
	ix.Summary.Visibility, ix.Members = adp.VisibilityPrivate, nil
	cm.Index = &ix
	ok(t, s.Append(ctx, cm))
	c.add(r)
	if got := invitedAs(alice); len(got) != 1 {
		t.Fatalf("alice's invitation after an entry without members: %+v", got)
	}
	// Members replace the invitations: now carol's alone.
	r = c.next("alice")
	cm = Commit(r)
	ix = *Commit(c.recs[0]).Index
	ix.Summary.Visibility = adp.VisibilityPrivate
	ix.Invites = []adphost.InviteIndex{{Agent: carol, Role: adp.RoleObserver}}
	cm.Index = &ix
	ok(t, s.Append(ctx, cm))
	if invitedAs(alice) != nil || invitedAs(bob) != nil || len(invitedAs(carol)) != 1 {
		t.Fatalf("the invitations were not replaced")
	}
}

// holdJoinRequest: a held join request advances its applicant's nonce
// entry, the one Append checks, all or nothing: a nonce that does not
// advance is nonce_not_greater and stores no request.
func holdJoinRequest(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	alice := Author("alice").AgentID()
	hold := func(id string, nonce, now int64) error {
		return s.HoldJoinRequest(ctx, joinRequest("hold", id, alice, now), adphost.NonceAdvance{Actor: alice, Nonce: nonce, Now: now, ExpiresAt: now + 600_000})
	}
	ok(t, hold("jr_1", 100, 1000))
	if n, exp := must2(t)(s.MaxNonce(ctx, alice)); n != 100 || exp != 601_000 {
		t.Fatalf("nonce entry %d/%d after a held request", n, exp)
	}
	var e *identity.Error
	if err := hold("jr_2", 100, 2000); !errors.As(err, &e) || e.Code != identity.CodeNonceNotGreater || e.MaxSeenNonce != 100 {
		t.Fatalf("a held request's nonce again: %v", err)
	}
	if got := try(s.JoinRequest(ctx, "hold", "jr_2")).get(t); got != nil {
		t.Fatalf("a refused request was stored: %+v", got)
	}
	// A record's nonce is checked against the held request's.
	c := newChain(t, "hold")
	ok(t, s.Append(ctx, Commit(c.recs[0])))
	cm := Commit(c.next("alice"))
	cm.Nonce = adphost.NonceAdvance{Actor: alice, Nonce: 99, Now: 3000, ExpiresAt: 603_000}
	if err := s.Append(ctx, cm); !errors.As(err, &e) || e.Code != identity.CodeNonceNotGreater || e.MaxSeenNonce != 100 {
		t.Fatalf("a write below the held request's nonce: %v", err)
	}
	ok(t, hold("jr_3", 101, 4000))
	if list := try(s.JoinRequests(ctx, "hold")).get(t); len(list) != 2 || list[0].Request.ID != "jr_1" || list[1].Request.ID != "jr_3" {
		t.Fatalf("held requests %+v", list)
	}
}

func joinRequest(room, id string, who identity.AgentID, at int64) *adp.JoinRequestResource {
	return &adp.JoinRequestResource{
		Request: adp.JoinRequest{ID: id, RoomID: room, Applicant: who, Role: adp.RoleSpeaker, CreatedAt: at, ExpiresAt: at + 3_600_000, Extra: jsontext.Value("{}")},
		Status:  adp.JoinPending,
	}
}

// joinRequests: creation order, replacement in place, lookups by ID.
func joinRequests(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	alice, bob := Author("alice").AgentID(), Author("bob").AgentID()
	ok(t, s.PutJoinRequest(ctx, joinRequest("jr", "jr_B", alice, 20)))
	ok(t, s.PutJoinRequest(ctx, joinRequest("jr", "jr_A", bob, 30)))
	ok(t, s.PutJoinRequest(ctx, joinRequest("other", "jr_C", bob, 10)))
	up := joinRequest("jr", "jr_B", alice, 20)
	up.Status, up.ApprovedRole, up.ReviewedAt = adp.JoinApproved, adp.RoleSpeaker, 40
	ok(t, s.PutJoinRequest(ctx, up))
	list := try(s.JoinRequests(ctx, "jr")).get(t)
	if len(list) != 2 || list[0].Request.ID != "jr_B" || list[0].Status != adp.JoinApproved || list[1].Request.ID != "jr_A" {
		t.Fatalf("join requests %+v", list)
	}
	got := try(s.JoinRequest(ctx, "jr", "jr_A")).get(t)
	if got == nil || got.Request.Applicant != bob || got.Status != adp.JoinPending || string(got.Request.Extra) != "{}" {
		t.Fatalf("jr_A %+v", got)
	}
	if got := try(s.JoinRequest(ctx, "jr", "jr_C")).get(t); got != nil {
		t.Fatalf("another room's request found: %+v", got)
	}
	if got := try(s.JoinRequests(ctx, "none")).get(t); len(got) != 0 {
		t.Fatalf("requests of a room without any: %+v", got)
	}
}

// joinRequestIndex: for a Store that implements adphost.JoinRequestIndex
// (skipped otherwise), one applicant's requests in creation order, the
// pending ones counted and read by expiry, and pages in key order that
// agree with JoinRequests.
func joinRequestIndex(t *testing.T, s adphost.Store) {
	ix, isIndex := s.(adphost.JoinRequestIndex)
	if !isIndex {
		t.Skip("the Store has no JoinRequestIndex; the Host lists JoinRequests")
	}
	ctx := t.Context()
	alice, bob := Author("alice").AgentID(), Author("bob").AgentID()
	ok(t, s.PutJoinRequest(ctx, joinRequest("jr", "jr_B", alice, 20)))
	ok(t, s.PutJoinRequest(ctx, joinRequest("jr", "jr_A", bob, 30)))
	ok(t, s.PutJoinRequest(ctx, joinRequest("jr", "jr_D", alice, 40)))
	ok(t, s.PutJoinRequest(ctx, joinRequest("jr", "jr_C", bob, 30))) // created with jr_A: the ID orders them
	ok(t, s.PutJoinRequest(ctx, joinRequest("other", "jr_E", alice, 10)))
	up := joinRequest("jr", "jr_B", alice, 20)
	up.Status = adp.JoinRejected
	ok(t, s.PutJoinRequest(ctx, up))
	ids := func(list []*adp.JoinRequestResource) (out []string) {
		for _, jr := range list {
			out = append(out, jr.Request.ID)
		}
		return out
	}
	mine := try(ix.ApplicantJoinRequests(ctx, "jr", alice)).get(t)
	if got := ids(mine); !slices.Equal(got, []string{"jr_B", "jr_D"}) || mine[0].Status != adp.JoinRejected {
		t.Fatalf("alice's requests %v", got)
	}
	if got := ids(try(ix.ApplicantJoinRequests(ctx, "none", alice)).get(t)); len(got) != 0 {
		t.Fatalf("requests of a room without any: %v", got)
	}

	// Pages: key order (created_at, then ID), after any key, of any size.
	all := []string{"jr_B", "jr_A", "jr_C", "jr_D"}
	for _, c := range []struct {
		after adphost.JoinRequestKey
		limit int
		want  []string
	}{
		{adphost.JoinRequestKey{}, 10, all},
		{adphost.JoinRequestKey{}, 2, all[:2]},
		{adphost.JoinRequestKey{CreatedAt: 30, ID: "jr_A"}, 2, all[2:]},
		{adphost.JoinRequestKey{CreatedAt: 30, ID: "jr_B"}, 10, all[2:]}, // a key of no request
		{adphost.JoinRequestKey{CreatedAt: 30}, 1, all[1:2]},
		{adphost.JoinRequestKey{CreatedAt: 40, ID: "jr_D"}, 10, nil},
		{adphost.JoinRequestKey{}, 0, nil},
	} {
		page := try(ix.JoinRequestsAfter(ctx, "jr", c.after, c.limit)).get(t)
		if got := ids(page); !slices.Equal(got, c.want) {
			t.Fatalf("page after %+v, limit %d: %v, want %v", c.after, c.limit, got, c.want)
		}
	}
	if page := try(ix.JoinRequestsAfter(ctx, "jr", adphost.JoinRequestKey{}, 1)).get(t); page[0].Status != adp.JoinRejected {
		t.Fatalf("a page shows a replaced request as %q", page[0].Status)
	}
	if got := ids(try(ix.JoinRequestsAfter(ctx, "none", adphost.JoinRequestKey{}, 10)).get(t)); len(got) != 0 {
		t.Fatalf("a page of a room without requests: %v", got)
	}
	if got := ids(try(s.JoinRequests(ctx, "jr")).get(t)); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(all))) {
		t.Fatalf("JoinRequests %v, pages %v", got, all)
	}

	// Pending: stored as pending and expiring after now; a decision or
	// the expiry takes a request out.
	pending := func(now int64) []string {
		n := try(ix.CountPendingJoinRequests(ctx, "jr", now)).get(t)
		list := ids(try(ix.PendingJoinRequests(ctx, "jr", now)).get(t))
		if n != len(list) {
			t.Fatalf("at %d: %d pending counted, %v read", now, n, list)
		}
		return list
	}
	if got := pending(0); !slices.Equal(got, []string{"jr_A", "jr_C", "jr_D"}) {
		t.Fatalf("pending at 0: %v", got)
	}
	if got := pending(30 + 3_600_000); !slices.Equal(got, []string{"jr_D"}) { // jr_A and jr_C expire at that moment
		t.Fatalf("pending when jr_A and jr_C expire: %v", got)
	}
	up = joinRequest("jr", "jr_D", alice, 40)
	up.Status, up.ApprovedRole = adp.JoinApproved, adp.RoleSpeaker
	ok(t, s.PutJoinRequest(ctx, up))
	if got := pending(0); !slices.Equal(got, []string{"jr_A", "jr_C"}) {
		t.Fatalf("pending after jr_D's approval: %v", got)
	}
	if got := try(ix.CountPendingJoinRequests(ctx, "none", 0)).get(t); got != 0 {
		t.Fatalf("%d pending in a room without requests", got)
	}
}

// statuses: replace, delete, list by agent, expired ones kept (the host
// filters them by expires_at).
func statuses(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	alice, bob := Author("alice").AgentID(), Author("bob").AgentID()
	st := func(who identity.AgentID, state string, exp int64) *adp.AgentStatus {
		return &adp.AgentStatus{RoomID: "st", AgentID: who, State: state, UpdatedAt: exp - 1000, ExpiresAt: exp}
	}
	ok(t, s.PutStatus(ctx, st(bob, "idle", 5000)))
	ok(t, s.PutStatus(ctx, st(alice, "thinking", 1000)))
	ok(t, s.PutStatus(ctx, st(alice, "typing", 2000)))
	list := try(s.Statuses(ctx, "st")).get(t)
	if len(list) != 2 {
		t.Fatalf("statuses %+v", list)
	}
	want := []identity.AgentID{alice, bob}
	slices.SortFunc(want, func(a, b identity.AgentID) int {
		if a.String() < b.String() {
			return -1
		}
		return 1
	})
	if list[0].AgentID != want[0] || list[1].AgentID != want[1] {
		t.Fatalf("statuses not by agent: %+v", list)
	}
	for _, x := range list {
		if x.AgentID == alice && (x.State != "typing" || x.ExpiresAt != 2000) {
			t.Fatalf("alice's status %+v", x)
		}
	}
	ok(t, s.DeleteStatus(ctx, "st", alice))
	ok(t, s.DeleteStatus(ctx, "st", alice))
	if list := try(s.Statuses(ctx, "st")).get(t); len(list) != 1 || list[0].AgentID != bob {
		t.Fatalf("statuses after delete %+v", list)
	}
}

// paging: Records pages a long log without gaps or repeats.
func paging(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	c := newChain(t, "pg")
	ok(t, s.Append(ctx, Commit(c.recs[0])))
	for range 24 {
		r := c.next("alice")
		cm := Commit(r)
		cm.Nonce.Nonce = int64(len(c.recs)) // one author: nonces must grow
		ok(t, s.Append(ctx, cm))
		c.add(r)
	}
	var got []*adp.Record
	for after := int64(0); ; {
		page := try(s.Records(ctx, "pg", after, 7, all)).get(t)
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = page[len(page)-1].Seq
	}
	if len(got) != len(c.recs) {
		t.Fatalf("%d records paged, want %d", len(got), len(c.recs))
	}
	for i := range got {
		sameRecord(t, got[i], c.recs[i])
	}
	if page := try(s.Records(ctx, "pg", 20, 100, all)).get(t); len(page) != 5 || page[0].Seq != 21 {
		t.Fatalf("records after 20: %d", len(page))
	}
	if page := try(s.Records(ctx, "pg", 25, 100, all)).get(t); len(page) != 0 {
		t.Fatalf("records after the end: %d", len(page))
	}
}

// all is a byte budget of Records that no test's records reach.
const all = 1 << 30

// pageBytes: Records stops reading at its byte budget. It returns the
// records up to the one that brings their total size (the length of
// their JSON) to maxBytes or beyond, and never none while there are
// records, whatever limit and the sizes are.
func pageBytes(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	c := newChain(t, "bytes")
	ok(t, s.Append(ctx, Commit(c.recs[0])))
	for i := range 30 {
		r := c.nextText("alice", strings.Repeat("x", i%7*1000))
		cm := Commit(r)
		cm.Nonce.Nonce = int64(len(c.recs))
		ok(t, s.Append(ctx, cm))
		c.add(r)
	}
	size := func(seq int64) int { return len(c.recs[seq-1].AppendJSON(nil)) }
	for _, after := range []int64{0, 6, 29, 31} {
		budgets := []int{-1, 0, 1, 3000, 7000, 20000, all}
		if after < 31 {
			budgets = append(budgets, size(after+1), size(after+1)+1)
		}
		for _, maxBytes := range budgets {
			for _, limit := range []int{1, 4, 100} {
				var want []int64
				for seq, total := after+1, 0; seq <= 31 && len(want) < limit && total < max(maxBytes, 1); seq++ {
					want = append(want, seq)
					total += size(seq)
				}
				var got []int64
				for i, r := range try(s.Records(ctx, "bytes", after, limit, maxBytes)).get(t) {
					sameRecord(t, r, c.recs[after+int64(i)])
					got = append(got, r.Seq)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("records after %d, limit %d, %d bytes: seqs %v, want %v", after, limit, maxBytes, got, want)
				}
			}
		}
	}
}

// recordsOutliveReads: a record returned by Records or RecordByEvent is
// the caller's, and stays as it was while the Store goes on writing (a
// record that referred to a storage engine's pages, which bbolt reuses
// once the read has ended, would change under the caller).
func recordsOutliveReads(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	c := newChain(t, "outlive")
	ok(t, s.Append(ctx, Commit(c.recs[0])))
	grow := func(n int) {
		for range n {
			r := c.next("alice")
			cm := Commit(r)
			cm.Nonce.Nonce = int64(len(c.recs))
			ok(t, s.Append(ctx, cm))
			c.add(r)
		}
	}
	grow(30)
	got := try(s.Records(ctx, "outlive", 0, 100, all)).get(t)
	byEvent := try(s.RecordByEvent(ctx, c.recs[5].Envelope.Hash())).get(t)
	want := make([][]byte, len(got))
	for i, r := range got {
		want[i] = r.AppendJSON(nil)
	}
	wantByEvent := byEvent.AppendJSON(nil)
	grow(300) // pages split, copied and freed, and freed pages reused
	for i := range 50 {
		ok(t, s.PutSnapshot(ctx, "outlive", int64(i+1), bytes.Repeat([]byte{byte(i)}, 4096)))
	}
	for i, r := range got {
		if b := r.AppendJSON(nil); !bytes.Equal(b, want[i]) {
			t.Fatalf("record %d changed after later writes:\n%s\nwas\n%s", r.Seq, b, want[i])
		}
	}
	if b := byEvent.AppendJSON(nil); !bytes.Equal(b, wantByEvent) {
		t.Fatalf("RecordByEvent's record changed after later writes")
	}
}

// Chain returns the first n records of a new public room: its room.create
// by "creator", then messages by "alice", each linked to the one before.
func Chain(t *testing.T, room string, n int) []*adp.Record {
	t.Helper()
	c := newChain(t, room)
	for len(c.recs) < n {
		c.add(c.next("alice"))
	}
	return c.recs[:n]
}

// appendBatch, for a Store with group commit (adphost.BatchAppender):
// consecutive records of one room go in together with their nonces; a
// batch whose first record does not follow the log, or with one record
// whose envelope is already accepted, or with one used nonce, changes
// nothing at all.
func appendBatch(t *testing.T, s adphost.Store) {
	ba := s.(adphost.BatchAppender)
	ctx := t.Context()
	c := newChain(t, "batch")
	ok(t, s.Append(ctx, Commit(c.recs[0])))
	batchOf := func(names ...string) []*adphost.Commit {
		var cs []*adphost.Commit
		saved := len(c.recs)
		for _, n := range names {
			r := c.next(n)
			c.add(r)
			cs = append(cs, Commit(r))
		}
		c.recs = c.recs[:saved]
		return cs
	}
	unchanged := func(what string, head int64) {
		t.Helper()
		if h := try(s.Head(ctx, "batch")).get(t); h != head {
			t.Fatalf("%s: head %d, want %d", what, h, head)
		}
	}
	cs := batchOf("alice", "bob", "alice")
	ok(t, ba.AppendBatch(ctx, cs))
	for _, c2 := range cs {
		c.add(c2.Record)
	}
	unchanged("a batch of 3", 4)
	recs := try(s.Records(ctx, "batch", 1, 10, all)).get(t)
	if len(recs) != 3 {
		t.Fatalf("%d records after the batch", len(recs))
	}
	for i, r := range recs {
		sameRecord(t, r, cs[i].Record)
		sameRecord(t, try(s.RecordByEvent(ctx, r.Envelope.Hash())).get(t), r)
	}
	if n, _ := must2(t)(s.MaxNonce(ctx, cs[2].Nonce.Actor)); n != cs[2].Nonce.Nonce {
		t.Fatalf("alice's nonce %d, want her last of the batch %d", n, cs[2].Nonce.Nonce)
	}

	// Not following the log: a batch built on seq 2.
	stale := c.recs[:2]
	c2 := &chain{t: t, room: "batch", recs: slices.Clone(stale), n: 100}
	var old []*adphost.Commit
	for _, n := range []string{"carol", "dave"} {
		r := c2.next(n)
		c2.add(r)
		old = append(old, Commit(r))
	}
	if err := ba.AppendBatch(ctx, old); !errors.Is(err, adphost.ErrHeadMoved) {
		t.Fatalf("a batch off the head: %v", err)
	}
	unchanged("a batch off the head", 4)

	// One accepted envelope in the batch.
	dup := batchOf("carol", "dave")
	again := *cs[0].Record
	again.RoomID, again.Seq, again.PreHash = "batch", dup[1].Record.Seq, dup[0].Record.Hash
	again.Hash = again.ComputeHash()
	dupBatch := []*adphost.Commit{dup[0], {Record: &again, Nonce: adphost.NonceAdvance{Actor: dup[1].Nonce.Actor, Nonce: dup[1].Nonce.Nonce, Now: dup[1].Nonce.Now, ExpiresAt: dup[1].Nonce.ExpiresAt}}}
	if err := ba.AppendBatch(ctx, dupBatch); err == nil {
		t.Fatal("a batch with an accepted envelope was appended")
	}
	unchanged("a batch with an accepted envelope", 4)
	if try(s.RecordByEvent(ctx, dup[0].Record.Envelope.Hash())).get(t) != nil {
		t.Fatal("the batch's other record is kept")
	}

	// One used nonce in the batch.
	used := batchOf("carol", "alice")
	used[1].Nonce.Nonce = cs[2].Nonce.Nonce
	if err := ba.AppendBatch(ctx, used); !errors.Is(err, identity.ErrNonceNotGreater) {
		t.Fatalf("a batch with a used nonce: %v", err)
	}
	unchanged("a batch with a used nonce", 4)
	if n, _ := must2(t)(s.MaxNonce(ctx, used[0].Nonce.Actor)); n != 0 {
		t.Fatalf("carol's nonce advanced to %d by a failed batch", n)
	}
	ok(t, ba.AppendBatch(ctx, batchOf("carol", "dave")))
	unchanged("a batch after the failures", 6)
}

// laterDraft: a Store keeps the records and signed join requests of the
// 2026-09-24 draft as it does the seed's: records (accepted_at in their
// hash) come back byte for byte and of their draft, from the log and the
// resubmission index; a join request keeps its signed room.join.request
// and its review's event ID.
func laterDraft(t *testing.T, s adphost.Store) {
	ctx := t.Context()
	d := adp.Draft20260924
	create, err := adp.NewRoomCreateIn(ctx, Author("creator"), d, adp.RoomCreate{
		Host: "https://host.example", Topic: "storetest later", Visibility: adp.VisibilityPublic,
		StartTime: T0.UnixMilli(), EndTime: T0.Add(time.Hour).UnixMilli(),
	})
	ok(t, err)
	recs := []*adp.Record{adp.NewRecordIn(d, "later", nil, T0.UnixMilli(), create)}
	for i := range 3 {
		last := recs[len(recs)-1]
		env, err := adp.NewMessage(ctx, Author("creator"), adp.Base{RoomID: "later", Seq: 1, Hash: recs[0].Hash, Draft: d},
			adp.Message{ContentType: "text/plain", Content: adp.TextContent(fmt.Sprintf("on the head %d", i))})
		ok(t, err)
		recs = append(recs, adp.NewRecordIn(d, "later", last, last.ReceivedAt+1, env))
	}
	for _, rec := range recs {
		ok(t, s.Append(ctx, Commit(rec)))
	}
	got := try(s.Records(ctx, "later", 0, 100, 1<<20)).get(t)
	if len(got) != len(recs) {
		t.Fatalf("%d records, want %d", len(got), len(recs))
	}
	for i, rec := range got {
		sameRecord(t, rec, recs[i])
		if rec.Draft != d {
			t.Fatalf("record %d read back in the %s draft", rec.Seq, rec.Draft)
		}
	}
	byEvent := try(s.RecordByEvent(ctx, recs[2].EventHash())).get(t)
	sameRecord(t, byEvent, recs[2])
	if byEvent.Draft != d {
		t.Fatalf("the resubmission index reads the record in the %s draft", byEvent.Draft)
	}

	req, err := adp.NewJoinRequest(ctx, Author("applicant"), d, "later", adp.JoinRequestPayload{Role: adp.RoleSpeaker})
	ok(t, err)
	review := recs[3].EventHash()
	jr := &adp.JoinRequestResource{
		Request: adp.JoinRequest{ID: req.Hash().String(), RoomID: "later", Applicant: Author("applicant").AgentID(), Role: adp.RoleSpeaker,
			CreatedAt: T0.UnixMilli(), ExpiresAt: T0.Add(time.Hour).UnixMilli(), Extra: jsontext.Value("{}")},
		Status: adp.JoinApproved, Signed: req, ReviewEventID: &review,
	}
	ok(t, s.PutJoinRequest(ctx, jr))
	back := try(s.JoinRequest(ctx, "later", req.Hash().String())).get(t)
	if back == nil || back.Signed == nil || back.Signed.Hash() != req.Hash() || string(back.Signed.AppendJSON(nil)) != string(req.AppendJSON(nil)) ||
		back.ReviewEventID == nil || *back.ReviewEventID != review {
		t.Fatalf("join request read back as %+v", back)
	}
}

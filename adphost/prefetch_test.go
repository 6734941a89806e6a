package adphost_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// prefetchStore is a MemoryStore that reads write states, as pgstore
// does, and counts the reads a write makes.
type prefetchStore struct {
	*adphost.MemoryStore
	states, lookups, nonces, heads atomic.Int64
}

func (p *prefetchStore) WriteState(ctx context.Context, room string, actor identity.AgentID, ev envelope.Hash) (adphost.WriteState, error) {
	p.states.Add(1)
	rec, _ := p.MemoryStore.RecordByEvent(ctx, ev)
	n, exp, _ := p.MemoryStore.MaxNonce(ctx, actor)
	head, _ := p.MemoryStore.Head(ctx, room)
	return adphost.WriteState{Record: rec, Nonce: n, NonceExpiresAt: exp, Head: head}, nil
}

func (p *prefetchStore) RecordByEvent(ctx context.Context, h envelope.Hash) (*adp.Record, error) {
	p.lookups.Add(1)
	return p.MemoryStore.RecordByEvent(ctx, h)
}

func (p *prefetchStore) MaxNonce(ctx context.Context, a identity.AgentID) (int64, int64, error) {
	p.nonces.Add(1)
	return p.MemoryStore.MaxNonce(ctx, a)
}

func (p *prefetchStore) Head(ctx context.Context, room string) (int64, error) {
	p.heads.Add(1)
	return p.MemoryStore.Head(ctx, room)
}

// TestSharedStorePrefetch: on a Store that reads write states, a write
// reads the Store once before its append (the resubmission lookup, the
// nonce and the head together), and the answers stay those of the three
// reads: hosts alternating on one room catch up on the prefetched head
// instead of refusing, an exact resubmission gets its record, and a used
// nonce is nonce_not_greater with Max-Seen-Nonce.
func TestSharedStorePrefetch(t *testing.T) {
	ctx := ctxT(t)
	store := &prefetchStore{MemoryStore: adphost.NewMemoryStore()}
	s := newShared(t, 2, store, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice, bob := s.client("alice"), s.client("bob")
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityPublic, "prefetch"))).RoomID
	mustv(bob.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}))
	var last *adp.Record
	var lastEnv *envelope.Envelope
	for i := range 10 {
		c := alice
		if i%3 == 0 {
			c = bob
		}
		env := mustv(adp.NewMessage(ctx, c.Author(), headBase(t, c, room), text("m")))
		s0, l0, n0, h0 := store.states.Load(), store.lookups.Load(), store.nonces.Load(), store.heads.Load()
		rec, err := c.Submit(ctx, room, env)
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if ds, dl, dn, dh := store.states.Load()-s0, store.lookups.Load()-l0, store.nonces.Load()-n0, store.heads.Load()-h0; ds != 1 || dl+dn+dh != 0 {
			t.Fatalf("write %d read %d write states, %d lookups, %d nonces, %d heads; want 1 write state", i, ds, dl, dn, dh)
		}
		last, lastEnv = rec, env
	}
	again := mustv(s.clientWith("alice", s.pinned(1)).Submit(ctx, room, lastEnv))
	if again.Seq != last.Seq || again.Hash != last.Hash {
		t.Fatalf("resubmission answered %d, want the record %d", again.Seq, last.Seq)
	}
	// A second device of alice's whose nonce source lags: a used nonce.
	lag := &envelope.Author{Signer: key("alice"), Nonces: identity.NewNonceSource(nil), Now: func() time.Time { return s.clock.Now().Add(-time.Minute) }}
	env := mustv(adp.NewMessage(ctx, lag, headBase(t, alice, room), text("x")))
	_, err := alice.Submit(ctx, room, env)
	var e *identity.Error
	if !errors.As(err, &e) || e.Code != identity.CodeNonceNotGreater || e.MaxSeenNonce < env.Event().Nonce {
		t.Fatalf("a used nonce: %v", err)
	}
	if l := mustv(alice.Sync(ctx, room)); l.Seq != 12 {
		t.Fatalf("log has %d records, want 12", l.Seq)
	}
}

package identity_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/identity"
)

// orderedStore is a NonceStore that fails the test if a save does not
// strictly increase.
type orderedStore struct {
	mu    sync.Mutex
	last  int64
	saves int
	bad   []string
}

func (s *orderedStore) Load(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, nil
}

func (s *orderedStore) Save(_ context.Context, n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n <= s.last {
		s.bad = append(s.bad, fmt.Sprintf("save %d after %d", n, s.last))
	}
	s.last = n
	s.saves++
	return nil
}

// fakeClock is a settable clock safe for concurrent use.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

func TestNonceSourceConcurrent(t *testing.T) {
	const workers, perWorker = 16, 250
	store := &orderedStore{}
	clock := &fakeClock{}
	clock.ms.Store(1779753600000)
	src := identity.NewNonceSource(&identity.NonceOptions{Store: store, Now: clock.Now})
	ctx := context.Background()

	results := make([][]int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				// Many events share a millisecond; the clock also ticks.
				if i%10 == 0 {
					clock.ms.Add(1)
				}
				n, err := src.Next(ctx, clock.Now())
				if err != nil {
					t.Error(err)
					return
				}
				results[w] = append(results[w], n)
			}
		}()
	}
	wg.Wait()

	var all []int64
	for w, r := range results {
		if !slices.IsSorted(r) || len(slices.Compact(slices.Clone(r))) != len(r) {
			t.Errorf("worker %d saw non-increasing nonces", w)
		}
		all = append(all, r...)
	}
	slices.Sort(all)
	if len(slices.Compact(all)) != workers*perWorker {
		t.Errorf("duplicate nonces issued")
	}
	if len(store.bad) > 0 || store.saves != workers*perWorker {
		t.Errorf("saves %d, out of order: %v", store.saves, store.bad)
	}
	if all[0] < 1779753600000 {
		t.Errorf("first nonce %d is below the clock", all[0])
	}
}

func TestNonceSourceRestart(t *testing.T) {
	ctx := context.Background()
	store := &orderedStore{}
	clock := &fakeClock{}
	clock.ms.Store(1779753600000)
	first := identity.NewNonceSource(&identity.NonceOptions{Store: store, Now: clock.Now})
	var issued []int64
	for range 5 {
		n, err := first.Next(ctx, clock.Now()) // same millisecond: last + 1
		if err != nil {
			t.Fatal(err)
		}
		issued = append(issued, n)
	}
	if issued[0] != 1779753600000 || issued[4] != 1779753600004 {
		t.Fatalf("issued %v", issued)
	}

	// A restart whose clock went back an hour never reuses a nonce.
	clock.ms.Add(-3600_000)
	second := identity.NewNonceSource(&identity.NonceOptions{Store: store, Now: clock.Now})
	n, err := second.Next(ctx, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if n != issued[4]+1 {
		t.Errorf("after restart got %d, want %d", n, issued[4]+1)
	}
	// A clock far ahead jumps to the clock.
	clock.ms.Store(1779760000000)
	third := identity.NewNonceSource(&identity.NonceOptions{Store: store, Now: clock.Now})
	if n, _ := third.Next(ctx, clock.Now()); n != 1779760000000 {
		t.Errorf("clock-derived nonce %d", n)
	}
	if len(store.bad) > 0 {
		t.Error(store.bad)
	}
}

// failingStore fails Save after the first n calls.
type failingStore struct {
	identity.MemoryNonceStore
	n int
}

func (f *failingStore) Save(ctx context.Context, v int64) error {
	if f.n == 0 {
		return errors.New("disk full")
	}
	f.n--
	return f.MemoryNonceStore.Save(ctx, v)
}

func TestNonceSourceSaveFailure(t *testing.T) {
	ctx := context.Background()
	store := &failingStore{n: 1}
	src := identity.NewNonceSource(&identity.NonceOptions{Store: store, Now: func() time.Time { return time.UnixMilli(0) }})
	if n, err := src.Next(ctx, time.UnixMilli(100)); err != nil || n != 100 {
		t.Fatalf("Next = %d, %v", n, err)
	}
	if n, err := src.Next(ctx, time.UnixMilli(100)); err == nil {
		t.Fatalf("Next with a failing store issued %d", n)
	}
	// The failed nonce was not handed out, so it may be issued later; what
	// matters is that nothing below the saved value is.
	if next, _ := src.Peek(ctx); next != 101 {
		t.Errorf("Peek = %d", next)
	}
}

func TestNonceSourceObserveMaxSeen(t *testing.T) {
	ctx := context.Background()
	nowMs := int64(1779753600000)
	newSource := func(store identity.NonceStore) *identity.NonceSource {
		return identity.NewNonceSource(&identity.NonceOptions{Store: store, Now: func() time.Time { return time.UnixMilli(nowMs) }})
	}
	store := &identity.MemoryNonceStore{}
	src := newSource(store)
	if _, err := src.Next(ctx, time.UnixMilli(nowMs)); err != nil {
		t.Fatal(err)
	}

	// Within the bound: the sequence moves past the header, durably.
	if err := src.ObserveMaxSeen(ctx, fmt.Sprint(nowMs+5000)); err != nil {
		t.Fatal(err)
	}
	if n, _ := src.Next(ctx, time.UnixMilli(nowMs)); n != nowMs+5001 {
		t.Errorf("Next after header = %d", n)
	}
	if n, _ := newSource(store).Peek(ctx); n != nowMs+5002 {
		t.Errorf("restarted Peek = %d", n)
	}

	// The bound is 2^32 beyond now (which here is below 2^32 beyond
	// max(next, now)): exactly at it is accepted.
	next, _ := src.Peek(ctx)
	limit := nowMs + identity.MaxNonceJump
	if err := src.ObserveMaxSeen(ctx, fmt.Sprint(limit+1)); !errors.Is(err, identity.ErrNonceJump) || !errors.Is(err, identity.ErrNonceAhead) {
		t.Errorf("beyond bound: %v", err)
	}
	if err := src.ObserveMaxSeen(ctx, fmt.Sprint(max(next, nowMs)+identity.MaxNonceJump+1)); !errors.Is(err, identity.ErrNonceJump) {
		t.Errorf("beyond the one-header bound: %v", err)
	}
	if n, _ := src.Peek(ctx); n != next {
		t.Errorf("rejected header moved the sequence to %d", n)
	}
	if err := src.ObserveMaxSeen(ctx, fmt.Sprint(limit)); err != nil {
		t.Errorf("at bound: %v", err)
	}
	if n, _ := src.Peek(ctx); n != limit+1 {
		t.Errorf("Peek = %d, want %d", n, limit+1)
	}

	// Malformed headers change nothing.
	before, _ := src.Peek(ctx)
	for _, h := range []string{"", "abc", "-1", "0", "01", "1.5", "0x10", "9007199254740992", "99999999999999999999"} {
		if err := src.ObserveMaxSeen(ctx, h); err == nil {
			t.Errorf("header %q accepted", h)
		}
	}
	// A header below the sequence is accepted and ignored.
	if err := src.ObserveMaxSeen(ctx, "5"); err != nil {
		t.Error(err)
	}
	if n, _ := src.Peek(ctx); n != before {
		t.Errorf("Peek = %d, want %d", n, before)
	}
}

func TestNonceSourceExhausted(t *testing.T) {
	ctx := context.Background()
	store := &identity.MemoryNonceStore{}
	store.Save(ctx, identity.MaxNonce)
	src := identity.NewNonceSource(&identity.NonceOptions{Store: store})
	if n, err := src.Next(ctx, time.Now()); !errors.Is(err, identity.ErrNonceExhausted) {
		t.Errorf("Next = %d, %v", n, err)
	}
}

// A hostile service answering every write with a Max-Seen-Nonce just inside
// the one-header bound cannot walk the sequence away from the clock: the
// cumulative advance stops at now + 2^32 ms, and the refusal is an error the
// caller sees (Identity §6.2).
func TestNonceSourceCumulativeMaxSeenBound(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{}
	nowMs := int64(1779753600000)
	clock.ms.Store(nowMs)
	store := &orderedStore{}
	src := identity.NewNonceSource(&identity.NonceOptions{Store: store, Now: clock.Now})
	if _, err := src.Next(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	var refused error
	for i := 0; i < 64 && refused == nil; i++ {
		next, _ := src.Peek(ctx)
		// Within the per-header rule of Identity §6.2.
		refused = src.ObserveMaxSeenNonce(ctx, max(next, clock.ms.Load())+identity.MaxNonceJump-1)
		clock.ms.Add(1000) // a second passes between answers
	}
	if !errors.Is(refused, identity.ErrNonceAhead) || !errors.Is(refused, identity.ErrNonceJump) {
		t.Fatalf("repeated maximal headers: last error %v, want ErrNonceAhead", refused)
	}
	now := clock.ms.Load()
	next, _ := src.Peek(ctx)
	if next > now+identity.MaxNonceJump+1 {
		t.Fatalf("sequence at %d, %d ms ahead of the clock", next, next-now)
	}
	// The refusal changed nothing, and the sequence still works.
	if next < nowMs+identity.MaxNonceJump {
		t.Fatalf("the first header was not applied: next %d", next)
	}
	if err := src.ObserveMaxSeenNonce(ctx, now+identity.MaxNonceJump+1); !errors.Is(err, identity.ErrNonceAhead) {
		t.Errorf("header past the cumulative bound: %v", err)
	}
	if n, _ := src.Peek(ctx); n != next {
		t.Errorf("refused header moved the sequence from %d to %d", next, n)
	}
	if n, err := src.Next(ctx, clock.Now()); err != nil || n != next {
		t.Errorf("Next = %d, %v; want %d", n, err, next)
	}
	// As the clock catches up, headers are honoured again.
	clock.ms.Add(10_000)
	if err := src.ObserveMaxSeenNonce(ctx, clock.ms.Load()+identity.MaxNonceJump); err != nil {
		t.Errorf("after the clock moved: %v", err)
	}
	if len(store.bad) > 0 {
		t.Error(store.bad)
	}
	// The pure rule agrees: from a sequence already 2^32 ahead, no header
	// moves it further.
	ahead := nowMs + identity.MaxNonceJump
	if _, err := identity.AdvanceNonce(ahead, nowMs, ahead+1); !errors.Is(err, identity.ErrNonceAhead) {
		t.Errorf("AdvanceNonce from the bound: %v", err)
	}
	if n, err := identity.AdvanceNonce(ahead, nowMs, ahead-1); err != nil || n != ahead {
		t.Errorf("AdvanceNonce with a header behind the sequence = %d, %v", n, err)
	}
}

package groupcommit

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestQueue: every item runs exactly once, in a group of at most the
// size more allows, one group at a time; items that arrive while a group
// runs share the next one.
func TestQueue(t *testing.T) { synctest.Test(t, testQueue) }

func testQueue(t *testing.T) {
	var q Queue[*int]
	var running, groups atomic.Int64
	runs := make([]atomic.Int64, 200)
	release := make(chan struct{})
	first := true
	var wg sync.WaitGroup
	run := func(group []*int) {
		if running.Add(1) != 1 {
			t.Error("two groups run at once")
		}
		if first {
			first = false
			<-release // the others queue meanwhile
		}
		if len(group) > 8 {
			t.Errorf("a group of %d", len(group))
		}
		for _, i := range group {
			runs[*i].Add(1)
		}
		groups.Add(1)
		running.Add(-1)
	}
	more := func(_, _ *int, n int) bool { return n < 8 }
	started := make(chan struct{})
	wg.Go(func() {
		i := 0
		q.Do(&i, more, func(g []*int) { close(started); run(g) })
	})
	<-started
	for i := 1; i < len(runs); i++ {
		wg.Go(func() { q.Do(&i, more, run) })
	}
	synctest.Wait() // every item is queued behind the first group
	if n := q.Waiting(); n != len(runs)-1 {
		t.Fatalf("%d items waiting, want %d", n, len(runs)-1)
	}
	close(release)
	wg.Wait()
	for i := range runs {
		if n := runs[i].Load(); n != 1 {
			t.Fatalf("item %d ran %d times", i, n)
		}
	}
	if g := groups.Load(); g != int64(1+(len(runs)-1+7)/8) {
		t.Fatalf("%d groups, want the first and then full groups of 8", g)
	}
}

// TestWaitQueued: WaitQueued returns when the n-th item waits behind the
// running group, not before, and with the context's error when it ends
// first.
func TestWaitQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Queue[int]
		release := make(chan struct{})
		started := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { q.Do(0, nil, func([]int) { close(started); <-release }) })
		<-started
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		if err := q.WaitQueued(ctx, 1); err != context.DeadlineExceeded {
			t.Fatalf("nothing queued: %v", err)
		}
		cancel()
		done := make(chan error, 1)
		go func() { done <- q.WaitQueued(t.Context(), 2) }()
		wg.Go(func() { q.Do(1, func(_, _ int, n int) bool { return true }, func([]int) {}) })
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("returned with one item queued: %v", err)
		default:
		}
		wg.Go(func() { q.Do(2, func(_, _ int, n int) bool { return true }, func([]int) {}) })
		if err := <-done; err != nil || q.Waiting() != 2 {
			t.Fatalf("%v with %d queued", err, q.Waiting())
		}
		close(release)
		wg.Wait()
	})
}

// TestReadyItemJoinsTheLeader: on one core, an item whose goroutine is
// ready to run when a leader starts joins the leader's group, rather than
// waiting for the group after it (a write whose signature is being
// checked while a commit begins). Every time: 500 rounds, so that the
// scheduler's every-61st-round fairness check is met many times.
func TestReadyItemJoinsTheLeader(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for i := range 500 {
		var q Queue[int]
		var groups [][]int
		run := func(g []int) { groups = append(groups, slices.Clone(g)) }
		all := func(_, _ int, _ int) bool { return true }
		var wg sync.WaitGroup
		wg.Go(func() { q.Do(1, all, run) }) // ready to run, not yet running
		q.Do(0, all, run)
		wg.Wait()
		if !slices.EqualFunc(groups, [][]int{{0, 1}}, slices.Equal) {
			t.Fatalf("round %d: groups %v, want one: [0 1]", i, groups)
		}
	}
}

package groupcommit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestQueue: every item runs exactly once, in a group of at most the
// size more allows, one group at a time; items that arrive while a group
// runs share the next one.
func TestQueue(t *testing.T) {
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
	for q.Waiting() < len(runs)-1 {
		time.Sleep(time.Millisecond)
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

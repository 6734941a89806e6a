// Package groupcommit is the leader hand-off of group commit: work that
// arrives while a group is being run waits, and the next group takes it,
// so that one costly step (a durable commit) serves every item that
// arrived during the previous one, with no added delay and no goroutine
// of its own.
//
// A leader takes its group only after the goroutines that are ready to
// run have had their turn (runtime.Gosched): on a host with one core the
// writes whose signatures are being checked reach the queue and join the
// group, instead of each waiting a whole commit for the next one. With
// nothing else ready, Gosched returns at once, so an idle queue adds no
// latency.
package groupcommit

import (
	"context"
	"runtime"
	"sync"

	"github.com/agentprotocols/go-sdk/internal/pulse"
)

// Queue runs groups of items, one group at a time. The zero Queue is
// ready to use; it is safe for concurrent use.
type Queue[T any] struct {
	mu      sync.Mutex
	running bool
	waiting []*waiter[T]
	queued  pulse.Pulse // fired when an item starts waiting (WaitQueued)
}

type waiter[T any] struct {
	item T
	done chan struct{} // closed once item has run, or to make it lead
	lead bool
}

// Do runs item as part of a group and returns once it has run. When no
// group is running, the caller leads one at once; otherwise item waits
// (whatever its caller's context: the group it joins may be running it),
// and when the running group is done, the caller of the first waiting
// item leads the next. A leader first lets the goroutines that are ready
// to run go (see the package comment); its group is then its item and the
// waiting items after it, in order, as long as more(lead, next, n) accepts them, where
// n is the group's length so far. run runs the group, in the leader's
// goroutine, and must settle every item's outcome, which each caller then
// reads from its own item. Groups run one at a time.
func (q *Queue[T]) Do(item T, more func(lead, next T, n int) bool, run func(group []T)) {
	q.mu.Lock()
	if q.running {
		w := &waiter[T]{item: item, done: make(chan struct{})}
		q.waiting = append(q.waiting, w)
		q.queued.Fire()
		q.mu.Unlock()
		<-w.done
		if !w.lead {
			return
		}
		q.mu.Lock()
	} else {
		q.running = true
	}
	q.mu.Unlock()
	// The items about to arrive join this group. Twice: Gosched puts this
	// goroutine on the global run queue, and the scheduler takes that
	// queue first on every 61st round (runtime/proc.go, findRunnable's
	// fairness check), which would hand the core straight back to the
	// leader one time in 61.
	runtime.Gosched()
	runtime.Gosched()
	q.mu.Lock()
	group := []T{item}
	n := 0
	for n < len(q.waiting) && more(item, q.waiting[n].item, len(group)) {
		group = append(group, q.waiting[n].item)
		n++
	}
	taken := q.waiting[:n:n]
	q.waiting = append(q.waiting[:0:0], q.waiting[n:]...)
	q.mu.Unlock()

	run(group)
	for _, w := range taken {
		close(w.done)
	}
	q.mu.Lock()
	if len(q.waiting) > 0 {
		next := q.waiting[0]
		q.waiting = q.waiting[1:]
		next.lead = true
		close(next.done)
	} else {
		q.running = false
	}
	q.mu.Unlock()
}

// Waiting returns how many items wait for a group.
func (q *Queue[T]) Waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting)
}

// WaitQueued returns once at least n items wait for a group, or with
// ctx's error when ctx ends first. It lets a caller (a test) line items up
// behind a running group without polling Waiting.
func (q *Queue[T]) WaitQueued(ctx context.Context, n int) error {
	return q.queued.Wait(ctx, func() bool { return q.Waiting() >= n })
}

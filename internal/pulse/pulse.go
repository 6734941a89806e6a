// Package pulse is a broadcast of "something changed", for waiting on a
// condition without polling: the code that changes the state calls Fire,
// and a waiter checks its condition again after each Fire.
package pulse

import (
	"context"
	"sync"
)

// Pulse is a broadcast of changes. The zero Pulse is ready to use; it is
// safe for concurrent use.
type Pulse struct {
	mu sync.Mutex
	ch chan struct{}
}

// C returns a channel that the next Fire closes. A waiter takes it before
// it checks its condition, so that no change between the check and the
// wait is missed.
func (p *Pulse) C() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch == nil {
		p.ch = make(chan struct{})
	}
	return p.ch
}

// Fire wakes every waiter. It allocates nothing when no one waits.
func (p *Pulse) Fire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch != nil {
		close(p.ch)
		p.ch = nil
	}
}

// Wait returns once cond holds, checking it at first and after each Fire,
// or with ctx's error when ctx ends first.
func (p *Pulse) Wait(ctx context.Context, cond func() bool) error {
	for {
		c := p.C()
		if cond() {
			return nil
		}
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

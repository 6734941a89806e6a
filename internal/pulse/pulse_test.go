package pulse

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestWait: Wait returns when a Fire makes the condition true, not at an
// earlier Fire, and with the context's error when it ends first.
func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p Pulse
		var n atomic.Int32
		done := make(chan error, 1)
		go func() { done <- p.Wait(t.Context(), func() bool { return n.Load() >= 2 }) }()
		synctest.Wait()
		n.Add(1)
		p.Fire()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("returned at 1: %v", err)
		default:
		}
		n.Add(1)
		p.Fire()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := p.Wait(ctx, func() bool { return false }); err != context.DeadlineExceeded {
			t.Fatalf("never true: %v", err)
		}
	})
}

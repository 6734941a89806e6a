package adphost

import (
	"context"
	"fmt"
)

// WaitQueuedWrites returns once n writes of room wait in its group commit
// behind the batch being appended (a BatchAppender store), or with ctx's
// error. Tests line writes up with it instead of sleeping.
func WaitQueuedWrites(ctx context.Context, h *Host, room string, n int) error {
	h.mu.Lock()
	hr := h.cache.rooms[room]
	h.mu.Unlock()
	if hr == nil {
		return fmt.Errorf("room %s is not cached", room)
	}
	return hr.writes.WaitQueued(ctx, n)
}

// WaitLiveStreams returns once the host serves at most n live streams, or
// with ctx's error.
func WaitLiveStreams(ctx context.Context, h *Host, n int) error {
	c := &h.streams
	return c.freed.Wait(ctx, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.slots) <= n
	})
}

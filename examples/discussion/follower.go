package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/sse"
)

// followTimeout bounds the wait for the follower to deliver the close.
const followTimeout = 15 * time.Second

// follower is one agent following the room over SSE from seq 1 until the
// room's closing record, in its own goroutine.
type follower struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has returned

	mu      sync.Mutex
	recs    []*adp.Record
	notices int
	errs    []error // recovered problems (KindError), for the report
	err     error   // why the subscription ended before the close
}

// startFollower subscribes as key's agent. The history that fills every
// gap and the live records verify into one replica of the room, the
// client's (sse.Options.Replica), so every record is judged by every room
// rule, once.
func startFollower(ctx context.Context, origin string, httpc *http.Client, key *identity.PrivateKey, room string) (*follower, error) {
	c, err := adp.NewClient(origin, &adp.ClientOptions{Signer: key, HTTPClient: httpc, AllowLoopbackHTTP: true})
	if err != nil {
		return nil, err
	}
	rep, err := c.Replica(room)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &follower{cancel: cancel, done: make(chan struct{})}
	opts := &sse.Options{
		Client:  c,
		Replica: rep,
		Backoff: sse.Backoff{Initial: 50 * time.Millisecond, Max: time.Second},
	}
	go func() {
		defer close(f.done)
		for it, err := range sse.Follow(ctx, opts) {
			f.mu.Lock()
			switch {
			case err != nil:
				f.err = err
			case it.Kind == sse.KindRecord:
				f.recs = append(f.recs, it.Record)
			case it.Kind == sse.KindError:
				f.errs = append(f.errs, it.Err)
			default:
				f.notices++
			}
			f.mu.Unlock()
			if err == nil && it.Kind == sse.KindRecord && it.Record.Envelope.Type() == adp.TypeRoomClose {
				return // the room ended; leaving the loop ends the subscription
			}
		}
	}()
	return f, nil
}

// wait waits for the follower to deliver the record at lastSeq (the
// room.close) and returns what it delivered.
func (f *follower) wait(lastSeq int64) ([]*adp.Record, int, error) {
	select {
	case <-f.done:
	case <-time.After(followTimeout):
		f.stop()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	recs := append([]*adp.Record(nil), f.recs...)
	if n := len(recs); n == 0 || recs[n-1].Seq != lastSeq {
		err := f.err
		if err == nil {
			err = errors.New("timed out")
		}
		return recs, f.notices, fmt.Errorf("stopped before seq %d: %w", lastSeq, err)
	}
	return recs, f.notices, nil
}

// records returns what the follower delivered so far.
func (f *follower) records() []*adp.Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*adp.Record(nil), f.recs...)
}

// stop ends the subscription and waits for its goroutine.
func (f *follower) stop() {
	f.cancel()
	<-f.done
}

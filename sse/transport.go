package sse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/httpc"
)

// ErrIdle is the cause of a reconnect after a connection stayed silent —
// no data and no heartbeat — for longer than Options.IdleTimeout.
var ErrIdle = errors.New("sse: connection idle")

// transport is the per-attempt hook go-sse lacks. Every connection attempt
// goes through RoundTrip, which
//   - sets a freshly minted request token (internal/httpc's Authorize,
//     audience the origin of the request URL);
//   - sets Last-Event-ID to the last verified seq, a hint only: §17.3 lets
//     hosts ignore it and the client never relies on it;
//   - turns 429 and 5xx answers into transport errors, which go-sse
//     retries with backoff (it treats any non-200 response as final),
//     after waiting out a Retry-After header (at most Backoff.Max);
//   - bounds the wait for the response headers, and the read of an error
//     body, by the idle limit too (a host that accepts the connection and
//     then stalls would otherwise hold the subscription silently);
//   - wraps the body in the idle watchdog.
type transport struct {
	authorize func(*http.Request, identity.Origin) error
	base      http.RoundTripper
	idle      time.Duration
	lastSeq   *atomic.Int64
	// maxWait caps how long a Retry-After answer holds the next attempt.
	maxWait time.Duration
	// beforeRead runs on the reading goroutine before each read of a
	// stream's body, while the watchdog is not counting.
	beforeRead func()
}

// retryableError is a 429 or 5xx answer, retried like a dropped connection.
type retryableError struct{ err error }

func (e *retryableError) Error() string { return e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	r := req.Clone(ctx)
	if seq := t.lastSeq.Load(); seq > 0 {
		r.Header.Set("Last-Event-ID", strconv.FormatInt(seq, 10))
	} else {
		r.Header.Del("Last-Event-ID")
	}
	if err := t.authorize(r, identity.Origin{}); err != nil {
		cancel()
		return nil, err
	}
	// Until the headers have arrived, and while an error body is read,
	// the idle limit bounds the whole wait.
	var stalled atomic.Bool
	watch := time.AfterFunc(t.idle, func() { stalled.Store(true); cancel() })
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		watch.Stop()
		cancel()
		if stalled.Load() {
			return nil, fmt.Errorf("%w: no response headers within %v", ErrIdle, t.idle)
		}
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		watch.Stop()
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		err := identity.ReadError(resp)
		resp.Body.Close()
		watch.Stop()
		if stalled.Load() {
			err = fmt.Errorf("%w: error body not read within %v: %w", ErrIdle, t.idle, err)
		}
		// Honour Retry-After (capped at the backoff's maximum) before
		// go-sse's own backoff delay.
		if d, ok := httpc.RetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok && d > 0 {
			wait := time.NewTimer(min(d, t.maxWait))
			select {
			case <-wait.C:
			case <-ctx.Done():
			}
			wait.Stop()
		}
		cancel()
		return nil, &retryableError{err}
	}
	if resp.StatusCode != http.StatusOK {
		// The validator reads the error body, within what is left of the
		// idle limit (watch stops when the body is closed).
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: func() { watch.Stop(); cancel() }}
		return resp, nil
	}
	resp.Body = newIdleBody(resp.Body, t.idle, cancel, t.beforeRead)
	return resp, nil
}

// cancelBody releases the attempt's context when the body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// idleBody is the idle watchdog. Its timer runs only while a Read waits
// for the network, so time the reader spends delivering records (blocked
// on a slow consumer, or while the client backfills from the history) is
// never counted as silence. When a Read waits longer than the limit the
// attempt's context is cancelled, which aborts the Read, and the Read
// reports ErrIdle; go-sse then reconnects.
type idleBody struct {
	rc     io.ReadCloser
	cancel context.CancelFunc
	limit  time.Duration
	timer  *time.Timer
	fired  atomic.Bool
	// beforeRead, if set, runs before each read.
	beforeRead func()
	once       sync.Once
}

func newIdleBody(rc io.ReadCloser, limit time.Duration, cancel context.CancelFunc, beforeRead func()) *idleBody {
	b := &idleBody{rc: rc, cancel: cancel, limit: limit, beforeRead: beforeRead}
	b.timer = time.AfterFunc(limit, func() {
		b.fired.Store(true)
		cancel()
	})
	b.timer.Stop()
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.beforeRead != nil {
		b.beforeRead()
	}
	if b.fired.Load() {
		return 0, fmt.Errorf("%w: no data or heartbeat for %v", ErrIdle, b.limit)
	}
	b.timer.Reset(b.limit)
	n, err := b.rc.Read(p)
	b.timer.Stop()
	if err != nil && b.fired.Load() {
		return n, fmt.Errorf("%w: no data or heartbeat for %v", ErrIdle, b.limit)
	}
	return n, err
}

func (b *idleBody) Close() error {
	var err error
	b.once.Do(func() {
		b.timer.Stop()
		err = b.rc.Close()
		b.cancel()
	})
	return err
}

package connector

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// historyTransport records, per room and seq, how often the host's
// history pages carried each record to one engine, and signals the live
// stream's records and notices as the engine reads them.
type historyTransport struct {
	next http.RoundTripper

	mu      sync.Mutex
	fetched map[string]int // "room/seq" → history pages that carried it
	// live receives, for each live-stream event read, its SSE event name
	// and, for records, the seq (when set; sends never block).
	live chan liveEvent
}

type liveEvent struct {
	name string
	seq  int64
}

func newHistoryTransport() *historyTransport {
	return &historyTransport{next: http.DefaultTransport, fetched: map[string]int{}}
}

func (c *historyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err != nil || r.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	switch p := r.URL.Path; {
	case strings.HasSuffix(p, "/events/live"):
		pr, pw := io.Pipe()
		body := resp.Body
		go c.scanLive(io.TeeReader(body, pw), pw)
		resp.Body = struct {
			io.Reader
			io.Closer
		}{pr, closerFunc(func() error { pr.Close(); return body.Close() })}
	case strings.HasSuffix(p, "/events"):
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		// A page counts once the client read all of it: one over the
		// client's response bound is cut off and asked for again smaller.
		resp.Body = &onEOF{r: bytes.NewReader(b), f: func() { c.count(b) }}
	}
	return resp, nil
}

// count notes the records of a history page the client read whole.
func (c *historyTransport) count(b []byte) {
	var page struct {
		Result []struct {
			RoomID string `json:"room_id"`
			Seq    int64  `json:"seq"`
		} `json:"result"`
	}
	if json.Unmarshal(b, &page) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rec := range page.Result {
		c.fetched[fmt.Sprintf("%s/%d", rec.RoomID, rec.Seq)]++
	}
}

// onEOF is a body that calls f once, when it is read to its end.
type onEOF struct {
	r    *bytes.Reader
	f    func()
	done bool
}

func (o *onEOF) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	if err == io.EOF && !o.done {
		o.done = true
		o.f()
	}
	return n, err
}

func (o *onEOF) Close() error { return nil }

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// scanLive copies the stream to the engine through the tee and reports
// each event once its bytes were handed on.
func (c *historyTransport) scanLive(r io.Reader, pw *io.PipeWriter) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var name string
	var seq int64
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			var rec struct {
				Seq int64 `json:"seq"`
			}
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data:")), &rec) == nil {
				seq = rec.Seq
			}
		case line == "" && name != "":
			c.mu.Lock()
			ch := c.live
			c.mu.Unlock()
			if ch != nil {
				select {
				case ch <- liveEvent{name, seq}:
				default:
				}
			}
			name, seq = "", 0
		}
	}
	pw.CloseWithError(sc.Err())
}

// refetched returns the records history pages carried more than once.
func (c *historyTransport) refetched() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k, n := range c.fetched {
		if n > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", k, n))
		}
	}
	return out
}

// assertFetchedOnce fails t when one engine's history reads carried a
// record twice: each record crosses the network once per engine.
func (c *historyTransport) assertFetchedOnce(t testing.TB) {
	t.Helper()
	if r := c.refetched(); len(r) > 0 {
		t.Errorf("records fetched from the host's history more than once by one engine: %v", r)
	}
}

package sse_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/sse"
)

// faultyHost is the reference host (adphost) behind a fault injector that
// rewrites its live streams frame by frame: drop, stall, duplicate,
// reorder, forge, and refuse with a status. Everything else passes
// through untouched.
type faultyHost struct {
	t      testing.TB
	host   *adphost.Host
	srv    *httptest.Server
	origin identity.Origin

	mu       sync.Mutex
	conns    map[*faultyConn]bool
	failNext []int
	// frame rewrites one complete SSE frame of a live stream (nil: as is).
	frame    func(frame []byte) [][]byte
	connects int
}

type faultyConn struct {
	cancel context.CancelFunc
	stall  chan struct{}
	once   sync.Once
}

func newFaultyHost(t testing.TB, heartbeat time.Duration) *faultyHost {
	f := &faultyHost{t: t, conns: map[*faultyConn]bool{}}
	var err error
	f.host, f.srv, err = adphosttest.NewUnstarted(&adphost.Options{RateLimits: adphost.Unlimited(), Heartbeat: heartbeat, SSEBuffer: 1 << 14})
	if err != nil {
		t.Fatal(err)
	}
	if f.origin, err = identity.ParseOrigin("http://"+f.srv.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true}); err != nil {
		t.Fatal(err)
	}
	f.srv.Config.Handler = f
	f.srv.Start()
	t.Cleanup(f.close)
	return f
}

func (f *faultyHost) close() {
	f.host.Close()
	f.drop()
	f.srv.CloseClientConnections()
	f.srv.Close()
}

func (f *faultyHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/events/live") {
		f.host.ServeHTTP(w, r)
		return
	}
	f.mu.Lock()
	f.connects++
	if len(f.failNext) > 0 {
		st := f.failNext[0]
		f.failNext = f.failNext[1:]
		f.mu.Unlock()
		identity.WriteError(w, &identity.Error{Code: identity.CodeInternalError, Message: "injected", Status: st})
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	c := &faultyConn{cancel: cancel, stall: make(chan struct{})}
	f.conns[c] = true
	f.mu.Unlock()
	changed.Fire()
	defer func() {
		cancel()
		f.mu.Lock()
		delete(f.conns, c)
		f.mu.Unlock()
		changed.Fire()
	}()
	f.host.ServeHTTP(&frameWriter{f: f, c: c, ctx: ctx, w: w}, r.WithContext(ctx))
}

// drop ends every open live stream.
func (f *faultyHost) drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.cancel()
		delete(f.conns, c)
	}
	changed.Fire()
}

// stall freezes every open live stream: no data, no heartbeat, no close.
func (f *faultyHost) stall() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.once.Do(func() { close(c.stall) })
		delete(f.conns, c)
	}
	changed.Fire()
}

func (f *faultyHost) streams() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.conns)
}

func (f *faultyHost) setFrame(fn func([]byte) [][]byte) {
	f.mu.Lock()
	f.frame = fn
	f.mu.Unlock()
}

// frameWriter buffers the host's stream into complete frames ("…\n\n")
// and passes each through the fault function.
type frameWriter struct {
	f   *faultyHost
	c   *faultyConn
	ctx context.Context
	w   http.ResponseWriter
	buf []byte
}

func (fw *frameWriter) Header() http.Header { return fw.w.Header() }
func (fw *frameWriter) WriteHeader(s int)   { fw.w.WriteHeader(s) }
func (fw *frameWriter) Flush()              { fw.w.(http.Flusher).Flush() }

func (fw *frameWriter) Write(p []byte) (int, error) {
	select {
	case <-fw.c.stall:
		<-fw.ctx.Done()
		return 0, fw.ctx.Err()
	default:
	}
	if fw.ctx.Err() != nil {
		return 0, fw.ctx.Err()
	}
	if !strings.HasPrefix(fw.w.Header().Get("Content-Type"), "text/event-stream") {
		return fw.w.Write(p) // an error answer, not a stream
	}
	fw.buf = append(fw.buf, p...)
	for {
		i := bytes.Index(fw.buf, []byte("\n\n"))
		if i < 0 {
			return len(p), nil
		}
		frame := bytes.Clone(fw.buf[:i+2])
		fw.buf = fw.buf[i+2:]
		fw.f.mu.Lock()
		fn := fw.f.frame
		fw.f.mu.Unlock()
		out := [][]byte{frame}
		if fn != nil {
			out = fn(frame)
		}
		for _, b := range out {
			if _, err := fw.w.Write(b); err != nil {
				return 0, err
			}
		}
	}
}

// recordFrame returns the record a room.event frame carries, or nil. The
// host writes one-line fields (an optional id, the event name, one data
// line).
func recordFrame(frame []byte) *adp.Record {
	var typ, data string
	for _, line := range strings.Split(strings.TrimSuffix(string(frame), "\n\n"), "\n") {
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			typ = v
		} else if v, ok := strings.CutPrefix(line, "data: "); ok {
			data = v
		}
	}
	if typ != sse.EventRecord {
		return nil
	}
	rec, err := adp.ParseRecord([]byte(data))
	if err != nil {
		return nil
	}
	return rec
}

func eventFrame(rec []byte) []byte {
	return []byte("event: room.event\ndata: " + string(rec) + "\n\n")
}

// adptestKey is a deterministic key for a name.
func adptestKey(name string) *identity.PrivateKey {
	seed := sha256.Sum256([]byte("sse " + name))
	k, err := identity.NewKeyFromSeed(seed[:])
	if err != nil {
		panic(err)
	}
	return k
}

func (f *faultyHost) client(name string) *adp.Client {
	c, err := adp.NewClient(f.srv.URL, &adp.ClientOptions{Signer: adptestKey(name), AllowLoopbackHTTP: true})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// adptestRoom is a public room on the faulty host: the creator, bob (a
// writer) and the follower.
type adptestRoom struct {
	f        *faultyHost
	id       string
	creator  *adp.Client
	bob      *adp.Client
	follower *adp.Client
}

func newAdptestRoom(t testing.TB, f *faultyHost, before int) *adptestRoom {
	ctx := context.Background()
	r := &adptestRoom{f: f, creator: f.client("creator"), bob: f.client("bob"), follower: f.client("alice")}
	now := time.Now()
	rec, err := r.creator.CreateRoom(ctx, adp.RoomCreate{Topic: "sse", Visibility: adp.VisibilityPublic,
		StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	r.id = rec.RoomID
	if _, err := r.bob.Join(ctx, r.id, adp.Join{Role: adp.RoleSpeaker}); err != nil {
		t.Fatal(err)
	}
	r.say(t, before)
	if _, err := r.follower.Join(ctx, r.id, adp.Join{Role: adp.RoleSpeaker}); err != nil {
		t.Fatal(err)
	}
	return r
}

// send writes one message by bob.
func (r *adptestRoom) send() (*adp.Record, error) {
	return r.bob.SendMessage(context.Background(), r.id, adp.Message{ContentType: "text/plain", Content: adp.TextContent("hello")})
}

// say writes n messages; it may run outside the test's goroutine, so it
// reports a failure with t.Error.
func (r *adptestRoom) say(t testing.TB, n int) {
	for i := 0; i < n; i++ {
		if _, err := r.send(); err != nil {
			t.Error(err)
			return
		}
	}
}

// sayOne writes one message and returns its seq.
func (r *adptestRoom) sayOne(t testing.TB) int64 {
	t.Helper()
	rec, err := r.send()
	if err != nil {
		t.Fatal(err)
	}
	return rec.Seq
}

func (r *adptestRoom) options() *sse.Options {
	return &sse.Options{
		API:         r.f.srv.URL + "/v1",
		RoomID:      r.id,
		Signer:      adptestKey("alice"),
		History:     sse.HistoryFunc(r.follower.Events),
		Origins:     &identity.OriginOptions{AllowLoopbackHTTP: true},
		IdleTimeout: 2 * time.Second,
		Backoff:     sse.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond},
	}
}

// hostRecords is the host's history, read and verified by a fresh client.
func (r *adptestRoom) hostRecords(t testing.TB) [][]byte {
	var out [][]byte
	for rec, err := range r.f.client("auditor").Events(context.Background(), r.id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.AppendJSON(nil))
	}
	return out
}

// checkHost asserts the collector delivered exactly the host's records.
func (c *collector) checkHost(t testing.TB, want [][]byte) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.records) != len(want) {
		t.Fatalf("delivered %d records, host has %d", len(c.records), len(want))
	}
	for i, rec := range c.records {
		if got := rec.AppendJSON(nil); rec.Seq != int64(i+1) || !bytes.Equal(got, want[i]) {
			t.Fatalf("record %d differs from the host's:\n got %s\nwant %s", i+1, got, want[i])
		}
	}
}

// forgeFrame returns a frame whose record links into the chain where rec
// sits (same seq, pre_hash, received_at) but holds a message bob never
// signed: a well-formed signature by another key.
func forgeFrame(t testing.TB, rec *adp.Record) []byte {
	a := &envelope.Author{Signer: adptestKey("bob"), Nonces: identity.NewNonceSource(nil)}
	env, err := adp.NewMessage(context.Background(), a, adp.Base{RoomID: rec.RoomID, Seq: rec.Seq - 1, Hash: rec.PreHash},
		adp.Message{ContentType: "text/plain", Content: adp.TextContent("forged")})
	if err != nil {
		t.Error(err)
		return nil
	}
	hash := env.Hash()
	good, bad := env.Signature(), ed25519.Sign(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x77}, 32)), hash[:])
	forged, err := envelope.Parse(bytes.Replace(env.AppendJSON(nil), []byte(b64(good[:])), []byte(b64(bad)), 1))
	if err != nil {
		t.Error(err)
		return nil
	}
	prev := &adp.Record{RoomID: rec.RoomID, Seq: rec.Seq - 1, Hash: rec.PreHash}
	return eventFrame(adp.NewRecord(rec.RoomID, prev, rec.ReceivedAt, forged).AppendJSON(nil))
}

// TestAdptestFaults runs the subscriber against the reference host with
// each fault a stream can have (a dropped connection, a gap, duplicates,
// records out of order, a stall; §17.3); in every case the consumer ends with exactly the
// host's records, in order, verified.
func TestAdptestFaults(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, f *faultyHost)
		// during runs while bob writes.
		during func(t *testing.T, f *faultyHost, r *adptestRoom, c *collector)
		// wantErr is the error item the fault must produce. The test waits
		// for it rather than checking once the records are in: on a loaded
		// machine the history can bring every record before the subscriber
		// reads the fault (a refused reconnect, an idle stream).
		wantErr error
	}{
		{name: "drop mid-stream", during: func(t *testing.T, f *faultyHost, r *adptestRoom, c *collector) {
			for i := 0; i < 3; i++ {
				r.say(t, 5)
				f.drop()
				r.say(t, 5)
				waitFor(t, func() bool { return f.streams() == 1 }, "a stream %v", func() any { return "" })
			}
		}},
		{name: "duplicate", setup: func(t *testing.T, f *faultyHost) {
			f.setFrame(func(b []byte) [][]byte { return [][]byte{b, b} })
		}},
		{name: "out of order", setup: func(t *testing.T, f *faultyHost) {
			var held []byte
			f.setFrame(func(b []byte) [][]byte {
				if recordFrame(b) == nil {
					return [][]byte{b}
				}
				if held == nil {
					held = b
					return nil
				}
				out := [][]byte{b, held}
				held = nil
				return out
			})
		}, during: func(t *testing.T, f *faultyHost, r *adptestRoom, c *collector) {
			r.say(t, 15)
			f.setFrame(nil)
		}},
		{name: "forged record", setup: func(t *testing.T, f *faultyHost) {
			f.setFrame(func(b []byte) [][]byte {
				if rec := recordFrame(b); rec != nil && rec.Seq%4 == 0 {
					return [][]byte{forgeFrame(t, rec)}
				}
				return [][]byte{b}
			})
		}, during: func(t *testing.T, f *faultyHost, r *adptestRoom, c *collector) {
			// A forged frame is reported when it arrives as the next record.
			// One that arrives after the history already gave its seq (the
			// subscriber slowed down by a loaded machine) is a duplicate and
			// dropped unread, so bob writes one record at a time, each once
			// the subscriber has the one before, until a forgery is reported.
			for i := 0; i < 40 && !c.hasError(identity.ErrInvalidSignature); i++ {
				c.waitSeq(t, r.sayOne(t))
			}
		}, wantErr: identity.ErrInvalidSignature},
		{name: "stall without heartbeats", during: func(t *testing.T, f *faultyHost, r *adptestRoom, c *collector) {
			f.stall()
			r.say(t, 10)
		}, wantErr: sse.ErrIdle},
		{name: "503 then recover", during: func(t *testing.T, f *faultyHost, r *adptestRoom, c *collector) {
			f.mu.Lock()
			f.failNext = []int{503, 503, 503}
			f.mu.Unlock()
			f.drop()
			r.say(t, 10)
		}, wantErr: &identity.Error{Code: identity.CodeInternalError}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFaultyHost(t, -1)
			r := newAdptestRoom(t, f, 10)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			opts := r.options()
			opts.IdleTimeout = 300 * time.Millisecond
			c := follow(t, opts, nil)
			waitFor(t, func() bool { return f.streams() == 1 }, "a stream %v", func() any { return "" })
			r.say(t, 10)
			if tc.during != nil {
				tc.during(t, f, r, c)
			}
			r.say(t, 10)
			want := r.hostRecords(t)
			c.waitSeq(t, int64(len(want)))
			if tc.wantErr != nil {
				waitFor(t, func() bool { return c.hasError(tc.wantErr) }, "an error item %v", func() any { return c.errors() })
			}
			c.stop(t)
			c.checkHost(t, want)
		})
	}
}

// A member removed through the reference host: the host ends the stream,
// the reconnect is refused, and Follow ends with membership_required.
func TestAdptestRemovedMember(t *testing.T) {
	base := runtime.NumGoroutine()
	f := newFaultyHost(t, -1)
	r := newAdptestRoom(t, f, 3)
	c := follow(t, r.options(), nil)
	waitFor(t, func() bool { return f.streams() == 1 }, "a stream %v", func() any { return "" })
	if _, err := r.creator.RemoveMember(context.Background(), r.id, adp.MemberRemove{Member: r.follower.AgentID()}); err != nil {
		t.Fatal(err)
	}
	err := c.wait(t)
	var ie *identity.Error
	if !errors.Is(err, adp.ErrMembershipRequired) || !errors.As(err, &ie) || ie.Status != http.StatusForbidden {
		t.Fatalf("final error %v, want membership_required (403)", err)
	}
	f.close()
	checkNoLeak(t, base)
}

// TestAdptestAcceptance: the follower's guarantee (§17.3) against the reference
// host: the follower joins after 500 records and survives 5 forced
// disconnects while bob writes 500 more; it ends with every record
// (500, its join, 500), verified, in order, none twice.
func TestAdptestAcceptance(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 writes over HTTP")
	}
	base := runtime.NumGoroutine()
	f := newFaultyHost(t, 50*time.Millisecond)
	r := newAdptestRoom(t, f, 500-2) // create and bob's join are records too
	c := follow(t, r.options(), nil)
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		r.say(t, 500)
	}()
	for i := 0; i < 5; i++ {
		waitFor(t, func() bool { return f.streams() == 1 }, "a stream %v", func() any { return "" })
		target := c.last() + 20
		waitFor(t, func() bool { return c.last() >= target }, "progress %v", func() any { return c.last() })
		f.drop()
	}
	<-writer
	want := r.hostRecords(t)
	if len(want) != 1001 {
		t.Fatalf("host has %d records, want 1001", len(want))
	}
	c.waitSeq(t, 1001)
	c.stop(t)
	c.checkHost(t, want)
	f.mu.Lock()
	n := f.connects
	f.mu.Unlock()
	if n < 6 {
		t.Fatalf("%d connections, want ≥ 6", n)
	}
	f.close()
	checkNoLeak(t, base)
}

// The reference host's notices arrive as typed notices, never as records:
// an agent status (§17.4) and, for the creator, a join request (§17.5).
func TestAdptestNotices(t *testing.T) {
	f := newFaultyHost(t, -1)
	r := newAdptestRoom(t, f, 1)
	opts := r.options()
	opts.Signer = adptestKey("creator")
	opts.History = sse.HistoryFunc(r.creator.Events)
	c := follow(t, opts, nil)
	// The first backfill runs once the stream is open, and the host
	// subscribes the stream before it answers: after it, notices reach us.
	c.waitSeq(t, int64(len(r.hostRecords(t))))
	ctx := context.Background()
	if _, err := r.bob.PutAgentStatus(ctx, r.id, adp.AgentStatusInput{State: "drafting", SeenSeq: 3}); err != nil {
		t.Fatal(err)
	}
	carol := f.client("carol")
	jr, err := carol.RequestJoin(ctx, r.id, adp.JoinRequestInput{Role: adp.RoleSpeaker})
	if err != nil {
		t.Fatal(err)
	}
	r.say(t, 1)
	want := r.hostRecords(t)
	c.waitSeq(t, int64(len(want)))
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.notices) == 2 }, "two notices %v", func() any { return "" })
	c.stop(t)
	c.checkHost(t, want)
	c.mu.Lock()
	defer c.mu.Unlock()
	var st *adp.AgentStatus
	var req *adp.JoinRequestNotice
	for _, it := range c.notices {
		switch it.Kind {
		case sse.KindAgentStatus:
			st = it.AgentStatus
		case sse.KindJoinRequest:
			req = it.JoinRequest
		}
	}
	if st == nil || st.AgentID != r.bob.AgentID() || st.State != "drafting" || st.SeenSeq != 3 {
		t.Fatalf("agent status: %+v", st)
	}
	if req == nil || req.RequestID != jr.Request.ID || req.Applicant != carol.AgentID() || req.Role != adp.RoleSpeaker {
		t.Fatalf("join request: %+v", req)
	}
}

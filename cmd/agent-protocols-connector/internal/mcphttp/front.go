package mcphttp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/jsonl"
	"github.com/agentprotocols/go-sdk/connector/mcptools"
)

// jsonrpcFront sits between the §3 guard and the go-sdk's Streamable HTTP
// handlers. It serves both protocol eras on one endpoint and makes the
// HTTP binding answer like the stdio one.
//
// MCP 2025-11-25 and earlier have sessions (initialize, Mcp-Session-Id, a
// GET stream, resumable streams): the go-sdk's stateful handler serves
// them. 2026-07-28 has none (every request carries its version in _meta
// and in the MCP-Protocol-Version header, subscriptions/listen replaces
// the GET stream): the go-sdk serves it only with a stateless handler. A
// request whose MCP-Protocol-Version header is 2026-07-28 or later, or
// whose params carry the 2026-07-28 _meta version, goes to the stateless
// handler; every other request to the stateful one. Both serve the same
// mcp.Server, so server/discover and the header errors list the same
// versions, and the set of methods served is the SDK's.
//
// In the session era:
//
//   - A request for a method the SDK does not serve gets a JSON-RPC
//     -32601 body (HTTP 200, application/json), not the SDK's HTTP 400
//     text/plain, which clients take for a transport fault
//     (modelcontextprotocol/go-sdk#976). (From
//     2026-07-28 on the SDK answers 404 with -32601 itself, as that
//     version requires.)
//   - A POST without Mcp-Session-Id, other than initialize, is HTTP 400
//     (2025-11-25 transports: "SHOULD respond … with HTTP 400 Bad
//     Request"), not a 200 with a code-0 error.
//   - After notifications/cancelled for a request still in flight on the
//     same session, nothing more is written to that request's response
//     stream: the cancelled request gets no response (MCP: the receiver
//     SHOULD NOT respond).
//
// In both eras it counts each engine session's open streams: in the
// session era the standalone GET stream and the POSTs in flight, in
// 2026-07-28 the conversation's subscriptions/listen streams and requests
// in flight. When a session that had a GET (or listen) stream open has
// none left for grace, its client went away (the TypeScript SDK's
// close(), a crash and an agentd reconnect send no DELETE), and gone is
// called, which releases the session's inbox claims. A client that
// never opens such a stream keeps its claims between calls, up to the
// engine's claim lease.
//
// Each POST body is read once (bounded by the SDK's body limit: a larger
// body is passed on for the SDK to refuse with 413).
type jsonrpcFront struct {
	sessions  http.Handler // the stateful handler: MCP 2025-11-25 and earlier
	stateless http.Handler // the stateless handler: 2026-07-28
	max       int64

	mu       sync.Mutex
	inflight map[inflightKey]*cancelWriter
	streams  map[string]*sessionStreams // by engine session name
	gets     map[getKey]*getStream
	calls    *pendingCalls

	gone  func(session string)
	grace time.Duration
}

// sessionStreams is one session's open-stream count.
type sessionStreams struct {
	open    int
	hadGET  bool
	pending *time.Timer
}

// getKey names one resumable stream of one session: its Mcp-Session-Id
// and the go-sdk's stream id ("" for the standalone GET stream).
type getKey struct{ session, stream string }

// getStream is a GET being served; cancel ends it, done closes when the
// go-sdk has released the stream.
type getStream struct {
	cancel context.CancelFunc
	done   chan struct{}
}

type inflightKey struct {
	session string
	id      jsonrpc.ID
}

func newJSONRPCFront(sessions, stateless http.Handler, calls *pendingCalls, gone func(session string), grace time.Duration) *jsonrpcFront {
	return &jsonrpcFront{sessions: sessions, stateless: stateless, max: mcp.DefaultMaxRequestBodyBytes,
		inflight: map[inflightKey]*cancelWriter{}, streams: map[string]*sessionStreams{}, gets: map[getKey]*getStream{}, calls: calls, gone: gone, grace: grace}
}

// maxTrackedSessions bounds the stream bookkeeping; past it new sessions
// are served untracked (their claims end with the engine's lease).
const maxTrackedSessions = 4096

// streamOpened counts a stream of session (an engine session name); the
// returned func closes it and reports how many of the session's streams
// are still open (-1: the session is not tracked).
func (f *jsonrpcFront) streamOpened(session string, get bool) (closed func() (left int)) {
	untracked := func() int { return -1 }
	if session == "" || f.gone == nil {
		return untracked
	}
	f.mu.Lock()
	ss := f.streams[session]
	if ss == nil {
		if len(f.streams) >= maxTrackedSessions {
			f.mu.Unlock()
			return untracked
		}
		ss = &sessionStreams{}
		f.streams[session] = ss
	}
	ss.open++
	ss.hadGET = ss.hadGET || get
	if ss.pending != nil {
		ss.pending.Stop()
		ss.pending = nil
	}
	f.mu.Unlock()
	return func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		ss.open--
		if ss.open > 0 {
			return ss.open
		}
		if !ss.hadGET {
			if f.streams[session] == ss {
				delete(f.streams, session)
			}
			return 0
		}
		var t *time.Timer
		t = time.AfterFunc(f.grace, func() {
			f.mu.Lock()
			if ss.pending != t || ss.open > 0 {
				f.mu.Unlock()
				return
			}
			delete(f.streams, session)
			f.mu.Unlock()
			f.gone(session)
		})
		ss.pending = t
		return 0
	}
}

func (f *jsonrpcFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Header.Del(callHeader) // the front's own, never the client's
	version := r.Header.Get("Mcp-Protocol-Version")
	if r.Method != http.MethodPost || r.Body == nil {
		if version >= mcptools.StatelessVersion {
			// 2026-07-28 has no GET stream and no DELETE: the SDK
			// answers 405.
			f.stateless.ServeHTTP(w, r)
			return
		}
		f.serveSessionStream(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, f.max+1))
	rest := r.Body
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), rest), rest}
	era := f.sessions
	if version >= mcptools.StatelessVersion {
		era = f.stateless
	}
	if err != nil || int64(len(body)) > f.max {
		era.ServeHTTP(w, r)
		return
	}
	if err := jsonl.CheckRequestID(body); err != nil {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		era.ServeHTTP(w, r) // the SDK answers malformed bodies
		return
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		era.ServeHTTP(w, r)
		return
	}
	if version >= mcptools.StatelessVersion || requestVersion(req.Params) != "" {
		f.serveStateless(w, r, req)
		return
	}
	f.serveSession(w, r, req)
}

// requestVersion is the protocol version a request's params carry in
// _meta (2026-07-28 and later), or "".
func requestVersion(params []byte) string {
	if !bytes.Contains(params, []byte(mcp.MetaKeyProtocolVersion)) {
		return ""
	}
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if jsonv2.Unmarshal(params, &p) != nil {
		return ""
	}
	v, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v
}

// serveSessionStream serves a session-era request other than a POST: the
// standalone GET stream, or DELETE.
func (f *jsonrpcFront) serveSessionStream(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	switch r.Method {
	case http.MethodGet:
		// A Last-Event-ID that is not one of the go-sdk's event ids
		// (stream_index) resumes nothing: the client gets a fresh stream,
		// as for ids whose events are gone (replayBuffer), not HTTP 400.
		if id := r.Header.Get("Last-Event-ID"); id != "" && !isEventID(id) {
			r.Header.Del("Last-Event-ID")
		}
		if sid != "" {
			defer f.streamOpened(mcptools.HTTPSessionName(sid), true)()
			var release func()
			if r, release = f.supersede(r, sid); release == nil {
				return
			}
			defer release()
		}
	case http.MethodDelete:
		f.mu.Lock()
		name := mcptools.HTTPSessionName(sid)
		if ss := f.streams[name]; ss != nil && ss.pending != nil {
			ss.pending.Stop()
		}
		delete(f.streams, name)
		f.mu.Unlock()
	}
	f.sessions.ServeHTTP(w, r)
}

// supersede makes r the one GET serving its stream: a GET already
// serving it (a connection the client dropped but the server has not yet
// seen close, or a half-open one) is ended first, so a reconnecting
// client gets its stream instead of the go-sdk's HTTP 409 "stream ID
// conflicts with ongoing stream" (MCP 2025-11-25, Streamable HTTP,
// resumability: the client reconnects with GET; the newest stream is the
// one it reads). It returns r bound to a context the next GET can cancel,
// and release, to call once the go-sdk has served r; release is nil when
// r ended while waiting.
func (f *jsonrpcFront) supersede(r *http.Request, sid string) (*http.Request, func()) {
	stream, _, _ := strings.Cut(r.Header.Get("Last-Event-ID"), "_")
	key := getKey{sid, stream}
	ctx, cancel := context.WithCancel(r.Context())
	me := &getStream{cancel: cancel, done: make(chan struct{})}
	f.mu.Lock()
	prev := f.gets[key]
	f.gets[key] = me
	f.mu.Unlock()
	release := func() {
		f.mu.Lock()
		if f.gets[key] == me {
			delete(f.gets, key)
		}
		f.mu.Unlock()
		cancel()
		close(me.done)
	}
	if prev != nil {
		prev.cancel()
		select {
		case <-prev.done:
		case <-ctx.Done():
			release()
			return r, nil
		}
	}
	return r.WithContext(ctx), release
}

// isEventID reports whether id has the form of the go-sdk's SSE event ids,
// "<stream>_<index>" (formatEventID in its mcp/streamable.go).
func isEventID(id string) bool {
	stream, index, ok := strings.Cut(id, "_")
	if !ok || strings.Contains(index, "_") || strings.Contains(stream, "_") || index == "" || len(index) > 9 {
		return false
	}
	return strings.Trim(index, "0123456789") == ""
}

// serveSession serves a session-era (MCP 2025-11-25 and earlier) POST.
func (f *jsonrpcFront) serveSession(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" && req.Method != "initialize" {
		writeRPCError(w, http.StatusBadRequest, req.ID, jsonrpc.CodeInvalidRequest, "Bad Request: Mcp-Session-Id header required")
		return
	}
	if req.Method == "initialize" && req.IsCall() {
		if err := jsonl.CheckInitializeParams(req.Params); err != nil {
			writeRPCError(w, http.StatusBadRequest, req.ID, jsonrpc.CodeInvalidParams, err.Error())
			return
		}
	}
	var session string
	if sid != "" {
		session = mcptools.HTTPSessionName(sid)
	}
	closed := f.streamOpened(session, false)
	if !req.IsCall() {
		defer closed()
		if req.Method == "notifications/cancelled" {
			if id, ok := jsonl.CancelledID(req.Params); ok {
				f.mu.Lock()
				if cw := f.inflight[inflightKey{sid, id}]; cw != nil {
					cw.cancel()
				}
				f.mu.Unlock()
			}
		}
		f.sessions.ServeHTTP(w, r)
		return
	}
	cw := &cancelWriter{ResponseWriter: w}
	if sid != "" {
		key := inflightKey{sid, req.ID}
		f.mu.Lock()
		f.inflight[key] = cw
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			if f.inflight[key] == cw {
				delete(f.inflight, key)
			}
			f.mu.Unlock()
		}()
	}
	// A tool call whose response stream closes (its client went away)
	// while the session has no other stream open cannot be answered: it
	// is cancelled, so a long-poll ends without claiming what arrives
	// next (a claim would hide the item from every other session for the
	// lease). A client that kept another stream open may still resume
	// the stream and fetch the result.
	var call string
	if req.Method == "tools/call" && f.calls != nil {
		call = f.calls.begin()
		r.Header.Set(callHeader, call)
	}
	nh := &notHandledWriter{ResponseWriter: cw, id: req.ID, method: req.Method}
	f.sessions.ServeHTTP(nh, r)
	nh.finish()
	left := closed()
	if call != "" {
		f.calls.finish(call, r.Context().Err() != nil && left == 0)
	}
}

// serveStateless serves a 2026-07-28 request. Its engine session is its
// conversation (conversationSession); a subscriptions/listen stream
// counts as the session era's GET stream did.
func (f *jsonrpcFront) serveStateless(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request) {
	conv, err := mcptools.ConversationSession(r.Header)
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, req.ID, jsonrpc.CodeInvalidRequest, err.Error())
		return
	}
	if req.IsCall() {
		defer f.streamOpened(conv, req.Method == "subscriptions/listen")()
	}
	f.stateless.ServeHTTP(w, r)
}

// callHeader carries the front's key of a session-era tool call to the
// middleware that runs its handler (pendingCalls); a client's is removed.
const callHeader = "Agent-Protocols-Call"

// pendingCalls are the session-era tool calls in flight over HTTP, by the
// key the front gives each, so the front can cancel one whose client went
// away. A call abandoned before its handler started is remembered for a
// while, so the handler starts cancelled.
type pendingCalls struct {
	prefix string // this front's, so that a key is never another front's on the same server

	mu    sync.Mutex
	next  uint64
	calls map[string]*pendingCall
}

type pendingCall struct {
	cancel    context.CancelFunc // set while the handler runs
	abandoned time.Time          // set: abandoned before the handler started
}

// abandonedKept is how long an abandoned call whose handler never started
// is remembered.
const abandonedKept = 30 * time.Second

// fronts numbers the fronts of this process, for pendingCalls' keys.
var fronts atomic.Uint64

func newPendingCalls() *pendingCalls {
	return &pendingCalls{prefix: strconv.FormatUint(fronts.Add(1), 10) + "-", calls: map[string]*pendingCall{}}
}

// middleware runs each session-era tool call the front keyed under a
// context that pendingCalls cancels when the call is abandoned: the
// go-sdk's stateful handler runs tool handlers apart from the POST that
// carried the call, so a closed response stream does not end them.
func (p *pendingCalls) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" {
			if ex := req.GetExtra(); ex != nil && ex.Header != nil {
				if key := ex.Header.Get(callHeader); strings.HasPrefix(key, p.prefix) {
					var end func()
					ctx, end = p.start(ctx, key)
					defer end()
				}
			}
		}
		return next(ctx, method, req)
	}
}

// begin registers a call and returns its key.
func (p *pendingCalls) begin() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for k, c := range p.calls {
		if !c.abandoned.IsZero() && now.Sub(c.abandoned) > abandonedKept {
			delete(p.calls, k)
		}
	}
	p.next++
	key := p.prefix + strconv.FormatUint(p.next, 10)
	p.calls[key] = &pendingCall{}
	return key
}

// start is the handler's side: ctx is cancelled when the call is
// abandoned; end unregisters it.
func (p *pendingCalls) start(ctx context.Context, key string) (context.Context, func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls[key]
	if c == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	if !c.abandoned.IsZero() {
		delete(p.calls, key)
		cancel()
		return ctx, cancel
	}
	c.cancel = cancel
	return ctx, func() {
		p.mu.Lock()
		if p.calls[key] == c {
			c.cancel = nil
		}
		p.mu.Unlock()
		cancel()
	}
}

// finish is the front's side, when the call's response stream ends:
// abandon cancels the call (or, not started yet, has it start
// cancelled).
func (p *pendingCalls) finish(key string, abandon bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls[key]
	if c == nil {
		return
	}
	switch {
	case !abandon:
		delete(p.calls, key)
	case c.cancel != nil:
		c.cancel()
		delete(p.calls, key)
	default:
		c.abandoned = time.Now()
	}
}

// writeRPCError answers with a JSON-RPC error body.
func writeRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, msg string) {
	b, err := jsonl.ErrorResponse(id, &jsonrpc.Error{Code: code, Message: msg})
	if err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// notHandledWriter turns the go-sdk's answer to a session-era request for
// a method it does not serve — HTTP 400 text/plain "JSON RPC not handled:
// …" (modelcontextprotocol/go-sdk#976) — into the JSON-RPC -32601 answer
// stdio gets. Any other answer passes through unchanged.
type notHandledWriter struct {
	http.ResponseWriter
	id     jsonrpc.ID
	method string
	held   bool // a 400 text/plain is held back until finish
	body   bytes.Buffer
}

// notHandled is how the go-sdk's text for a method it does not serve
// begins (jsonrpc2.ErrNotHandled, not exported).
const notHandled = "JSON RPC not handled"

func (w *notHandledWriter) WriteHeader(status int) {
	if status == http.StatusBadRequest && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.held = true
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *notHandledWriter) Write(p []byte) (int, error) {
	if w.held {
		if w.body.Len() < 4096 {
			w.body.Write(p)
		}
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// finish writes a held answer.
func (w *notHandledWriter) finish() {
	if !w.held {
		return
	}
	if bytes.HasPrefix(w.body.Bytes(), []byte(notHandled)) {
		w.Header().Del("X-Content-Type-Options")
		writeRPCError(w.ResponseWriter, http.StatusOK, w.id, jsonrpc.CodeMethodNotFound, "method not found: "+w.method)
		return
	}
	w.ResponseWriter.WriteHeader(http.StatusBadRequest)
	_, _ = w.ResponseWriter.Write(w.body.Bytes())
}

// Flush passes flushes on (SSE needs them).
func (w *notHandledWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.held {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *notHandledWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// cancelWriter is one request's response stream; once cancelled it
// swallows what is written, so the request ends without a response.
type cancelWriter struct {
	http.ResponseWriter
	mu        sync.Mutex
	cancelled bool
}

func (c *cancelWriter) cancel() {
	c.mu.Lock()
	c.cancelled = true
	c.mu.Unlock()
}

func (c *cancelWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancelled {
		return len(p), nil
	}
	return c.ResponseWriter.Write(p)
}

// Flush passes flushes on (SSE needs them).
func (c *cancelWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (c *cancelWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

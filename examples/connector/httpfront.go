package main

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// jsonrpcFront sits between the §3 guard and the go-sdk's Streamable HTTP
// handler and makes the HTTP binding answer like the stdio one:
//
//   - A request for a method the connector does not serve gets a JSON-RPC
//     -32601 body (HTTP 200, application/json), not the SDK's HTTP 400
//     text/plain, which clients take for a transport fault (R7).
//   - A POST of a session-era protocol (MCP-Protocol-Version absent or
//     before 2026-07-28) without Mcp-Session-Id, other than initialize,
//     is HTTP 400 (2025-11-25 transports: "SHOULD respond … with HTTP 400
//     Bad Request"), not a 200 with a code-0 error (R7).
//   - After notifications/cancelled for a request still in flight on the
//     same session, nothing more is written to that request's response
//     stream: the cancelled request gets no response (R8).
//   - It counts each session's open streams (the standalone GET and the
//     POSTs in flight). When a session that had a GET stream open has none
//     left for streamGrace, its client went away (the TypeScript SDK's
//     close(), a crash and an agentd reconnect send no DELETE), and gone is
//     called, which releases the session's inbox claims (R1). A client
//     that never opens a GET stream keeps its claims between calls, up to
//     the engine's claim lease.
//
// Each POST body is read once (bounded by the SDK's body limit: a larger
// body is passed on for the SDK to refuse with 413).
type jsonrpcFront struct {
	next http.Handler
	max  int64

	mu       sync.Mutex
	inflight map[inflightKey]*cancelWriter
	streams  map[string]*sessionStreams

	gone  func(session string)
	grace time.Duration
}

// sessionStreams is one session's open-stream count.
type sessionStreams struct {
	open    int
	hadGET  bool
	pending *time.Timer
}

type inflightKey struct {
	session string
	id      jsonrpc.ID
}

// servedMethods are the request methods the connector's server answers
// (those it does not advertise are refused -32601 by its own middleware).
var servedMethods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true,
	"tools/list": true, "tools/call": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"prompts/list": true, "prompts/get": true, "logging/setLevel": true, "completion/complete": true,
}

// statelessEra is the first protocol version without sessions.
const statelessEra = "2026-07-28"

func newJSONRPCFront(next http.Handler, gone func(session string), grace time.Duration) *jsonrpcFront {
	return &jsonrpcFront{next: next, max: mcp.DefaultMaxRequestBodyBytes, inflight: map[inflightKey]*cancelWriter{},
		streams: map[string]*sessionStreams{}, gone: gone, grace: grace}
}

// maxTrackedSessions bounds the stream bookkeeping; past it new sessions
// are served untracked (their claims end with the engine's lease).
const maxTrackedSessions = 4096

// streamOpened counts a stream of session; the returned func closes it.
func (f *jsonrpcFront) streamOpened(session string, get bool) (closed func()) {
	if session == "" || f.gone == nil {
		return func() {}
	}
	f.mu.Lock()
	ss := f.streams[session]
	if ss == nil {
		if len(f.streams) >= maxTrackedSessions {
			f.mu.Unlock()
			return func() {}
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
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		ss.open--
		if ss.open > 0 {
			return
		}
		if !ss.hadGET {
			if f.streams[session] == ss {
				delete(f.streams, session)
			}
			return
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
	}
}

func (f *jsonrpcFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	session := r.Header.Get("Mcp-Session-Id")
	switch r.Method {
	case http.MethodGet:
		defer f.streamOpened(session, true)()
		f.next.ServeHTTP(w, r)
		return
	case http.MethodDelete:
		f.mu.Lock()
		if ss := f.streams[session]; ss != nil && ss.pending != nil {
			ss.pending.Stop()
		}
		delete(f.streams, session)
		f.mu.Unlock()
	}
	if r.Method != http.MethodPost || r.Body == nil {
		f.next.ServeHTTP(w, r)
		return
	}
	defer f.streamOpened(session, false)()
	body, err := io.ReadAll(io.LimitReader(r.Body, f.max+1))
	rest := r.Body
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), rest), rest}
	if err != nil || int64(len(body)) > f.max {
		f.next.ServeHTTP(w, r)
		return
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		f.next.ServeHTTP(w, r) // the SDK answers malformed bodies
		return
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		f.next.ServeHTTP(w, r)
		return
	}
	version := r.Header.Get("Mcp-Protocol-Version")
	if session == "" && req.Method != "initialize" && req.Method != "server/discover" && (version == "" || version < statelessEra) {
		writeRPCError(w, http.StatusBadRequest, req.ID, jsonrpc.CodeInvalidRequest, "Bad Request: Mcp-Session-Id header required")
		return
	}
	if !req.IsCall() {
		if req.Method == "notifications/cancelled" {
			if id, ok := cancelledID(req.Params); ok {
				f.mu.Lock()
				if cw := f.inflight[inflightKey{session, id}]; cw != nil {
					cw.cancel()
				}
				f.mu.Unlock()
			}
		}
		f.next.ServeHTTP(w, r)
		return
	}
	if !servedMethods[req.Method] {
		writeRPCError(w, http.StatusOK, req.ID, jsonrpc.CodeMethodNotFound, "method not found: "+req.Method)
		return
	}
	if session == "" {
		f.next.ServeHTTP(w, r)
		return
	}
	key := inflightKey{session, req.ID}
	cw := &cancelWriter{ResponseWriter: w}
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
	f.next.ServeHTTP(cw, r)
}

// writeRPCError answers with a JSON-RPC error body.
func writeRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, msg string) {
	b, err := errorResponse(id, code, msg)
	if err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

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

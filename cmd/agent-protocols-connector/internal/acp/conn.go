package acp

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpConn is one MCP session of the server as the agent reaches it over
// ACP: an [mcp.Transport] and its [mcp.Connection]. In the Connected
// revision it is one mcp/connect connection; in the Stateless revision it
// serves every mcp/message to one serverId. Inner messages from the agent
// arrive through deliverFromAgent and are read by the server session;
// what the session writes leaves as mcp/message, wrapped for the
// successor. It is safe for concurrent use, as the go-sdk requires.
type mcpConn struct {
	p   *proxy
	rev Revision
	id  string // connectionId (Connected) or serverId (Stateless)

	in   chan jsonrpc.Message
	done chan struct{}
	once sync.Once

	active  atomic.Int64 // len(calls), read without mu to find an idle session
	lastUse int64        // guarded by p.mu

	mu       sync.Mutex
	next     int64
	calls    map[string]*call  // idKey(inner id) → the agent's open request
	requests map[string]string // Stateless: requestId → idKey(inner id), while open
	progress map[string]string // Stateless: rawIDKey(progressToken) → idKey(inner id)
}

// call is one request of the agent open on an mcpConn. The session sees
// it under an inner id of the proxy's, never reused, so that a late
// answer to a cancelled request cannot pass for the answer to a later
// one (a Stateless requestId may be reused once its request is done).
type call struct {
	outer jsonrpc.ID // the outer request, answered with the inner answer
	inner jsonrpc.ID
	// agentID is the id the agent knows the request by, written into
	// the subscriptionId of a subscriptions/listen's notifications and
	// result: its requestId (Stateless) or its outer id (Connected).
	agentID   any
	requestID string // Stateless: the agent's requestId
	progress  string // Stateless: key in mcpConn.progress, if any
}

var (
	_ mcp.Transport                = (*mcpConn)(nil)
	_ mcp.Connection               = (*mcpConn)(nil)
	_ mcp.ProtocolVersionSupporter = (*mcpConn)(nil)
)

func newMCPConn(p *proxy, rev Revision, id string) *mcpConn {
	return &mcpConn{p: p, rev: rev, id: id, in: make(chan jsonrpc.Message, p.maxQueued), done: make(chan struct{}),
		calls: map[string]*call{}, requests: map[string]string{}, progress: map[string]string{}}
}

// Connect implements [mcp.Transport]: the connection is its own.
func (c *mcpConn) Connect(context.Context) (mcp.Connection, error) { return c, nil }

// SessionID implements [mcp.Connection]; the connector names sessions.
func (c *mcpConn) SessionID() string { return "" }

// SupportsProtocolVersion implements [mcp.ProtocolVersionSupporter], so
// that server/discover offers a Stateless session only the MCP version
// its binding carries.
func (c *mcpConn) SupportsProtocolVersion(v string) bool {
	return c.rev != Stateless || v == mcpStatelessVersion
}

// Read implements [mcp.Connection].
func (c *mcpConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// errCode is the code of a failure of the binding itself: the Stateless
// revision has its own (@agentclientprotocol/sdk 2.4's
// McpBindingErrorCode), the Connected one uses JSON-RPC's internal error.
func (c *mcpConn) errCode(stateless int64) int64 {
	if c.rev == Stateless {
		return stateless
	}
	return jsonrpc.CodeInternalError
}

// enqueue hands one message to the session without blocking the read
// loop: a session that does not keep up is refused.
func (c *mcpConn) enqueue(m jsonrpc.Message) *jsonrpc.Error {
	select {
	case <-c.done:
		return &jsonrpc.Error{Code: c.errCode(codeBackendFailed), Message: "MCP session closed"}
	default:
	}
	select {
	case c.in <- m:
		return nil
	default:
		return &jsonrpc.Error{Code: c.errCode(codeResourceLimitExceeded), Message: "MCP session busy"}
	}
}

// deliverFromAgent passes the agent's inner MCP message to the session:
// an outer request becomes an inner request, whose answer becomes the
// outer response; an outer notification an inner one. requestID is the
// Stateless requestId ("" in the Connected revision).
func (c *mcpConn) deliverFromAgent(outer *jsonrpc.Request, requestID, method string, params []byte) *jsonrpc.Error {
	if !outer.IsCall() {
		return c.enqueue(&jsonrpc.Request{Method: method, Params: params})
	}
	cl := &call{outer: outer.ID, agentID: outer.ID.Raw(), requestID: requestID}
	if requestID != "" {
		cl.agentID = requestID
	}
	c.mu.Lock()
	if requestID != "" && c.requests[requestID] != "" {
		c.mu.Unlock()
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "duplicate active MCP request ID",
			Data: encode(struct {
				ServerID  string `json:"serverId"`
				RequestID string `json:"requestId"`
			}{c.id, requestID})}
	}
	if len(c.calls) >= c.p.maxActive {
		c.mu.Unlock()
		return &jsonrpc.Error{Code: c.errCode(codeResourceLimitExceeded), Message: "too many requests open on one MCP session"}
	}
	c.next++
	cl.inner = intID(c.next)
	key := idKey(cl.inner)
	if requestID != "" {
		c.requests[requestID] = key
		// Progress notifications name the request by its progressToken.
		var im innerMeta
		if jsonv2.Unmarshal(params, &im) == nil {
			if tok := rawIDKey(im.Meta.ProgressToken); tok != "" && c.progress[tok] == "" {
				cl.progress = tok
				c.progress[tok] = key
			}
		}
	}
	c.calls[key] = cl
	c.active.Store(int64(len(c.calls)))
	c.mu.Unlock()
	outerKey := idKey(outer.ID)
	c.p.mu.Lock()
	c.p.inbound[outerKey] = cancelTarget{conn: c, inner: key}
	c.p.mu.Unlock()
	if err := c.enqueue(&jsonrpc.Request{ID: cl.inner, Method: method, Params: params}); err != nil {
		c.take(key)
		c.p.forget(outerKey)
		return err
	}
	return nil
}

// take removes and returns the open request with inner id key.
func (c *mcpConn) take(key string) *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.calls[key]
	if cl != nil {
		delete(c.calls, key)
		delete(c.requests, cl.requestID)
		if cl.progress != "" {
			delete(c.progress, cl.progress)
		}
		c.active.Store(int64(len(c.calls)))
	}
	return cl
}

// owner is the open request an inner notification belongs to: by the
// subscriptionId of a subscriptions/listen's notifications, or by the
// progressToken of a progress notification.
func (c *mcpConn) owner(params []byte) *call {
	var n struct {
		ProgressToken jsontext.Value `json:"progressToken"`
		Meta          struct {
			SubscriptionID jsontext.Value `json:"io.modelcontextprotocol/subscriptionId"`
		} `json:"_meta"`
	}
	if jsonv2.Unmarshal(params, &n) != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := rawIDKey(n.Meta.SubscriptionID); k != "" {
		return c.calls[k]
	}
	if k := rawIDKey(n.ProgressToken); k != "" {
		return c.calls[c.progress[k]]
	}
	return nil
}

// agentSubscriptionID rewrites the subscriptionId in params._meta (of a
// subscriptions/listen's notification or result) from the inner id to
// the id the agent knows the request by, so that the agent can
// correlate it; other params pass unchanged.
func (c *mcpConn) agentSubscriptionID(params []byte) []byte {
	if !bytes.Contains(params, []byte(metaSubscriptionID)) {
		return params
	}
	var obj map[string]jsontext.Value
	var meta map[string]jsontext.Value
	if jsonv2.Unmarshal(params, &obj) != nil || jsonv2.Unmarshal(obj["_meta"], &meta) != nil {
		return params
	}
	k := rawIDKey(meta[metaSubscriptionID])
	c.mu.Lock()
	cl := c.calls[k]
	c.mu.Unlock()
	if cl == nil {
		return params
	}
	meta[metaSubscriptionID] = encode(cl.agentID)
	obj["_meta"] = encode(meta)
	return encode(obj)
}

// Write implements [mcp.Connection]: the session's answers go back as the
// outer responses; its own requests and notifications go to the agent as
// mcp/message.
func (c *mcpConn) Write(_ context.Context, m jsonrpc.Message) error {
	select {
	case <-c.done:
		return io.ErrClosedPipe
	default:
	}
	switch m := m.(type) {
	case *jsonrpc.Response:
		result := c.agentSubscriptionID(m.Result)
		cl := c.take(idKey(m.ID))
		if cl == nil {
			return nil // cancelled, or the session closed
		}
		c.p.forget(idKey(cl.outer))
		if c.rev == Stateless {
			var oc outcome
			if m.Error != nil {
				oc.Error = innerError(m.Error)
			} else {
				oc.Result = result
				if len(oc.Result) == 0 {
					oc.Result = jsontext.Value("null")
				}
			}
			c.p.respond(cl.outer, encode(oc), nil)
			return nil
		}
		c.p.respond(cl.outer, result, m.Error)
	case *jsonrpc.Request:
		if c.rev == Stateless {
			c.writeStateless(m)
			return nil
		}
		msg := encode(connectedMessage{ConnectionID: c.id, Method: m.Method, Params: c.agentSubscriptionID(m.Params)})
		if !m.IsCall() {
			c.p.notifySuccessor(methodMCPMessage, msg)
			return nil
		}
		inner := m.ID
		_, err := c.p.toSuccessor(methodMCPMessage, msg, func(r *jsonrpc.Response) {
			_ = c.enqueue(&jsonrpc.Response{ID: inner, Result: r.Result, Error: r.Error})
		})
		if err != nil {
			// Answer the session's request locally rather than leave it hanging.
			_ = c.enqueue(&jsonrpc.Response{ID: inner, Error: err})
		}
	}
	return nil
}

// writeStateless sends what the session writes in the Stateless revision:
// a notification belonging to an open request goes to the agent as an
// mcp/message notification naming it; the binding has no channel for
// anything else (MCP 2026-07-28 servers send no requests of their own).
func (c *mcpConn) writeStateless(m *jsonrpc.Request) {
	if m.IsCall() {
		_ = c.enqueue(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: "stateless MCP-over-ACP carries no requests from the server"}})
		return
	}
	cl := c.owner(m.Params)
	if cl == nil {
		c.p.log.Warn("connector acp: dropped a notification that belongs to no open request", "method", clip(m.Method), "session", c.id)
		return
	}
	c.p.notifySuccessor(methodMCPMessage, encode(statelessMessage{ServerID: c.id, RequestID: cl.requestID, Method: m.Method, Params: c.agentSubscriptionID(m.Params)}))
}

// Close implements [mcp.Connection]; it releases the session, and
// answers the agent's requests still open on it with an error.
func (c *mcpConn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.p.dropConn(c)
		c.mu.Lock()
		open := c.calls
		c.calls, c.requests, c.progress = map[string]*call{}, map[string]string{}, map[string]string{}
		c.active.Store(0)
		c.mu.Unlock()
		for _, cl := range open {
			c.p.forget(idKey(cl.outer))
			c.p.respondError(cl.outer, &jsonrpc.Error{Code: c.errCode(codeBackendFailed), Message: "MCP session closed"})
		}
	})
	return nil
}

// cancel ends the agent's inner request (inner id key) after a
// $/cancel_request: the session is told (notifications/cancelled), and
// the outer request is answered -32800 here, since MCP sends no answer to
// a cancelled request; a late answer from the session is dropped.
func (c *mcpConn) cancel(key, via string) {
	cl := c.take(key)
	if cl == nil {
		return
	}
	c.p.forget(idKey(cl.outer))
	_ = c.enqueue(&jsonrpc.Request{Method: mcpCancelled, Params: encode(struct {
		RequestID any    `json:"requestId"`
		Reason    string `json:"reason"`
	}{cl.inner.Raw(), "cancelled over ACP (" + via + ")"})})
	c.p.respondError(cl.outer, &jsonrpc.Error{Code: codeCancelled, Message: "request cancelled"})
}

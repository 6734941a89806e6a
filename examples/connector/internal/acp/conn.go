package acp

import (
	"context"
	"encoding/json"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpConn is one MCP-over-ACP connection seen from the MCP server: an
// [mcp.Transport] and its [mcp.Connection]. Inner messages from the agent
// arrive through deliverFromAgent and are read by the server session;
// what the session writes leaves as mcp/message, wrapped for the
// successor. It is safe for concurrent use, as the go-sdk requires.
type mcpConn struct {
	p  *proxy
	id string

	in   chan jsonrpc.Message
	done chan struct{}
	once sync.Once

	mu    sync.Mutex
	next  int64
	calls map[int64]jsonrpc.ID // inner request id → the agent's outer request id
}

// mcpCancelled is MCP's cancellation notification, which an ACP
// $/cancel_request of an mcp/message request becomes.
const mcpCancelled = "notifications/cancelled"

var (
	_ mcp.Transport  = (*mcpConn)(nil)
	_ mcp.Connection = (*mcpConn)(nil)
)

func newMCPConn(p *proxy, id string) *mcpConn {
	return &mcpConn{p: p, id: id, in: make(chan jsonrpc.Message, p.maxQueued), done: make(chan struct{}), calls: map[int64]jsonrpc.ID{}}
}

// Connect implements [mcp.Transport]: the connection is its own.
func (c *mcpConn) Connect(context.Context) (mcp.Connection, error) { return c, nil }

// SessionID implements [mcp.Connection]; the connector names sessions.
func (c *mcpConn) SessionID() string { return "" }

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

// enqueue hands one message to the session without blocking the read
// loop: a connection whose session does not keep up is refused.
func (c *mcpConn) enqueue(m jsonrpc.Message) *jsonrpc.Error {
	select {
	case <-c.done:
		return invalidParams("closed %s %q", c.p.rev.ConnectionID, c.id)
	default:
	}
	select {
	case c.in <- m:
		return nil
	default:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "MCP connection busy"}
	}
}

// deliverFromAgent passes the agent's inner MCP message to the session:
// an outer request becomes an inner request under a fresh inner id, whose
// answer becomes the outer response; an outer notification an inner one.
func (c *mcpConn) deliverFromAgent(outer *jsonrpc.Request, method string, params json.RawMessage) *jsonrpc.Error {
	if !outer.IsCall() {
		return c.enqueue(&jsonrpc.Request{Method: method, Params: params})
	}
	c.mu.Lock()
	c.next++
	n := c.next
	c.calls[n] = outer.ID
	c.mu.Unlock()
	key := idKey(outer.ID)
	c.p.mu.Lock()
	c.p.inbound[key] = cancelTarget{id: n, conn: c}
	c.p.mu.Unlock()
	if err := c.enqueue(&jsonrpc.Request{ID: intID(n), Method: method, Params: params}); err != nil {
		c.mu.Lock()
		delete(c.calls, n)
		c.mu.Unlock()
		c.p.forget(key)
		return err
	}
	return nil
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
	rev := c.p.rev
	switch m := m.(type) {
	case *jsonrpc.Response:
		n, _ := m.ID.Raw().(int64)
		c.mu.Lock()
		outer, ok := c.calls[n]
		delete(c.calls, n)
		c.mu.Unlock()
		if ok {
			c.p.forget(idKey(outer))
			c.p.respond(outer, m.Result, m.Error)
		}
		return nil
	case *jsonrpc.Request:
		msg := body(map[string]json.RawMessage{
			rev.ConnectionID: quote(c.id),
			rev.Method:       quote(m.Method),
			rev.Params:       m.Params,
		})
		if !m.IsCall() {
			c.p.notify(rev.ProxySuccessor, c.p.wrap(rev.MCPMessage, msg))
			return nil
		}
		inner := m.ID
		_, err := c.p.toSuccessor(rev.MCPMessage, msg, func(r *jsonrpc.Response) {
			_ = c.enqueue(&jsonrpc.Response{ID: inner, Result: r.Result, Error: r.Error})
		})
		if err != nil {
			// Answer the session's request locally rather than leave it hanging.
			_ = c.enqueue(&jsonrpc.Response{ID: inner, Error: err})
		}
		return nil
	}
	return nil
}

// Close implements [mcp.Connection]; it releases the connection id, and
// answers the agent's requests still open on it with an error.
func (c *mcpConn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.p.dropConn(c.id)
		c.mu.Lock()
		open := c.calls
		c.calls = map[int64]jsonrpc.ID{}
		c.mu.Unlock()
		for _, outer := range open {
			c.p.forget(idKey(outer))
			c.p.respondError(outer, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "MCP connection closed"})
		}
	})
	return nil
}

// codeCancelled is ACP's "request cancelled" error code.
const codeCancelled = -32800

// cancel ends the agent's inner request n after a $/cancel_request: the
// session is told (notifications/cancelled), and the outer request is
// answered -32800 here, since MCP sends no answer to a cancelled request;
// a late answer from the session is dropped.
func (c *mcpConn) cancel(n int64, via string) {
	c.mu.Lock()
	outer, ok := c.calls[n]
	delete(c.calls, n)
	c.mu.Unlock()
	if !ok {
		return
	}
	c.p.forget(idKey(outer))
	_ = c.enqueue(&jsonrpc.Request{Method: mcpCancelled, Params: body(map[string]json.RawMessage{
		"requestId": json.RawMessage(strconv.FormatInt(n, 10)),
		"reason":    quote("cancelled over ACP (" + via + ")"),
	})})
	c.p.respondError(outer, &jsonrpc.Error{Code: codeCancelled, Message: "request cancelled"})
}

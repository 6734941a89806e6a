package acp

import (
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// meta2026 is the inner _meta of an MCP 2026-07-28 request.
func meta2026() map[string]any {
	return map[string]any{metaProtocolVersion: mcpStatelessVersion, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
}

// statelessCall is one Stateless mcp/message request's params.
func statelessCall(sid, rid, method string, params map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	if params["_meta"] == nil {
		params["_meta"] = meta2026()
	}
	return map[string]any{"serverId": sid, "requestId": rid, "method": method, "params": params}
}

func toolCall(name string, meta map[string]any) map[string]any {
	m := map[string]any{"name": name, "arguments": map[string]any{}}
	if meta != nil {
		m["_meta"] = meta
	}
	return m
}

// startStateless is a proxy after proxy/initialize (the agent consuming
// acp servers) with one session; it returns the session's serverId.
func startStateless(t *testing.T, o *Options) (*peer, string) {
	p := startProxy(t, o)
	p.initializeAs(Stateless, true)
	return p, p.session(2)
}

// TestStatelessProgressAndOutcome: a progress notification of an open
// request goes to the agent as an mcp/message notification naming its
// serverId and requestId (found by its progressToken), before the
// outcome carrier {"result": …} answers the outer request.
func TestStatelessProgressAndOutcome(t *testing.T) {
	p, sid := startStateless(t, &Options{})
	meta := meta2026()
	meta["progressToken"] = "tok-1"
	p.send(wrappedAs(Stateless, "call-1", methodMCPMessage, statelessCall(sid, "r-1", "tools/call", toolCall("progress", meta))))
	n := p.next()
	if n["method"] != "proxy/successor" || n["id"] != nil || dig(n, "params", "method") != methodMCPMessage {
		t.Fatalf("progress: %v", n)
	}
	inner, _ := dig(n, "params", "params").(map[string]any)
	if inner["serverId"] != sid || inner["requestId"] != "r-1" || inner["method"] != "notifications/progress" || dig(inner, "params", "progressToken") != "tok-1" {
		t.Fatalf("progress notification: %v", inner)
	}
	r := p.next()
	if r["id"] != "call-1" || dig(r, "result", "result", "content") == nil || dig(r, "result", "error") != nil {
		t.Fatalf("outcome: %v", r)
	}
}

// TestStatelessNoServerRequests: the stateless binding has no channel
// for requests from the server; one the server sends is answered
// locally with an error, and nothing reaches the agent but the outcome.
func TestStatelessNoServerRequests(t *testing.T) {
	p, sid := startStateless(t, &Options{})
	r := p.agentCall("call-1", methodMCPMessage, statelessCall(sid, "r-1", "tools/call", toolCall("ping_client", nil)))
	if dig(r, "result", "result", "isError") != true && dig(r, "result", "error") == nil {
		t.Fatalf("a tool whose server request failed: %v", r)
	}
}

// TestStatelessCancel: $/cancel_request naming the outer mcp/message
// request cancels the inner request (the blocked tool's context ends) and
// answers -32800 once; the requestId is free again.
func TestStatelessCancel(t *testing.T) {
	p, sid := startStateless(t, &Options{})
	p.send(wrappedAs(Stateless, "blocked", methodMCPMessage, statelessCall(sid, "r-1", "tools/call", toolCall("block", nil))))
	p.send(map[string]any{"jsonrpc": "2.0", "method": methodCancelRequest, "params": map[string]any{"requestId": "blocked"}})
	if m := p.next(); m["id"] != "blocked" || errCode(m) != codeCancelled {
		t.Fatalf("cancelled request: %v", m)
	}
	if r := p.agentCall("again", methodMCPMessage, statelessCall(sid, "r-1", "tools/list", nil)); dig(r, "result", "result", "tools") == nil {
		t.Fatalf("requestId after cancel: %v", r)
	}
}

// TestStatelessSessionBound: at MaxConnections MCP sessions, the least
// recently used idle one is closed to serve a new serverId; with every
// session busy the request is refused -33000; a request open on a
// server whose session setup failed is answered -33002.
func TestStatelessSessionBound(t *testing.T) {
	p, s1 := startStateless(t, &Options{MaxConnections: 1})
	s2 := p.session(3)
	list := func(id, sid, rid string) map[string]any {
		return p.agentCall(id, methodMCPMessage, statelessCall(sid, rid, "tools/list", nil))
	}
	if r := list("a", s1, "r-1"); dig(r, "result", "result", "tools") == nil {
		t.Fatalf("first server: %v", r)
	}
	if r := list("b", s2, "r-1"); dig(r, "result", "result", "tools") == nil {
		t.Fatalf("second server (the first idle): %v", r)
	}
	p.send(wrappedAs(Stateless, "blocked", methodMCPMessage, statelessCall(s2, "r-2", "tools/call", toolCall("block", nil))))
	if r := list("c", s1, "r-3"); errCode(r) != codeResourceLimitExceeded {
		t.Fatalf("every session busy: %v", r)
	}
	// Too many requests open on one session are refused as well.
	q, s := startStateless(t, &Options{MaxActive: 1})
	q.send(wrappedAs(Stateless, "blocked", methodMCPMessage, statelessCall(s, "r-1", "tools/call", toolCall("block", nil))))
	if r := q.agentCall("more", methodMCPMessage, statelessCall(s, "r-2", "tools/list", nil)); errCode(r) != codeResourceLimitExceeded {
		t.Fatalf("over MaxActive: %v", r)
	}
}

// TestStatelessFailedSessionSetup: a request open on the server of a
// session setup the agent then refused is answered -33002, and the
// server is unavailable afterwards (-33001).
func TestStatelessFailedSessionSetup(t *testing.T) {
	p := startProxy(t, &Options{})
	p.initializeAs(Stateless, true)
	p.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": map[string]any{"cwd": "/", "mcpServers": []any{}}})
	fwd := p.next()
	sid, _ := dig(fwd, "params", "params", "mcpServers").([]any)[0].(map[string]any)["serverId"].(string)
	// The agent uses the server while it sets the session up, then fails.
	p.send(wrappedAs(Stateless, "blocked", methodMCPMessage, statelessCall(sid, "r-1", "tools/call", toolCall("block", nil))))
	p.send(map[string]any{"jsonrpc": "2.0", "id": fwd["id"], "error": map[string]any{"code": -32603, "message": "no"}})
	got := map[any]map[string]any{}
	for len(got) < 2 {
		m := p.next()
		got[m["id"]] = m
	}
	if errCode(got["blocked"]) != codeBackendFailed || errCode(got[float64(2)]) != -32603 {
		t.Fatalf("open request and session/new: %v", got)
	}
	if r := p.agentCall("late", methodMCPMessage, statelessCall(sid, "r-2", "tools/list", nil)); errCode(r) != codeServerUnavailable {
		t.Fatalf("the refused session's server: %v", r)
	}
}

// TestStatelessRouting: an mcp/message to a server an earlier component
// declared goes on toward the client; an mcp/message notification from
// the agent (the binding has none toward the server) is dropped; a
// client request cancelled goes to the successor as a plain
// $/cancel_request naming the proxy/successor request, as the schema of
// the proxy/* revision cancels it on its own hop.
func TestStatelessRouting(t *testing.T) {
	p := startProxy(t, &Options{})
	p.initializeAs(Stateless, true)
	p.session(2, map[string]any{"type": "acp", "name": "other", "serverId": "other:1"})
	p.send(wrappedAs(Stateless, "up-1", methodMCPMessage, statelessCall("other:1", "r-1", "tools/list", nil)))
	fwd := p.next()
	if fwd["method"] != methodMCPMessage || dig(fwd, "params", "serverId") != "other:1" || dig(fwd, "params", "requestId") != "r-1" {
		t.Fatalf("upstream mcp/message: %v", fwd)
	}
	p.send(map[string]any{"jsonrpc": "2.0", "id": fwd["id"], "result": map[string]any{"result": map[string]any{"tools": []any{}}}})
	if r := p.next(); r["id"] != "up-1" || dig(r, "result", "result", "tools") == nil {
		t.Fatalf("upstream answer: %v", r)
	}
	p.send(wrappedAs(Stateless, nil, methodMCPMessage, statelessCall("x", "r-1", "notifications/cancelled", nil)))
	p.send(map[string]any{"jsonrpc": "2.0", "id": "prompt-7", "method": "session/prompt", "params": map[string]any{"sessionId": "s", "prompt": []any{}}})
	prompt := p.next()
	if dig(prompt, "params", "method") != "session/prompt" {
		t.Fatalf("the agent's notification was not dropped: %v", prompt)
	}
	p.send(map[string]any{"jsonrpc": "2.0", "method": methodCancelRequest, "params": map[string]any{"requestId": "prompt-7", "_meta": map[string]any{"k": "v"}}})
	if c := p.next(); c["method"] != methodCancelRequest || dig(c, "params", "requestId") != prompt["id"] || dig(c, "params", "_meta", "k") != "v" {
		t.Fatalf("cancel toward the successor: %v (forwarded as %v)", c, prompt["id"])
	}
}

// TestStatelessMalformed: envelopes the binding refuses are answered
// -32602 before anything reaches a session.
func TestStatelessMalformed(t *testing.T) {
	p, sid := startStateless(t, &Options{})
	for i, params := range []any{
		map[string]any{"serverId": sid, "method": "tools/list"},
		map[string]any{"serverId": sid, "requestId": "r", "method": ""},
		map[string]any{"serverId": sid, "requestId": []any{}, "method": "tools/list"},
		map[string]any{"serverId": 1, "requestId": "r", "method": "tools/list"},
		map[string]any{"serverId": sid, "requestId": "r", "method": "tools/list", "params": "x"},
		[]any{sid},
		nil,
	} {
		if r := p.agentCall(fmt.Sprint("m-", i), methodMCPMessage, params); errCode(r) != jsonrpc.CodeInvalidParams {
			t.Errorf("%v: %v", params, r)
		}
	}
}

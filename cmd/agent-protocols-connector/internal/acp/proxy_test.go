package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/internal/logtest"
)

// peer plays the conductor around an in-process proxy (both its client
// side and the agent behind it) over pipes.
type peer struct {
	t    *testing.T
	rev  Revision
	w    io.WriteCloser
	out  chan map[string]any
	done chan error
}

type pingArgs struct{}

// testServer is a small MCP server: one tool that pings the client (a
// server→client request over mcp/message), one that blocks until
// cancelled, and one that reports progress.
func testServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ping_client"}, func(ctx context.Context, req *mcp.CallToolRequest, _ pingArgs) (*mcp.CallToolResult, any, error) {
		if err := req.Session.Ping(ctx, nil); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ pingArgs) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, _ pingArgs) (*mcp.CallToolResult, any, error) {
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Message: "half"}); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	return s
}

func startProxy(t *testing.T, o *Options) *peer {
	t.Helper()
	if o.Server == nil {
		o.Server = testServer()
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &peer{t: t, w: inW, out: make(chan map[string]any, 256), done: make(chan error, 1)}
	go func() {
		p.done <- Serve(context.Background(), inR, outW, o)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("proxy wrote non-JSON %q", sc.Text())
				continue
			}
			p.out <- m
		}
		close(p.out)
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case err := <-p.done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not end at EOF")
		}
	})
	return p
}

func (p *peer) send(v any) {
	p.t.Helper()
	b, _ := json.Marshal(v)
	p.sendRaw(string(b))
}

func (p *peer) sendRaw(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.w, s+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

func (p *peer) next() map[string]any {
	p.t.Helper()
	select {
	case m, ok := <-p.out:
		if !ok {
			p.t.Fatal("proxy output ended")
		}
		return m
	case <-time.After(10 * time.Second):
		p.t.Fatal("no message from the proxy")
		return nil
	}
}

func dig(v any, path ...string) any {
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func wrapped(id any, method string, params any) map[string]any {
	return wrappedAs(Connected, id, method, params)
}

// wrappedAs is one message from the agent in rev's successor wrapper.
func wrappedAs(rev Revision, id any, method string, params any) map[string]any {
	m := map[string]any{"jsonrpc": "2.0", "method": rev.ProxySuccessor(), "params": map[string]any{"method": method, "params": params}}
	if id != nil {
		m["id"] = id
	}
	return m
}

// initialize runs _proxy/initialize with the agent advertising acp.
func (p *peer) initialize(acp bool) { p.initializeAs(Connected, acp) }

// initializeAs runs rev's proxy initialize with the agent advertising acp.
func (p *peer) initializeAs(rev Revision, acp bool) {
	p.t.Helper()
	p.rev = rev
	p.send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": rev.ProxyInitialize(), "params": map[string]any{"protocolVersion": 1}})
	fwd := p.next()
	p.send(map[string]any{"jsonrpc": "2.0", "id": fwd["id"], "result": map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{"mcpCapabilities": map[string]any{"acp": acp}}}})
	if r := p.next(); r["id"] != float64(1) {
		p.t.Fatalf("initialize answer %v", r)
	}
}

// session runs session/new and returns this proxy's server id.
func (p *peer) session(id int, servers ...any) string {
	p.t.Helper()
	if servers == nil {
		servers = []any{}
	}
	p.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "session/new", "params": map[string]any{"cwd": "/", "mcpServers": servers}})
	fwd := p.next()
	list, _ := dig(fwd, "params", "params", "mcpServers").([]any)
	p.send(map[string]any{"jsonrpc": "2.0", "id": fwd["id"], "result": map[string]any{"sessionId": "s"}})
	p.next()
	for _, s := range list {
		if dig(s, "name") == "agent-protocols" {
			return dig(s, "serverId").(string)
		}
	}
	return ""
}

func (p *peer) agentCall(id any, method string, params any) map[string]any {
	p.t.Helper()
	p.send(wrappedAs(p.rev, id, method, params))
	for {
		m := p.next()
		if m["id"] == id && m["method"] == nil {
			return m
		}
		p.t.Fatalf("unexpected %v while waiting for %v", m, id)
	}
}

func errCode(m map[string]any) int {
	c, _ := dig(m, "error", "code").(float64)
	return int(c)
}

// mcpInit runs the inner MCP initialize handshake on connection cid.
func (p *peer) mcpInit(cid string) {
	p.t.Helper()
	r := p.agentCall("init-"+cid, methodMCPMessage, map[string]any{"connectionId": cid, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "c", "version": "1"},
	}})
	if dig(r, "result", "serverInfo", "name") != "t" {
		p.t.Fatalf("MCP initialize: %v", r)
	}
	p.send(wrapped(nil, methodMCPMessage, map[string]any{"connectionId": cid, "method": "notifications/initialized"}))
}

func (p *peer) connect(sid string) string {
	p.t.Helper()
	r := p.agentCall("c-"+sid+fmt.Sprint(time.Now().UnixNano()), methodMCPConnect, map[string]any{"serverId": sid})
	cid, _ := dig(r, "result", "connectionId").(string)
	if cid == "" {
		p.t.Fatalf("mcp/connect: %v", r)
	}
	return cid
}

// TestServerToAgentRequest: a request the MCP server sends (ping) goes
// to the agent as a wrapped mcp/message request, and the agent's answer
// returns to the server; the outer tools/call answer carries the inner
// result.
func TestServerToAgentRequest(t *testing.T) {
	p := startProxy(t, &Options{})
	p.initialize(true)
	cid := p.connect(p.session(2))
	p.mcpInit(cid)
	p.send(wrapped("call-1", methodMCPMessage, map[string]any{"connectionId": cid, "method": "tools/call", "params": map[string]any{"name": "ping_client", "arguments": map[string]any{}}}))
	ping := p.next()
	if ping["method"] != Connected.ProxySuccessor() || dig(ping, "params", "method") != methodMCPMessage ||
		dig(ping, "params", "params", "method") != "ping" || dig(ping, "params", "params", "connectionId") != cid || ping["id"] == nil {
		t.Fatalf("server ping: %v", ping)
	}
	p.send(map[string]any{"jsonrpc": "2.0", "id": ping["id"], "result": map[string]any{}})
	r := p.next()
	if r["id"] != "call-1" || dig(r, "result", "isError") == true {
		t.Fatalf("tools/call answer: %v", r)
	}
}

// TestDisconnectAnswersOpenRequests: a request still open when its
// connection is closed is answered with an error, not left hanging.
func TestDisconnectAnswersOpenRequests(t *testing.T) {
	p := startProxy(t, &Options{})
	p.initialize(true)
	cid := p.connect(p.session(2))
	p.mcpInit(cid)
	p.send(wrapped("blocked", methodMCPMessage, map[string]any{"connectionId": cid, "method": "tools/call", "params": map[string]any{"name": "block", "arguments": map[string]any{}}}))
	p.send(wrapped("disc", methodMCPDisconnect, map[string]any{"connectionId": cid}))
	got := map[any]map[string]any{}
	for len(got) < 2 {
		m := p.next()
		got[m["id"]] = m
	}
	if errCode(got["blocked"]) == 0 {
		t.Fatalf("open request: %v", got["blocked"])
	}
	if r := got["disc"]; r["error"] != nil || fmt.Sprint(r["result"]) != "map[]" {
		t.Fatalf("disconnect: %v", r)
	}
}

// TestRevisionChosenByInitialize: the conductor's proxy initialize fixes
// the revision for the connection: the inner initialize goes out in that
// revision's wrapper and the agent's own result comes back (its
// protocolVersion kept); afterwards the other revision's proxy methods,
// unknown proxy methods and a plain initialize are answered with errors,
// never forwarded. Before any proxy initialize nothing is forwarded.
func TestRevisionChosenByInitialize(t *testing.T) {
	for _, rev := range []Revision{Connected, Stateless} {
		t.Run(rev.ProxyInitialize(), func(t *testing.T) {
			other := Connected
			if rev == Connected {
				other = Stateless
			}
			p := startProxy(t, &Options{})
			p.send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": map[string]any{"cwd": "/", "mcpServers": []any{}}})
			if m := p.next(); m["id"] != float64(1) || errCode(m) != jsonrpc.CodeInvalidRequest {
				t.Fatalf("session/new before the proxy initialize: %v", m)
			}
			p.send(map[string]any{"jsonrpc": "2.0", "id": 0, "method": rev.ProxySuccessor(), "params": map[string]any{"method": "session/list"}})
			if m := p.next(); m["id"] != float64(0) || errCode(m) != jsonrpc.CodeInvalidRequest {
				t.Fatalf("%s before the proxy initialize: %v", rev.ProxySuccessor(), m)
			}
			p.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": rev.ProxyInitialize(), "params": map[string]any{"protocolVersion": 1}})
			fwd := p.next()
			if fwd["method"] != rev.ProxySuccessor() || dig(fwd, "params", "method") != "initialize" || dig(fwd, "params", "params", "protocolVersion") != float64(1) {
				t.Fatalf("inner initialize: %v", fwd)
			}
			result := map[string]any{"protocolVersion": 7, "agentCapabilities": map[string]any{"mcpCapabilities": map[string]any{"acp": true}}, "agentInfo": map[string]any{"name": "a"}}
			p.send(map[string]any{"jsonrpc": "2.0", "id": fwd["id"], "result": result})
			if m := p.next(); m["id"] != float64(2) || fmt.Sprint(m["result"]) != fmt.Sprint(map[string]any{"protocolVersion": float64(7), "agentCapabilities": map[string]any{"mcpCapabilities": map[string]any{"acp": true}}, "agentInfo": map[string]any{"name": "a"}}) {
				t.Fatalf("proxy initialize answer: %v", m)
			}
			for i, method := range []string{other.ProxyInitialize(), other.ProxySuccessor(), "proxy/unknown", "_proxy/unknown"} {
				id := 10 + i
				p.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": map[string]any{"method": "session/list", "params": map[string]any{}}})
				if m := p.next(); m["id"] != float64(id) || errCode(m) != jsonrpc.CodeMethodNotFound {
					t.Fatalf("%s under %s: %v", method, rev, m)
				}
			}
			// A proxy method inside the wrapper is not traffic for the client either.
			p.send(map[string]any{"jsonrpc": "2.0", "id": 20, "method": rev.ProxySuccessor(), "params": map[string]any{"method": other.ProxyInitialize(), "params": map[string]any{}}})
			if m := p.next(); m["id"] != float64(20) || errCode(m) != jsonrpc.CodeMethodNotFound {
				t.Fatalf("wrapped %s: %v", other.ProxyInitialize(), m)
			}
			p.send(map[string]any{"jsonrpc": "2.0", "id": 21, "method": "initialize", "params": map[string]any{"protocolVersion": 1}})
			if m := p.next(); m["id"] != float64(21) || errCode(m) != jsonrpc.CodeInvalidRequest {
				t.Fatalf("plain initialize: %v", m)
			}
			// Ordinary traffic now goes out in the chosen wrapper.
			p.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": "s"}})
			if m := p.next(); m["method"] != rev.ProxySuccessor() || dig(m, "params", "method") != "session/cancel" || m["id"] != nil {
				t.Fatalf("session/cancel: %v", m)
			}
		})
	}
}

// TestHostileInput: an over-long line is skipped with a parse error and
// the stream stays usable; connections and in-flight requests are
// bounded; non-objects and wrong shapes are refused with JSON-RPC errors.
// What the proxy drops is noted through Options.Logger.
func TestHostileInput(t *testing.T) {
	log, logged := logtest.New()
	p := startProxy(t, &Options{MaxMessageBytes: 1024, MaxConnections: 2, MaxPending: 4, Logger: log})
	p.sendRaw(`{"jsonrpc":"2.0","id":1,"method":"x","params":"` + strings.Repeat("a", 100_000) + `"}`)
	if m := p.next(); errCode(m) != jsonrpc.CodeParseError || m["id"] != nil {
		t.Fatalf("over-long line: %v", m)
	}
	if r, ok := logged.Find("longer than the limit"); !ok || r.String("max_bytes") != "1024" {
		t.Fatalf("over-long line not logged: %v", logged.Records())
	}
	p.initialize(true)
	// A message that is not I-JSON is refused as a whole, before any of
	// it is relayed (found by FuzzServe: re-encoding its params failed).
	for _, bad := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"r","params":{"a":1,"a":2}}`,
		`{"jsonrpc":"2.0","id":7,"method":"r","params":{"a":"\ud800"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"r","params":{"b":{"a":1,"a":2}}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"r\",\"params\":{\"a\":\"\xff\"}}",
	} {
		p.sendRaw(bad)
		if m := p.next(); errCode(m) != jsonrpc.CodeInvalidParams || m["id"] != float64(7) {
			t.Fatalf("%s: %v", bad, m)
		}
	}
	sid := p.session(2)
	p.connect(sid)
	p.connect(sid)
	if r := p.agentCall("third", methodMCPConnect, map[string]any{"serverId": sid}); errCode(r) == 0 {
		t.Fatalf("third connection: %v", r)
	}
	// Four forwarded requests the agent never answers fill MaxPending.
	for i := 0; i < 4; i++ {
		p.send(map[string]any{"jsonrpc": "2.0", "id": 100 + i, "method": "session/prompt", "params": map[string]any{"sessionId": "s", "prompt": []any{}}})
		p.next()
	}
	p.send(map[string]any{"jsonrpc": "2.0", "id": 200, "method": "session/prompt", "params": map[string]any{"sessionId": "s", "prompt": []any{}}})
	if m := p.next(); m["id"] != float64(200) || errCode(m) != jsonrpc.CodeInternalError {
		t.Fatalf("over MaxPending: %v", m)
	}
	// A response with neither result nor error answers the forwarded
	// request (the first prompt, forwarded as id 3) with an error.
	p.sendRaw(`{"jsonrpc":"2.0","id":3}`)
	if m := p.next(); m["id"] != float64(100) || errCode(m) != jsonrpc.CodeInternalError {
		t.Fatalf("empty response: %v", m)
	}
	for _, line := range []string{`[1,2]`, `"x"`, `{"jsonrpc":"2.0","id":5,"method":""}`, `{"jsonrpc":"2.0","id":4,"method":"_proxy/successor","params":[1]}`} {
		p.sendRaw(line)
		if m := p.next(); errCode(m) == 0 {
			t.Fatalf("%s: %v", line, m)
		}
	}
	// A response to nothing is dropped (no answer to an answer).
	p.send(map[string]any{"jsonrpc": "2.0", "id": 999999, "result": map[string]any{}})
	p.send(wrapped("after", methodMCPConnect, map[string]any{"serverId": "unknown"}))
	if m := p.next(); m["id"] != "after" || errCode(m) != jsonrpc.CodeInvalidParams {
		t.Fatalf("after the stray response: %v", m)
	}
}

// TestUpstreamServersPassThrough: an acp server declared by a component
// before this one (already in the client's mcpServers) is routed past
// this proxy: its mcp/connect, mcp/message and mcp/disconnect go on to
// the client unwrapped, and the answers come back.
func TestUpstreamServersPassThrough(t *testing.T) {
	p := startProxy(t, &Options{})
	p.initialize(true)
	p.session(2, map[string]any{"type": "acp", "name": "other", "serverId": "other:1"})
	p.send(wrapped("up-1", methodMCPConnect, map[string]any{"serverId": "other:1"}))
	fwd := p.next()
	if fwd["method"] != methodMCPConnect || dig(fwd, "params", "serverId") != "other:1" {
		t.Fatalf("upstream mcp/connect: %v", fwd)
	}
	p.send(map[string]any{"jsonrpc": "2.0", "id": fwd["id"], "result": map[string]any{"connectionId": "other-conn:1"}})
	if r := p.next(); r["id"] != "up-1" || dig(r, "result", "connectionId") != "other-conn:1" {
		t.Fatalf("upstream mcp/connect answer: %v", r)
	}
	p.send(wrapped(nil, methodMCPMessage, map[string]any{"connectionId": "other-conn:1", "method": "notifications/initialized"}))
	if m := p.next(); m["method"] != methodMCPMessage || m["id"] != nil {
		t.Fatalf("upstream mcp/message: %v", m)
	}
}

// TestCancelRequestTranslated: $/cancel_request from the client names the
// request by the client's id; the proxy forwards it under the id it gave
// the forwarded request.
func TestCancelRequestTranslated(t *testing.T) {
	p := startProxy(t, &Options{})
	p.initialize(true)
	p.send(map[string]any{"jsonrpc": "2.0", "id": "prompt-7", "method": "session/prompt", "params": map[string]any{"sessionId": "s", "prompt": []any{}}})
	fwd := p.next()
	p.send(map[string]any{"jsonrpc": "2.0", "method": methodCancelRequest, "params": map[string]any{"requestId": "prompt-7"}})
	c := p.next()
	if dig(c, "params", "method") != methodCancelRequest || dig(c, "params", "params", "requestId") != fwd["id"] {
		t.Fatalf("cancel: %v (forwarded as %v)", c, fwd["id"])
	}
	// A request from the agent forwarded to the client is cancelled on
	// the client's hop under the proxy's id, unwrapped.
	p.send(wrapped("perm-1", "session/request_permission", map[string]any{"sessionId": "s"}))
	toClient := p.next()
	p.send(map[string]any{"jsonrpc": "2.0", "method": methodCancelRequest, "params": map[string]any{"requestId": "perm-1"}})
	if c := p.next(); c["method"] != methodCancelRequest || dig(c, "params", "requestId") != toClient["id"] {
		t.Fatalf("cancel toward the client: %v (forwarded as %v)", c, toClient["id"])
	}
	// A tunnelled cancellation from the successor names its own hop's id:
	// dropped, not passed on.
	p.send(wrapped(nil, methodCancelRequest, map[string]any{"requestId": 1}))
	p.send(map[string]any{"jsonrpc": "2.0", "id": 77, "method": "session/list", "params": map[string]any{}})
	if m := p.next(); dig(m, "params", "method") != "session/list" {
		t.Fatalf("a tunnelled cancel was passed on: %v", m)
	}
}

func TestServeNeedsServer(t *testing.T) {
	if err := Serve(context.Background(), strings.NewReader(""), io.Discard, nil); err == nil {
		t.Fatal("Serve without a server")
	}
	var je *jsonrpc.Error
	if !errors.As(error(errBusy), &je) {
		t.Fatal("errBusy is not a JSON-RPC error")
	}
}

// TestFailedSessionServerGone: a server declared in a session/new that
// the agent refused was never visible; mcp/connect to it is refused.
func TestFailedSessionServerGone(t *testing.T) {
	p := startProxy(t, &Options{})
	p.initialize(true)
	p.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": map[string]any{"cwd": "/", "mcpServers": []any{}}})
	fwd := p.next()
	list, _ := dig(fwd, "params", "params", "mcpServers").([]any)
	if len(list) != 1 {
		t.Fatalf("mcpServers %v", list)
	}
	sid := dig(list[0], "serverId").(string)
	p.send(map[string]any{"jsonrpc": "2.0", "id": fwd["id"], "error": map[string]any{"code": -32602, "message": "no"}})
	if r := p.next(); r["id"] != float64(2) || errCode(r) != -32602 {
		t.Fatalf("session/new error not passed on: %v", r)
	}
	if r := p.agentCall("late", methodMCPConnect, map[string]any{"serverId": sid}); errCode(r) != jsonrpc.CodeInvalidParams {
		t.Fatalf("mcp/connect to a refused session's server: %v", r)
	}
}

// TestServeEndsWithContext: the end of ctx ends Serve even while its
// input is silent (a conductor that neither writes nor closes).
func TestServeEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	defer w.Close()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, r, io.Discard, &Options{Server: testServer()}) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve ignored the end of its context")
	}
}

// TestCancelMCPRequest: $/cancel_request naming an mcp/message request
// cancels the inner MCP call (notifications/cancelled: the blocked tool's
// context ends) and the outer request is answered -32800 once.
func TestCancelMCPRequest(t *testing.T) {
	p := startProxy(t, &Options{})
	p.initialize(true)
	cid := p.connect(p.session(2))
	p.mcpInit(cid)
	p.send(wrapped("blocked", methodMCPMessage, map[string]any{"connectionId": cid, "method": "tools/call", "params": map[string]any{"name": "block", "arguments": map[string]any{}}}))
	p.send(map[string]any{"jsonrpc": "2.0", "method": methodCancelRequest, "params": map[string]any{"requestId": "blocked"}})
	if m := p.next(); m["id"] != "blocked" || errCode(m) != -32800 {
		t.Fatalf("cancelled request: %v", m)
	}
	// The connection goes on; no second answer to "blocked" arrives first.
	if r := p.agentCall("after", methodMCPMessage, map[string]any{"connectionId": cid, "method": "tools/list"}); dig(r, "result", "tools") == nil {
		t.Fatalf("after cancel: %v", r)
	}
}

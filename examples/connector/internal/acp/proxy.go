package acp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configures [Serve]; zero values mean defaults.
type Options struct {
	// Server is the MCP server every mcp/connect connection is a session
	// of (required): the same server the stdio and HTTP transports serve.
	Server *mcp.Server
	// ServerName is the declared server's name (default "agent-protocols").
	ServerName string
	// Revision is the wire-name table (nil: [V1]).
	Revision *Revision
	// Log receives one-line notes for the operator (standard error);
	// nil discards them. Never the protocol channel.
	Log io.Writer
	// MaxMessageBytes bounds one outer line (default 4 MiB, like one
	// stdio MCP frame); a longer line is skipped with a parse error.
	MaxMessageBytes int
	// MaxConnections bounds the open MCP-over-ACP connections (default 32).
	MaxConnections int
	// MaxPending bounds the requests the proxy has sent and awaits
	// answers to (default 1024); more are refused, not queued.
	MaxPending int
	// MaxQueued bounds the inner messages waiting for one connection's MCP
	// session to read them (default 64); more are refused.
	MaxQueued int
}

// Errors the proxy answers with (JSON-RPC error objects).
var (
	errNotProxy   = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "connector acp runs as a proxy component: it expects _proxy/initialize from a conductor, not initialize"}
	errServeEnded = errors.New("acp: Serve has returned")
	errBusy       = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "too many requests in flight"}
)

func invalidParams(format string, a ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, a...)}
}

// Serve runs one proxy component on the ACP connection r/w (the
// conductor's pipes: newline-delimited JSON-RPC 2.0) until r ends or ctx
// is done. It returns nil at the end of r.
//
// Messages from the conductor without the successor wrapper come from the
// client and are forwarded to the successor wrapped; messages wrapped in
// _proxy/successor come from the successor (the agent) and are either
// MCP-over-ACP traffic for this component's server or forwarded toward
// the client unwrapped. Requests the proxy forwards get its own ids; the
// answers are mapped back.
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts *Options) error {
	if opts == nil || opts.Server == nil {
		return errors.New("acp: Options.Server is required")
	}
	p := newProxy(ctx, w, opts)
	defer p.shutdown()
	// The reader runs apart so that the end of ctx ends Serve even while a
	// read blocks (stdin cannot be interrupted).
	type result struct {
		line    []byte
		tooLong bool
		err     error
	}
	lines := make(chan result)
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, tooLong, err := readLine(br, p.maxLine)
			select {
			case lines <- result{line, tooLong, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		var l result
		select {
		case <-ctx.Done():
			return nil
		case l = <-lines:
		}
		if l.tooLong {
			p.note("dropped an outer message longer than %d bytes", p.maxLine)
			p.respondError(jsonrpc.ID{}, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: fmt.Sprintf("message longer than %d bytes", p.maxLine)})
		} else if len(bytes.TrimSpace(l.line)) > 0 {
			p.dispatch(l.line)
		}
		if l.err != nil {
			if errors.Is(l.err, io.EOF) {
				return p.writeErr()
			}
			return l.err
		}
		if err := p.writeErr(); err != nil {
			return err
		}
	}
}

// readLine reads one newline-terminated line of at most max bytes. A
// longer line is consumed to its end and reported as tooLong, so memory
// stays bounded and the stream stays in sync.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(frag) > max+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return buf, tooLong, err
	}
}

// pendingFunc receives the answer to a request the proxy sent.
type pendingFunc func(*jsonrpc.Response)

// proxy is one proxy component's state. Its methods are safe for
// concurrent use: the read loop dispatches, MCP sessions write.
type proxy struct {
	ctx  context.Context
	rev  *Revision
	srv  *mcp.Server
	name string
	log  io.Writer

	maxLine, maxConns, maxPending, maxQueued int

	wmu  sync.Mutex
	w    io.Writer
	werr error

	mu       sync.Mutex
	nextID   int64
	pending  map[int64]pendingFunc
	inbound  map[string]cancelTarget // open requests received (encoded id) → where they went, for $/cancel_request
	agentACP bool
	prefix   string // random, so ids never collide with other components'
	nServers int64
	servers  map[string]bool // declared by this proxy and current
	nConns   int64
	conns    map[string]*mcpConn
	upServer map[string]bool // acp servers declared by components before this one
	upConn   map[string]bool // their connections, learned from forwarded mcp/connect answers
}

const maxUpstream = 4096

func newProxy(ctx context.Context, w io.Writer, o *Options) *proxy {
	p := &proxy{
		ctx: ctx, rev: o.Revision, srv: o.Server, name: o.ServerName, log: o.Log, w: w,
		maxLine: o.MaxMessageBytes, maxConns: o.MaxConnections, maxPending: o.MaxPending, maxQueued: o.MaxQueued,
		pending: map[int64]pendingFunc{}, inbound: map[string]cancelTarget{},
		servers: map[string]bool{}, conns: map[string]*mcpConn{},
		upServer: map[string]bool{}, upConn: map[string]bool{},
	}
	if p.rev == nil {
		p.rev = &V1
	}
	if p.name == "" {
		p.name = "agent-protocols"
	}
	if p.log == nil {
		p.log = io.Discard
	}
	if p.maxLine <= 0 {
		p.maxLine = mcp.DefaultMaxRequestBodyBytes
	}
	if p.maxConns <= 0 {
		p.maxConns = 32
	}
	if p.maxPending <= 0 {
		p.maxPending = 1024
	}
	if p.maxQueued <= 0 {
		p.maxQueued = 64
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	p.prefix = p.name + ":" + hex.EncodeToString(rnd[:])
	return p
}

func (p *proxy) note(format string, a ...any) {
	fmt.Fprintf(p.log, "connector acp: "+format+"\n", a...)
}

// shutdown closes every MCP connection (their sessions end).
func (p *proxy) shutdown() {
	p.mu.Lock()
	cs := make([]*mcpConn, 0, len(p.conns))
	for _, c := range p.conns {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
	// Nothing is written after Serve returns.
	p.wmu.Lock()
	if p.werr == nil {
		p.werr = errServeEnded
	}
	p.wmu.Unlock()
}

// --- writing ---------------------------------------------------------------

func (p *proxy) writeErr() error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.werr
}

func (p *proxy) writeLine(b []byte) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.werr != nil {
		return
	}
	_, p.werr = p.w.Write(append(b, '\n'))
}

func (p *proxy) write(m jsonrpc.Message) {
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		p.note("encoding: %v", err)
		return
	}
	p.writeLine(b)
}

// respond answers request id with result, or with err when it is not nil.
func (p *proxy) respond(id jsonrpc.ID, result json.RawMessage, err error) {
	if err != nil {
		p.respondError(id, err)
		return
	}
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	p.write(&jsonrpc.Response{ID: id, Result: result})
}

// respondError answers with an error object. Without a usable id (a line
// that is not even JSON-RPC) the id is null, as JSON-RPC 2.0 requires.
func (p *proxy) respondError(id jsonrpc.ID, err error) {
	we, ok := err.(*jsonrpc.Error)
	if !ok {
		if !errors.As(err, &we) {
			we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
	}
	if id.IsValid() {
		p.write(&jsonrpc.Response{ID: id, Error: we})
		return
	}
	b, merr := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      *int           `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{JSONRPC: "2.0", Error: we})
	if merr == nil {
		p.writeLine(b)
	}
}

// request sends a request with a fresh id; onResp gets its answer.
func (p *proxy) request(method string, params json.RawMessage, onResp pendingFunc) (int64, error) {
	p.mu.Lock()
	if len(p.pending) >= p.maxPending {
		p.mu.Unlock()
		return 0, errBusy
	}
	p.nextID++
	id := p.nextID
	p.pending[id] = onResp
	p.mu.Unlock()
	p.write(&jsonrpc.Request{ID: intID(id), Method: method, Params: params})
	return id, nil
}

func (p *proxy) notify(method string, params json.RawMessage) {
	p.write(&jsonrpc.Request{Method: method, Params: params})
}

// body builds a JSON object from member name → raw value (nil omitted).
func body(members map[string]json.RawMessage) json.RawMessage {
	for k, v := range members {
		if len(v) == 0 {
			delete(members, k)
		}
	}
	b, _ := json.Marshal(members)
	return b
}

func quote(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// wrap is the _proxy/successor body for one inner message.
func (p *proxy) wrap(method string, params json.RawMessage) json.RawMessage {
	return body(map[string]json.RawMessage{p.rev.Method: quote(method), p.rev.Params: params})
}

// toSuccessor sends one inner request to the successor; the answer goes
// to onResp unchanged (the inner result or error).
func (p *proxy) toSuccessor(method string, params json.RawMessage, onResp pendingFunc) (int64, error) {
	return p.request(p.rev.ProxySuccessor, p.wrap(method, params), onResp)
}

// --- reading ---------------------------------------------------------------

// dispatch handles one outer line.
func (p *proxy) dispatch(line []byte) {
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		p.respondError(salvageID(line), &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "not a JSON-RPC 2.0 message: " + clip(err.Error())})
		return
	}
	switch m := msg.(type) {
	case *jsonrpc.Response:
		p.answer(m)
	case *jsonrpc.Request:
		if m.Method == "" {
			p.refuse(m, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "empty method"})
			return
		}
		if m.Method == p.rev.ProxySuccessor {
			p.fromSuccessor(m)
			return
		}
		p.fromClient(m)
	}
}

// salvageID recovers the id of a line that is JSON but not valid
// JSON-RPC, so its error can still be correlated; else the zero ID.
func salvageID(line []byte) jsonrpc.ID {
	var v struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &v) != nil {
		return jsonrpc.ID{}
	}
	switch v.ID.(type) {
	case string, float64:
		id, err := jsonrpc.MakeID(v.ID)
		if err == nil {
			return id
		}
	}
	return jsonrpc.ID{}
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// refuse answers a request with err; a refused notification is noted.
func (p *proxy) refuse(m *jsonrpc.Request, err *jsonrpc.Error) {
	if m.IsCall() {
		p.respondError(m.ID, err)
		return
	}
	p.note("ignored notification %q: %s", clip(m.Method), err.Message)
}

// answer routes a response to the request the proxy sent.
func (p *proxy) answer(r *jsonrpc.Response) {
	n, ok := r.ID.Raw().(int64)
	p.mu.Lock()
	f := p.pending[n]
	delete(p.pending, n)
	p.mu.Unlock()
	if !ok || f == nil {
		p.note("ignored a response to unknown request id %v", r.ID.Raw())
		return
	}
	if r.Error == nil && len(r.Result) == 0 {
		r = &jsonrpc.Response{ID: r.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the peer answered with neither result nor error"}}
	}
	f(r)
}

func idKey(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return strconv.Quote(v)
	}
	return ""
}

// fromClient forwards a client→agent message to the successor.
func (p *proxy) fromClient(m *jsonrpc.Request) {
	rev := p.rev
	switch {
	case m.Method == rev.Initialize:
		p.refuse(m, errNotProxy)
		return
	case m.Method == rev.ProxyInitialize:
		if !m.IsCall() {
			p.refuse(m, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: m.Method + " is a request"})
			return
		}
		outer := m.ID
		if _, err := p.toSuccessor(rev.Initialize, m.Params, func(r *jsonrpc.Response) {
			if r.Error == nil {
				p.learnCapabilities(r.Result)
			}
			p.respond(outer, r.Result, r.Error)
		}); err != nil {
			p.respondError(outer, err)
		}
		return
	case m.Method == rev.CancelRequest && !m.IsCall():
		p.forwardCancel(m)
		return
	}
	params, sid := m.Params, ""
	if rev.isSessionSetup(m.Method) {
		params, sid = p.declare(m.Method, params)
	}
	if !m.IsCall() {
		p.notify(rev.ProxySuccessor, p.wrap(m.Method, params))
		return
	}
	outer, key := m.ID, idKey(m.ID)
	id, err := p.toSuccessor(m.Method, params, func(r *jsonrpc.Response) {
		p.mu.Lock()
		delete(p.inbound, key)
		if r.Error != nil && sid != "" {
			// No session came of it: its server was never visible.
			delete(p.servers, sid)
		}
		p.mu.Unlock()
		p.respond(outer, r.Result, r.Error)
	})
	if err != nil {
		p.respondError(outer, err)
		return
	}
	p.mu.Lock()
	p.inbound[key] = cancelTarget{id: id, wrapped: true}
	p.mu.Unlock()
}

// cancelTarget is where a request the proxy received went: forwarded
// under the proxy's id (to the successor when wrapped, else to the
// client), or delivered to an MCP connection under an inner id.
type cancelTarget struct {
	id      int64
	wrapped bool
	conn    *mcpConn
}

func (p *proxy) forget(key string) {
	p.mu.Lock()
	delete(p.inbound, key)
	p.mu.Unlock()
}

// forwardCancel follows a $/cancel_request, which names a request by its
// id on this hop: it is sent on under the id the proxy forwarded the
// request with (whoever answers it then answers the original), or, for a
// request on an MCP connection, becomes MCP's notifications/cancelled
// and the proxy answers the original with -32800 itself, as ACP requires
// an answer and MCP forbids one to a cancelled request. A cancellation of a request the proxy does not know
// (answered already, or never seen) is dropped.
func (p *proxy) forwardCancel(m *jsonrpc.Request) {
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil || params == nil {
		return
	}
	var rid any
	if json.Unmarshal(params[p.rev.RequestID], &rid) != nil {
		return
	}
	id, err := jsonrpc.MakeID(rid)
	if err != nil || !id.IsValid() {
		return
	}
	p.mu.Lock()
	to, ok := p.inbound[idKey(id)]
	p.mu.Unlock()
	switch {
	case !ok:
	case to.conn != nil:
		to.conn.cancel(to.id, m.Method)
	default:
		params[p.rev.RequestID] = json.RawMessage(strconv.FormatInt(to.id, 10))
		if to.wrapped {
			p.notify(p.rev.ProxySuccessor, p.wrap(m.Method, body(params)))
		} else {
			p.notify(m.Method, body(params))
		}
	}
}

// learnCapabilities reads agentCapabilities.mcpCapabilities.acp from the
// successor's InitializeResponse.
func (p *proxy) learnCapabilities(result json.RawMessage) {
	var res map[string]json.RawMessage
	var caps map[string]json.RawMessage
	var mcpCaps map[string]json.RawMessage
	var acp bool
	_ = json.Unmarshal(result, &res)
	_ = json.Unmarshal(res[p.rev.AgentCapabilities], &caps)
	_ = json.Unmarshal(caps[p.rev.MCPCapabilities], &mcpCaps)
	_ = json.Unmarshal(mcpCaps[p.rev.ACPCapability], &acp)
	p.mu.Lock()
	p.agentACP = acp
	p.mu.Unlock()
	if !acp {
		p.note("the agent does not advertise %s.%s.%s; sessions are forwarded without the %s MCP server (run `connector serve` as a stdio MCP server instead, or put an MCP-over-ACP bridge before the agent)",
			p.rev.AgentCapabilities, p.rev.MCPCapabilities, p.rev.ACPCapability, p.name)
	}
}

// declare adds this proxy's server to a session setup request's
// mcpServers, when the agent consumes ACP-transport servers; it records
// the acp servers earlier components declared, to route their
// mcp/connect past this proxy. Params it cannot read pass unchanged: the
// agent judges them.
func (p *proxy) declare(method string, params json.RawMessage) (json.RawMessage, string) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) != nil || obj == nil {
		p.note("%s: params are not an object; forwarded unchanged", method)
		return params, ""
	}
	var servers []json.RawMessage
	if raw, ok := obj[p.rev.MCPServers]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &servers) != nil {
			p.note("%s: %s is not an array; forwarded unchanged", method, p.rev.MCPServers)
			return params, ""
		}
	}
	p.mu.Lock()
	for _, s := range servers {
		var decl map[string]json.RawMessage
		var typ, sid string
		if json.Unmarshal(s, &decl) == nil && json.Unmarshal(decl[p.rev.ServerType], &typ) == nil && typ == p.rev.ServerTypeACP &&
			json.Unmarshal(decl[p.rev.ServerID], &sid) == nil && len(p.upServer) < maxUpstream {
			p.upServer[sid] = true
		}
	}
	acp := p.agentACP
	var sid string
	if acp {
		p.nServers++
		sid = p.prefix + ":server:" + strconv.FormatInt(p.nServers, 10)
		p.servers[sid] = true
	}
	p.mu.Unlock()
	if !acp {
		p.note("%s: the agent does not consume ACP-transport MCP servers; forwarded unchanged, without %s", method, p.name)
		return params, ""
	}
	servers = append(servers, body(map[string]json.RawMessage{
		p.rev.ServerType: quote(p.rev.ServerTypeACP),
		p.rev.ServerName: quote(p.name),
		p.rev.ServerID:   quote(sid),
	}))
	list, _ := json.Marshal(servers)
	obj[p.rev.MCPServers] = list
	return body(obj), sid
}

// successorBody is a decoded _proxy/successor body.
type successorBody struct {
	method string
	params json.RawMessage
}

// unwrap decodes a _proxy/successor body: an object with a string method
// and optional object-or-null params.
func (p *proxy) unwrap(raw json.RawMessage) (successorBody, *jsonrpc.Error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return successorBody{}, invalidParams("%s: params must be an object", p.rev.ProxySuccessor)
	}
	var b successorBody
	if json.Unmarshal(obj[p.rev.Method], &b.method) != nil || b.method == "" {
		return successorBody{}, invalidParams("%s: %q must be a non-empty string", p.rev.ProxySuccessor, p.rev.Method)
	}
	b.params = obj[p.rev.Params]
	return b, nil
}

// fromSuccessor handles a message the successor sent toward the client.
func (p *proxy) fromSuccessor(m *jsonrpc.Request) {
	b, jerr := p.unwrap(m.Params)
	if jerr != nil {
		p.refuse(m, jerr)
		return
	}
	switch b.method {
	case p.rev.MCPConnect, p.rev.MCPMessage, p.rev.MCPDisconnect:
		if p.mcpOverACP(m, b) {
			return
		}
	}
	// Toward the client, unwrapped.
	if !m.IsCall() {
		if b.method == p.rev.CancelRequest {
			// Its requestId belongs to the successor's own hop, which the
			// conductor cancels hop by hop itself (as the Rust conductor
			// does); tunnelled, it would name the wrong request.
			p.note("dropped a %s from the successor (cancellation is per hop)", b.method)
			return
		}
		p.notify(b.method, b.params)
		return
	}
	outer, key := m.ID, idKey(m.ID)
	connect := b.method == p.rev.MCPConnect
	id, err := p.request(b.method, b.params, func(r *jsonrpc.Response) {
		p.forget(key)
		if connect && r.Error == nil {
			p.learnUpstreamConn(r.Result)
		}
		p.respond(outer, r.Result, r.Error)
	})
	if err != nil {
		p.respondError(outer, err)
		return
	}
	p.mu.Lock()
	p.inbound[key] = cancelTarget{id: id}
	p.mu.Unlock()
}

func (p *proxy) learnUpstreamConn(result json.RawMessage) {
	var res map[string]json.RawMessage
	var cid string
	if json.Unmarshal(result, &res) != nil || json.Unmarshal(res[p.rev.ConnectionID], &cid) != nil {
		return
	}
	p.mu.Lock()
	if len(p.upConn) < maxUpstream {
		p.upConn[cid] = true
	}
	p.mu.Unlock()
}

// mcpOverACP handles mcp/connect, mcp/message and mcp/disconnect from the
// agent. It returns false when the message addresses a server or
// connection of a component before this one, to be forwarded.
func (p *proxy) mcpOverACP(m *jsonrpc.Request, b successorBody) bool {
	rev := p.rev
	var obj map[string]json.RawMessage
	if json.Unmarshal(b.params, &obj) != nil || obj == nil {
		p.refuse(m, invalidParams("%s: params must be an object", b.method))
		return true
	}
	if b.method == rev.MCPConnect {
		var sid string
		if json.Unmarshal(obj[rev.ServerID], &sid) != nil {
			p.refuse(m, invalidParams("%s: %q must be a string", b.method, rev.ServerID))
			return true
		}
		p.mu.Lock()
		ours, up := p.servers[sid], p.upServer[sid]
		p.mu.Unlock()
		if !ours && up {
			return false
		}
		if !m.IsCall() {
			p.refuse(m, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: b.method + " is a request"})
			return true
		}
		if !ours {
			p.respondError(m.ID, invalidParams("%s: unknown %s %q", b.method, rev.ServerID, clip(sid)))
			return true
		}
		cid, err := p.connect()
		if err != nil {
			p.respondError(m.ID, err)
			return true
		}
		p.respond(m.ID, body(map[string]json.RawMessage{rev.ConnectionID: quote(cid)}), nil)
		return true
	}
	var cid string
	if json.Unmarshal(obj[rev.ConnectionID], &cid) != nil {
		p.refuse(m, invalidParams("%s: %q must be a string", b.method, rev.ConnectionID))
		return true
	}
	p.mu.Lock()
	c, up := p.conns[cid], p.upConn[cid]
	p.mu.Unlock()
	if c == nil && up {
		if b.method == rev.MCPDisconnect {
			p.mu.Lock()
			delete(p.upConn, cid)
			p.mu.Unlock()
		}
		return false
	}
	if c == nil {
		what := "unknown"
		if strings.HasPrefix(cid, p.prefix+":") {
			what = "closed"
		}
		p.refuse(m, invalidParams("%s: %s %s %q", b.method, what, rev.ConnectionID, clip(cid)))
		return true
	}
	if b.method == rev.MCPDisconnect {
		if !m.IsCall() {
			p.refuse(m, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: b.method + " is a request"})
			return true
		}
		c.Close()
		p.respond(m.ID, json.RawMessage("{}"), nil)
		return true
	}
	// mcp/message: one inner MCP request or notification.
	var method string
	if json.Unmarshal(obj[rev.Method], &method) != nil || method == "" {
		p.refuse(m, invalidParams("%s: %q must be a non-empty string", b.method, rev.Method))
		return true
	}
	inner := obj[rev.Params]
	if t := bytes.TrimSpace(inner); len(t) > 0 && t[0] != '{' && string(t) != "null" {
		p.refuse(m, invalidParams("%s: inner %q must be an object or null", b.method, rev.Params))
		return true
	}
	if string(bytes.TrimSpace(inner)) == "null" {
		inner = nil
	}
	if err := c.deliverFromAgent(m, method, inner); err != nil {
		p.refuse(m, err)
	}
	return true
}

// connect opens one MCP-over-ACP connection: a new session of the MCP
// server over an in-process transport.
func (p *proxy) connect() (string, error) {
	p.mu.Lock()
	if len(p.conns) >= p.maxConns {
		p.mu.Unlock()
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("too many open MCP connections (%d)", p.maxConns)}
	}
	p.nConns++
	cid := p.prefix + ":connection:" + strconv.FormatInt(p.nConns, 10)
	c := newMCPConn(p, cid)
	p.conns[cid] = c
	p.mu.Unlock()
	if _, err := p.srv.Connect(p.ctx, c, nil); err != nil {
		c.Close()
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "starting the MCP session: " + err.Error()}
	}
	return cid, nil
}

func (p *proxy) dropConn(cid string) {
	p.mu.Lock()
	delete(p.conns, cid)
	p.mu.Unlock()
}

// intID is an integer JSON-RPC id (the jsonrpc package converts from the
// JSON decoding of a number).
func intID(n int64) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(float64(n))
	return id
}

package acp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/jsonl"
	"github.com/agentprotocols/go-sdk/internal/untrusted"
)

// Options configures [Serve]; zero values mean defaults.
type Options struct {
	// Server is the MCP server whose sessions the agent reaches (required):
	// the same server the stdio and HTTP transports serve.
	Server *mcp.Server
	// ServerName is the declared server's name (default "agent-protocols").
	ServerName string
	// Logger receives notes for the operator (what the proxy dropped or
	// forwarded unchanged, and why); nil discards them. Never the protocol
	// channel.
	Logger *slog.Logger
	// MaxMessageBytes bounds one outer line (default 4 MiB, like one
	// stdio MCP frame); a longer line is skipped with a parse error.
	MaxMessageBytes int
	// MaxConnections bounds the open MCP sessions (default 32): the
	// connections of the Connected revision, the served serverIds of the
	// Stateless one (where the least recently used idle session is closed
	// to make room).
	MaxConnections int
	// MaxPending bounds the requests the proxy has sent and awaits
	// answers to (default 1024); more are refused, not queued.
	MaxPending int
	// MaxQueued bounds the inner messages waiting for one MCP session to
	// read them (default 64); more are refused.
	MaxQueued int
	// MaxActive bounds the agent's requests open on one MCP session
	// (default 64, as @agentclientprotocol/sdk's provider); more are
	// refused.
	MaxActive int
}

// Errors the proxy answers with (JSON-RPC error objects).
var (
	errNotProxy      = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "connector acp runs as a proxy component: it expects _proxy/initialize or proxy/initialize from a conductor, not initialize"}
	errUninitialized = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "connector acp: no _proxy/initialize or proxy/initialize yet"}
	errServeEnded    = errors.New("acp: Serve has returned")
	errBusy          = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "too many requests in flight"}
)

func invalidParams(format string, a ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, a...)}
}

func methodNotFound(format string, a ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf(format, a...)}
}

// Serve runs one proxy component on the ACP connection r/w (the
// conductor's pipes: newline-delimited JSON-RPC 2.0) until r ends or ctx
// is done. It returns nil at the end of r.
//
// The conductor's first proxy initialize fixes the [Revision]. Messages
// without the revision's successor wrapper come from the client and are
// forwarded to the successor wrapped; messages in the wrapper come from
// the successor (the agent) and are either MCP-over-ACP traffic for this
// component's server or forwarded toward the client unwrapped. Requests
// the proxy forwards get its own ids; the answers are mapped back.
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts *Options) error {
	if opts == nil || opts.Server == nil {
		return errors.New("acp: Options.Server is required")
	}
	p := newProxy(ctx, w, opts)
	defer p.shutdown()
	// The reader runs apart so that the end of ctx ends Serve even while a
	// read blocks (stdin cannot be interrupted).
	type result struct {
		line []byte
		err  error
	}
	lines := make(chan result)
	go func() {
		r := jsonl.NewReader(r, p.maxLine)
		for {
			line, err := r.Next()
			select {
			case lines <- result{line, err}:
			case <-ctx.Done():
				return
			}
			if err != nil && !errors.Is(err, jsonl.ErrTooLong) {
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
		switch {
		case errors.Is(l.err, jsonl.ErrTooLong):
			p.log.Warn("connector acp: dropped an outer message longer than the limit", "max_bytes", p.maxLine)
			p.respondError(jsonrpc.ID{}, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: fmt.Sprintf("message longer than %d bytes", p.maxLine)})
		case errors.Is(l.err, io.EOF):
			return p.writeErr()
		case l.err != nil:
			return l.err
		default:
			p.dispatch(l.line)
		}
		if err := p.writeErr(); err != nil {
			return err
		}
	}
}

// pendingFunc receives the answer to a request the proxy sent.
type pendingFunc func(*jsonrpc.Response)

// proxy is one proxy component's state. Its methods are safe for
// concurrent use: the read loop dispatches, MCP sessions write.
type proxy struct {
	ctx  context.Context
	srv  *mcp.Server
	name string
	log  *slog.Logger

	maxLine, maxConns, maxPending, maxQueued, maxActive int

	// rev is the connection's Revision, set once by the first proxy
	// initialize (read by MCP sessions' writers, hence atomic).
	rev atomic.Uint32

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
	conns    map[string]*mcpConn // open MCP sessions: by connectionId (Connected) or serverId (Stateless)
	useTick  int64               // orders lastUse of Stateless sessions
	upServer map[string]bool     // acp servers declared by components before this one
	upConn   map[string]bool     // their connections, learned from forwarded mcp/connect answers
}

const maxUpstream = 4096

func newProxy(ctx context.Context, w io.Writer, o *Options) *proxy {
	p := &proxy{
		ctx: ctx, srv: o.Server, name: o.ServerName, log: o.Logger, w: w,
		maxLine: o.MaxMessageBytes, maxConns: o.MaxConnections, maxPending: o.MaxPending, maxQueued: o.MaxQueued, maxActive: o.MaxActive,
		pending: map[int64]pendingFunc{}, inbound: map[string]cancelTarget{},
		servers: map[string]bool{}, conns: map[string]*mcpConn{},
		upServer: map[string]bool{}, upConn: map[string]bool{},
	}
	if p.name == "" {
		p.name = "agent-protocols"
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
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
	if p.maxActive <= 0 {
		p.maxActive = 64
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	p.prefix = p.name + ":" + hex.EncodeToString(rnd[:])
	return p
}

// revision is the connection's revision (0 before the proxy initialize).
func (p *proxy) revision() Revision { return Revision(p.rev.Load()) }

// shutdown closes every MCP session.
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
		p.log.Error("connector acp: a message could not be encoded", "err", err)
		return
	}
	p.writeLine(b)
}

// respond answers request id with result, or with err when it is not nil.
func (p *proxy) respond(id jsonrpc.ID, result []byte, err error) {
	if err != nil {
		p.respondError(id, err)
		return
	}
	if len(result) == 0 {
		result = []byte("null")
	}
	p.write(&jsonrpc.Response{ID: id, Result: result})
}

// respondError answers with an error object. Without a usable id (a line
// that is not even JSON-RPC) the id is null, as JSON-RPC 2.0 requires.
func (p *proxy) respondError(id jsonrpc.ID, err error) {
	if b, merr := jsonl.ErrorResponse(id, wireError(err)); merr == nil {
		p.writeLine(b)
	}
}

// request sends a request with a fresh id; onResp gets its answer.
func (p *proxy) request(method string, params []byte, onResp pendingFunc) (int64, error) {
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

func (p *proxy) notify(method string, params []byte) {
	p.write(&jsonrpc.Request{Method: method, Params: params})
}

// wrap is the successor wrapper's params for one inner message.
func wrap(method string, params []byte) []byte {
	return encode(successorParams{Method: method, Params: params})
}

// toSuccessor sends one inner request to the successor; the answer goes
// to onResp unchanged (the inner result or error).
func (p *proxy) toSuccessor(method string, params []byte, onResp pendingFunc) (int64, error) {
	return p.request(p.revision().ProxySuccessor(), wrap(method, params), onResp)
}

// notifySuccessor sends one inner notification to the successor.
func (p *proxy) notifySuccessor(method string, params []byte) {
	p.notify(p.revision().ProxySuccessor(), wrap(method, params))
}

// --- reading ---------------------------------------------------------------

// dispatch handles one outer line.
func (p *proxy) dispatch(line []byte) {
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		p.respondError(jsonl.PeekID(line), &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "not a JSON-RPC 2.0 message: " + clip(err.Error())})
		return
	}
	// A message must be I-JSON (RFC 7493: unique member names, valid
	// UTF-8) before any part of it is relayed: the JSON-RPC decoder keeps
	// the last of two members where a peer may read the first, and the
	// proxy re-encodes relayed params strictly.
	valid := jsontext.Value(line).IsValid()
	switch m := msg.(type) {
	case *jsonrpc.Response:
		if !valid {
			m = &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the peer's answer was not I-JSON (duplicate member names or invalid UTF-8)"}}
		}
		p.answer(m)
	case *jsonrpc.Request:
		rev := p.revision()
		switch {
		case !valid:
			code := int64(jsonrpc.CodeInvalidRequest)
			if len(m.Params) > 0 && !jsontext.Value(m.Params).IsValid() {
				code = jsonrpc.CodeInvalidParams
			}
			p.refuse(m, &jsonrpc.Error{Code: code, Message: "not I-JSON: duplicate member names or invalid UTF-8"})
		case m.Method == "":
			p.refuse(m, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "empty method"})
		case rev != 0 && m.Method == rev.ProxySuccessor():
			p.fromSuccessor(m)
		case m.Method == methodInitialize:
			p.refuse(m, errNotProxy)
		case isProxyMethod(m.Method):
			p.proxyMethod(m)
		case rev == 0:
			p.refuse(m, errUninitialized)
		case m.Method == methodCancelRequest && !m.IsCall():
			p.forwardCancel(m)
		default:
			p.fromClient(m)
		}
	}
}

// clip shortens untrusted text for an error message or a note.
func clip(s string) string { return untrusted.Clip(s, 200) }

// refuse answers a request with err; a refused notification is noted.
func (p *proxy) refuse(m *jsonrpc.Request, err *jsonrpc.Error) {
	if m.IsCall() {
		p.respondError(m.ID, err)
		return
	}
	p.log.Warn("connector acp: ignored a notification", "method", clip(m.Method), "reason", err.Message)
}

// answer routes a response to the request the proxy sent.
func (p *proxy) answer(r *jsonrpc.Response) {
	n, ok := r.ID.Raw().(int64)
	p.mu.Lock()
	f := p.pending[n]
	delete(p.pending, n)
	p.mu.Unlock()
	if !ok || f == nil {
		p.log.Warn("connector acp: ignored a response to an unknown request id", "id", r.ID.Raw())
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

// rawIDKey is idKey of a JSON-encoded id ("" when raw is not one).
func rawIDKey(raw []byte) string {
	var v any
	if jsonv2.Unmarshal(raw, &v) != nil {
		return ""
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		return ""
	}
	return idKey(id)
}

// proxyMethod handles a method of the proxy extension's namespace from
// the conductor that is not the connection's successor wrapper: the
// first proxy initialize fixes the revision and is forwarded as the
// inner initialize; everything else is refused, never forwarded.
func (p *proxy) proxyMethod(m *jsonrpc.Request) {
	r, initialize := revisionOf(m.Method)
	cur := p.revision()
	switch {
	case r == 0:
		p.refuse(m, methodNotFound("unknown proxy method %q", clip(m.Method)))
		return
	case cur != 0 && cur != r:
		p.refuse(m, methodNotFound("%s: this connection speaks %s (it began with %s)", m.Method, cur, cur.ProxyInitialize()))
		return
	case !initialize:
		p.refuse(m, errUninitialized)
		return
	case !m.IsCall():
		p.refuse(m, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: m.Method + " is a request"})
		return
	}
	if cur == 0 {
		p.rev.Store(uint32(r))
	}
	outer := m.ID
	if _, err := p.toSuccessor(methodInitialize, m.Params, func(r *jsonrpc.Response) {
		if r.Error == nil {
			p.learnCapabilities(r.Result)
		}
		// The agent's own result, protocolVersion and all.
		p.respond(outer, r.Result, r.Error)
	}); err != nil {
		p.respondError(outer, err)
	}
}

// fromClient forwards a client→agent message to the successor.
func (p *proxy) fromClient(m *jsonrpc.Request) {
	params, sid := []byte(m.Params), ""
	switch m.Method {
	case "session/new", "session/load", "session/resume", "session/fork":
		params, sid = p.declare(m.Method, params)
	}
	if !m.IsCall() {
		p.notifySuccessor(m.Method, params)
		return
	}
	outer, key := m.ID, idKey(m.ID)
	id, err := p.toSuccessor(m.Method, params, func(r *jsonrpc.Response) {
		p.forget(key)
		if r.Error != nil && sid != "" {
			// No session came of it: its server was never visible.
			p.dropServer(sid)
		}
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
// client), or delivered to an MCP session under an inner id.
type cancelTarget struct {
	id      int64
	wrapped bool
	conn    *mcpConn
	inner   string // idKey of the inner request on conn
}

func (p *proxy) forget(key string) {
	p.mu.Lock()
	delete(p.inbound, key)
	p.mu.Unlock()
}

// forwardCancel follows a $/cancel_request, which names a request by its
// id on this hop: it is sent on under the id the proxy forwarded the
// request with (whoever answers it then answers the original), or, for a
// request on an MCP session, becomes MCP's notifications/cancelled and
// the proxy answers the original with -32800 itself, as ACP requires an
// answer and MCP forbids one to a cancelled request. A cancellation of a
// request the proxy does not know (answered already, or never seen) is
// dropped.
//
// Toward the successor, the Connected revision sends the cancellation
// inside _proxy/successor, as the Rust conductor relays it; the
// Stateless revision's schema cancels a proxy/successor request with a
// plain $/cancel_request naming it on the same connection, never
// forwarded to another hop.
func (p *proxy) forwardCancel(m *jsonrpc.Request) {
	var params cancelParams
	if decode(m.Params, &params) != nil {
		return
	}
	key := rawIDKey(params.RequestID)
	if key == "" {
		return
	}
	p.mu.Lock()
	to, ok := p.inbound[key]
	p.mu.Unlock()
	switch {
	case !ok:
	case to.conn != nil:
		to.conn.cancel(to.inner, m.Method)
	default:
		params.RequestID = jsontext.Value(strconv.FormatInt(to.id, 10))
		if to.wrapped && p.revision() == Connected {
			p.notifySuccessor(m.Method, encode(params))
		} else {
			p.notify(m.Method, encode(params))
		}
	}
}

// learnCapabilities reads agentCapabilities.mcpCapabilities.acp from the
// successor's InitializeResponse.
func (p *proxy) learnCapabilities(result []byte) {
	var res initializeResult
	acp := decode(result, &res) == nil && res.AgentCapabilities.MCPCapabilities.ACP
	p.mu.Lock()
	p.agentACP = acp
	p.mu.Unlock()
	if !acp {
		p.log.Warn("connector acp: the agent does not advertise agentCapabilities.mcpCapabilities.acp; sessions are forwarded without this MCP server (run `connector serve` as a stdio MCP server instead, or put an MCP-over-ACP bridge before the agent)", "server", p.name)
	}
}

// declare adds this proxy's server to a session setup request's
// mcpServers, when the agent consumes ACP-transport servers; it records
// the acp servers earlier components declared, to route their MCP
// traffic past this proxy. Params it cannot read pass unchanged: the
// agent judges them.
func (p *proxy) declare(method string, params []byte) ([]byte, string) {
	var setup sessionSetup
	if err := decode(params, &setup); err != nil {
		p.log.Warn("connector acp: params unreadable; forwarded unchanged", "method", method, "err", clip(err.Error()))
		return params, ""
	}
	p.mu.Lock()
	for _, raw := range setup.MCPServers {
		var s acpServer
		if jsonv2.Unmarshal(raw, &s) == nil && s.Type == "acp" && s.ServerID != "" && len(p.upServer) < maxUpstream {
			p.upServer[s.ServerID] = true
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
		p.log.Warn("connector acp: the agent does not consume ACP-transport MCP servers; forwarded unchanged, without this server", "method", method, "server", p.name)
		return params, ""
	}
	setup.MCPServers = append(setup.MCPServers, encode(acpServer{Type: "acp", Name: p.name, ServerID: sid}))
	return encode(setup), sid
}

// dropServer forgets a declared server and ends its MCP session, if any.
func (p *proxy) dropServer(sid string) {
	p.mu.Lock()
	delete(p.servers, sid)
	c := p.conns[sid]
	p.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// fromSuccessor handles a message the successor sent toward the client.
func (p *proxy) fromSuccessor(m *jsonrpc.Request) {
	var b successorParams
	if err := decode(m.Params, &b); err != nil {
		p.refuse(m, invalidParams("%s: %s", m.Method, clip(err.Error())))
		return
	}
	if b.Method == "" {
		p.refuse(m, invalidParams("%s: \"method\" must be a non-empty string", m.Method))
		return
	}
	rev := p.revision()
	switch {
	case isProxyMethod(b.Method):
		p.refuse(m, methodNotFound("%s: %q is not a message for the client", m.Method, clip(b.Method)))
		return
	case b.Method == methodMCPMessage && rev == Stateless:
		if p.statelessMessage(m, b.Params) {
			return
		}
	case b.Method == methodMCPConnect || b.Method == methodMCPMessage || b.Method == methodMCPDisconnect:
		if rev == Stateless {
			p.refuse(m, methodNotFound("%s is not a method of %s, whose MCP-over-ACP is stateless mcp/message {serverId, requestId}", b.Method, rev))
			return
		}
		if p.connectedMCP(m, b.Method, b.Params) {
			return
		}
	}
	// Toward the client, unwrapped.
	if !m.IsCall() {
		if b.Method == methodCancelRequest {
			// Its requestId belongs to the successor's own hop, which the
			// conductor cancels hop by hop itself; tunnelled, it would
			// name the wrong request.
			p.log.Warn("connector acp: dropped a cancellation from the successor (cancellation is per hop)", "method", b.Method)
			return
		}
		p.notify(b.Method, b.Params)
		return
	}
	outer, key := m.ID, idKey(m.ID)
	connect := b.Method == methodMCPConnect
	id, err := p.request(b.Method, b.Params, func(r *jsonrpc.Response) {
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

func (p *proxy) learnUpstreamConn(result []byte) {
	var res connectResult
	if decode(result, &res) != nil || res.ConnectionID == "" {
		return
	}
	p.mu.Lock()
	if len(p.upConn) < maxUpstream {
		p.upConn[res.ConnectionID] = true
	}
	p.mu.Unlock()
}

func (p *proxy) dropConn(c *mcpConn) {
	p.mu.Lock()
	if p.conns[c.id] == c {
		delete(p.conns, c.id)
	}
	p.mu.Unlock()
}

// startSession starts an MCP session of the server over c.
func (p *proxy) startSession(c *mcpConn) *jsonrpc.Error {
	if _, err := p.srv.Connect(p.ctx, c, nil); err != nil {
		c.Close()
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "starting the MCP session: " + err.Error()}
	}
	return nil
}

// intID is an integer JSON-RPC id (the jsonrpc package converts from the
// JSON decoding of a number).
func intID(n int64) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(float64(n))
	return id
}

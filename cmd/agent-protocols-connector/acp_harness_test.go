package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/acp"
	"github.com/agentprotocols/go-sdk/connector"
)

// The ACP tests run the built binary as a proxy component and play both
// of its peers over its real pipes: the conductor's client side (plain
// messages) and the agent behind it (messages wrapped in the revision's
// successor wrapper, _proxy/successor or proxy/successor, as conductors
// deliver them). Every outer message the proxy writes is validated
// against the ACP schema of the revision's SDK, vendored in testdata/acp
// (@agentclientprotocol/sdk 1.5.0 for _proxy/*, the unstable v1 schema
// of 2.4.0 for proxy/*), where it has a definition; the _proxy/*
// envelopes, which 1.5.0 does not define, are checked against the text.

var buildOnce struct {
	sync.Once
	dir, bin string
	err      error
}

// connectorBinary builds this command once per test process.
func connectorBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildOnce.dir, buildOnce.err = os.MkdirTemp("", "connector-acp-test")
		if buildOnce.err != nil {
			return
		}
		buildOnce.bin = filepath.Join(buildOnce.dir, "connector")
		out, err := exec.Command("go", "build", "-o", buildOnce.bin, ".").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.bin
}

// removeBuilt runs the tests, then removes the binary connectorBinary
// built (TestMain, in script_test.go).
type removeBuilt struct{ m *testing.M }

func (r removeBuilt) Run() int {
	code := r.m.Run()
	if buildOnce.dir != "" {
		os.RemoveAll(buildOnce.dir)
	}
	return code
}

// acpConfig writes a dev key and a config allowing hosts; it returns the
// config path and the key file's bytes (which must never leave).
func acpConfig(t *testing.T, hosts ...*testHost) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "connector.json")
	if code, _, errs := runCmd(t, nil, "keygen", "--config", cfg, "--unencrypted-dev"); code != exitOK {
		t.Fatalf("keygen: %s", errs)
	}
	var hs []map[string]any
	for _, h := range hosts {
		hs = append(hs, map[string]any{"host": h.url, "label": "adphost"})
	}
	b, _ := json.Marshal(map[string]any{"hosts": hs, "key_unencrypted_dev": true, "allow_loopback_http": true, "writes_per_minute": -1})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(dir, unencryptedKeyName))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, key
}

// acpSchema validates outer messages against a vendored ACP schema.
type acpSchema struct {
	c       *jsonschema.Compiler
	url     string
	mu      sync.Mutex
	defs    map[string]*jsonschema.Schema
	methods map[string]map[string]string // method → "Request"/"Notification"/"Response" → def name
}

// acpSchemaFiles are the vendored schemas, by the revision they define.
var acpSchemaFiles = map[acp.Revision]string{
	acp.Connected: "schema-v1-sdk-1.5.0.json",
	acp.Stateless: "schema-v1-unstable-sdk-2.4.0.json",
}

func loadACPSchema(t *testing.T, rev acp.Revision) *acpSchema {
	t.Helper()
	file := acpSchemaFiles[rev]
	raw, err := os.ReadFile(filepath.Join("testdata/acp", file))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "https://agentclientprotocol.invalid/" + file
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	var top struct {
		Defs map[string]struct {
			Method string `json:"x-method"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	s := &acpSchema{c: c, url: url, defs: map[string]*jsonschema.Schema{}, methods: map[string]map[string]string{}}
	for name, d := range top.Defs {
		if d.Method == "" {
			continue
		}
		for _, kind := range []string{"Request", "Notification", "Response"} {
			if strings.HasSuffix(name, kind) {
				if s.methods[d.Method] == nil {
					s.methods[d.Method] = map[string]string{}
				}
				s.methods[d.Method][kind] = name
			}
		}
	}
	want := []string{"mcp/connect", "mcp/message", "mcp/disconnect", "session/new", "initialize"}
	if rev == acp.Stateless {
		want = []string{"proxy/initialize", "proxy/successor", "mcp/message", "session/new", "initialize"}
	}
	for _, m := range want {
		if len(s.methods[m]) == 0 {
			t.Fatalf("%s defines nothing for %s", file, m)
		}
	}
	return s
}

// check validates v against the named definition.
func (s *acpSchema) check(def string, v json.RawMessage) error {
	s.mu.Lock()
	sch, ok := s.defs[def]
	if !ok {
		var err error
		sch, err = s.c.Compile(s.url + "#/$defs/" + def)
		if err != nil {
			s.mu.Unlock()
			return err
		}
		s.defs[def] = sch
	}
	s.mu.Unlock()
	if len(v) == 0 {
		v = json.RawMessage("null")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(v))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// checkMethod validates params (or a result) of method as kind where the
// schema defines it; defined reports whether it did.
func (s *acpSchema) checkMethod(method, kind string, v json.RawMessage) (defined bool, err error) {
	def := s.methods[method][kind]
	if def == "" {
		return false, nil
	}
	return true, s.check(def, v)
}

// wireMsg is one outer message as the proxy wrote it.
type wireMsg struct {
	raw    json.RawMessage
	msg    jsonrpc.Message
	inner  string // the inner method of a successor wrapper
	params json.RawMessage
}

func (w *wireMsg) req() *jsonrpc.Request   { r, _ := w.msg.(*jsonrpc.Request); return r }
func (w *wireMsg) resp() *jsonrpc.Response { r, _ := w.msg.(*jsonrpc.Response); return r }

// acpChain is the running proxy with a scripted conductor around it.
type acpChain struct {
	t      *testing.T
	rev    acp.Revision
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lockedBuffer
	schema *acpSchema
	done   chan struct{}

	wmu sync.Mutex

	mu      sync.Mutex
	methods map[string]string // outer request id the conductor sent → method (inner for _proxy/successor)
	waiters map[string]func(*jsonrpc.Response)
	conns   map[string]*agentMCP       // Connected: by connectionId
	routes  map[string]*statelessAgent // Stateless: by serverId
	nextID  int
	all     []json.RawMessage // every outer line the proxy wrote
	misc    chan *wireMsg     // everything not routed to an agent waiter or MCP connection
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startACP runs `connector acp --config cfg` with the conductor's pipes;
// the conductor will speak revision rev.
func startACP(t *testing.T, cfg string, rev acp.Revision) *acpChain {
	t.Helper()
	bin := connectorBinary(t)
	ch := &acpChain{
		t: t, rev: rev, stderr: &lockedBuffer{}, schema: loadACPSchema(t, rev), done: make(chan struct{}),
		methods: map[string]string{}, waiters: map[string]func(*jsonrpc.Response){}, conns: map[string]*agentMCP{},
		routes: map[string]*statelessAgent{}, misc: make(chan *wireMsg, 256),
	}
	ch.cmd = exec.Command(bin, "acp", "--config", cfg)
	ch.cmd.Stderr = ch.stderr
	var err error
	if ch.stdin, err = ch.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := ch.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go ch.readLoop(stdout)
	t.Cleanup(func() {
		ch.stdin.Close()
		select {
		case <-ch.done:
		case <-time.After(10 * time.Second):
			ch.cmd.Process.Kill()
			<-ch.done
		}
		ch.cmd.Wait()
		if t.Failed() {
			t.Logf("connector stderr:\n%s", ch.stderr.String())
		}
	})
	return ch
}

// stop closes the conductor's end and waits for a clean exit.
func (ch *acpChain) stop() {
	ch.t.Helper()
	ch.stdin.Close()
	select {
	case <-ch.done:
	case <-time.After(10 * time.Second):
		ch.t.Fatal("connector acp did not exit at the end of its input")
	}
	if err := ch.cmd.Wait(); err != nil {
		ch.t.Fatalf("connector acp: %v\n%s", err, ch.stderr.String())
	}
}

func (ch *acpChain) readLoop(r io.Reader) {
	defer close(ch.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		ch.mu.Lock()
		ch.all = append(ch.all, line)
		ch.mu.Unlock()
		w, err := ch.validate(line)
		if err != nil {
			ch.t.Errorf("proxy wrote an invalid message: %v\n%s", err, line)
			continue
		}
		ch.route(w)
	}
}

func idString(id jsonrpc.ID) string { return fmt.Sprint(id.Raw()) }

// validate decodes one outer line and checks it: the JSON-RPC envelope,
// the successor wrapper (against the schema where it defines it, else
// against the text), and every body the ACP schema defines (requests and
// notifications by method, responses by the method of the request they
// answer, error objects as Error).
func (ch *acpChain) validate(line []byte) (*wireMsg, error) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(line, &env); err != nil {
		return nil, err
	}
	if string(env["jsonrpc"]) != `"2.0"` {
		return nil, fmt.Errorf("jsonrpc member %s", env["jsonrpc"])
	}
	w := &wireMsg{raw: line}
	if _, isResp := env["method"]; !isResp {
		if _, ok := env["id"]; !ok {
			return nil, fmt.Errorf("a response without id")
		}
		_, hasRes := env["result"]
		errObj, hasErr := env["error"]
		if hasRes == hasErr {
			return nil, fmt.Errorf("a response needs exactly one of result and error")
		}
		if hasErr {
			if err := ch.schema.check("Error", errObj); err != nil {
				return nil, err
			}
		}
		if string(env["id"]) == "null" {
			w.msg = &jsonrpc.Response{Error: &jsonrpc.Error{}}
			json.Unmarshal(errObj, w.msg.(*jsonrpc.Response).Error)
			return w, nil
		}
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, err
	}
	w.msg = msg
	wrapper := ch.rev.ProxySuccessor()
	switch m := msg.(type) {
	case *jsonrpc.Response:
		ch.mu.Lock()
		method := ch.methods[idString(m.ID)]
		ch.mu.Unlock()
		if m.Error == nil && method != "" {
			if method == "_proxy/initialize" {
				method = "initialize"
			}
			if _, err := ch.schema.checkMethod(method, "Response", m.Result); err != nil {
				return nil, fmt.Errorf("%s result: %w", method, err)
			}
		}
	case *jsonrpc.Request:
		kind := "Notification"
		if m.IsCall() {
			kind = "Request"
		}
		if m.Method != wrapper {
			if _, err := ch.schema.checkMethod(m.Method, kind, m.Params); err != nil {
				return nil, fmt.Errorf("%s params: %w", m.Method, err)
			}
			return w, nil
		}
		if defined, err := ch.schema.checkMethod(wrapper, kind, m.Params); err != nil {
			return nil, fmt.Errorf("%s params: %w", wrapper, err)
		} else if !defined && ch.rev == acp.Stateless {
			return nil, fmt.Errorf("the 2.4.0 schema does not define %s %s", wrapper, kind)
		}
		var b map[string]json.RawMessage
		if err := json.Unmarshal(m.Params, &b); err != nil || b == nil {
			return nil, fmt.Errorf("%s params must be an object", wrapper)
		}
		for k := range b {
			if k != "method" && k != "params" && k != "_meta" {
				return nil, fmt.Errorf("%s member %q", wrapper, k)
			}
		}
		if json.Unmarshal(b["method"], &w.inner) != nil || w.inner == "" {
			return nil, fmt.Errorf("%s without a method", wrapper)
		}
		w.params = b["params"]
		if _, err := ch.schema.checkMethod(w.inner, kind, w.params); err != nil {
			return nil, fmt.Errorf("inner %s params: %w", w.inner, err)
		}
	}
	return w, nil
}

// route hands a message to the agent request waiting for it, to the MCP
// connection it belongs to, or to misc for the script.
func (ch *acpChain) route(w *wireMsg) {
	if r := w.resp(); r != nil && r.ID.IsValid() {
		ch.mu.Lock()
		f := ch.waiters[idString(r.ID)]
		delete(ch.waiters, idString(r.ID))
		ch.mu.Unlock()
		if f != nil {
			f(r)
			return
		}
	}
	if r := w.req(); r != nil && w.inner == "mcp/message" && ch.rev == acp.Connected {
		var b connectedMCPMessage
		json.Unmarshal(w.params, &b)
		ch.mu.Lock()
		c := ch.conns[b.ConnectionID]
		ch.mu.Unlock()
		if c != nil {
			c.fromProxy(r, b.Method, b.Params)
			return
		}
	}
	if r := w.req(); r != nil && w.inner == "mcp/message" && ch.rev == acp.Stateless && !r.IsCall() {
		var b statelessMCPMessage
		json.Unmarshal(w.params, &b)
		ch.mu.Lock()
		a := ch.routes[b.ServerID]
		ch.mu.Unlock()
		if a != nil {
			a.notes <- b
			return
		}
	}
	ch.misc <- w
}

func (ch *acpChain) send(v any) {
	ch.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		ch.t.Fatal(err)
	}
	ch.sendRaw(b)
}

func (ch *acpChain) sendRaw(b []byte) {
	ch.wmu.Lock()
	defer ch.wmu.Unlock()
	if _, err := ch.stdin.Write(append(b, '\n')); err != nil {
		ch.t.Errorf("write to connector: %v", err)
	}
}

// next is the next unrouted message the proxy wrote.
func (ch *acpChain) next() *wireMsg {
	ch.t.Helper()
	select {
	case w := <-ch.misc:
		return w
	case <-time.After(20 * time.Second):
		ch.t.Fatalf("no message from the proxy\nstderr:\n%s", ch.stderr.String())
		return nil
	}
}

// clientRequest sends a plain request as the conductor's client side.
func (ch *acpChain) clientRequest(id int, method string, params any) {
	ch.t.Helper()
	ch.mu.Lock()
	ch.methods[fmt.Sprint(id)] = method
	ch.mu.Unlock()
	ch.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

// agentRequestAsync sends a request from the agent, in the successor
// wrapper, under a fresh string id, which it returns; f gets the answer.
func (ch *acpChain) agentRequestAsync(method string, params any, f func(*jsonrpc.Response)) string {
	return ch.agentRequestAs(ch.newAgentID(), method, params, f)
}

// newAgentID is a fresh outer id for a request from the agent.
func (ch *acpChain) newAgentID() string {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.nextID++
	return fmt.Sprintf("agent-%d", ch.nextID)
}

// agentRequestAs is agentRequestAsync under the outer id id.
func (ch *acpChain) agentRequestAs(id, method string, params any, f func(*jsonrpc.Response)) string {
	ch.mu.Lock()
	ch.methods[id] = method
	ch.waiters[id] = f
	ch.mu.Unlock()
	ch.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": ch.rev.ProxySuccessor(), "params": map[string]any{"method": method, "params": params}})
	return id
}

// agentRequest is agentRequestAsync, waiting.
func (ch *acpChain) agentRequest(method string, params any) *jsonrpc.Response {
	ch.t.Helper()
	c := make(chan *jsonrpc.Response, 1)
	ch.agentRequestAsync(method, params, func(r *jsonrpc.Response) { c <- r })
	select {
	case r := <-c:
		return r
	case <-time.After(30 * time.Second):
		ch.t.Fatalf("no answer to the agent's %s\nstderr:\n%s", method, ch.stderr.String())
		return nil
	}
}

// agentRequestRaw sends an mcp/message request from the agent whose
// params are the raw JSON params, and waits for the answer.
func (ch *acpChain) agentRequestRaw(params string) *jsonrpc.Response {
	ch.t.Helper()
	id := ch.newAgentID()
	c := make(chan *jsonrpc.Response, 1)
	ch.mu.Lock()
	ch.methods[id] = "mcp/message"
	ch.waiters[id] = func(r *jsonrpc.Response) { c <- r }
	ch.mu.Unlock()
	ch.sendRaw([]byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"` + ch.rev.ProxySuccessor() + `","params":{"method":"mcp/message","params":` + params + `}}`))
	select {
	case r := <-c:
		return r
	case <-time.After(30 * time.Second):
		ch.t.Fatalf("no answer to raw mcp/message\nstderr:\n%s", ch.stderr.String())
		return nil
	}
}

func (ch *acpChain) agentNotify(method string, params any) {
	ch.t.Helper()
	ch.send(map[string]any{"jsonrpc": "2.0", "method": ch.rev.ProxySuccessor(), "params": map[string]any{"method": method, "params": params}})
}

// connectMCP opens an MCP-over-ACP connection to serverID and an
// official go-sdk MCP client session over it, as the agent would.
func (ch *acpChain) connectMCP(serverID string) (string, *mcp.ClientSession, *agentMCP) {
	ch.t.Helper()
	r := ch.agentRequest("mcp/connect", map[string]any{"serverId": serverID})
	if r.Error != nil {
		ch.t.Fatalf("mcp/connect: %v", r.Error)
	}
	var res struct {
		ConnectionID string `json:"connectionId"`
	}
	if strictUnmarshal(r.Result, &res) != nil || res.ConnectionID == "" {
		ch.t.Fatalf("mcp/connect result %s", r.Result)
	}
	a := &agentMCP{ch: ch, cid: res.ConnectionID, in: make(chan jsonrpc.Message, 64), done: make(chan struct{}), calls: map[int64]jsonrpc.ID{}, updates: make(chan string, 64)}
	ch.mu.Lock()
	ch.conns[a.cid] = a
	ch.mu.Unlock()
	cl := mcp.NewClient(&mcp.Implementation{Name: "scripted-acp-agent", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case a.updates <- r.Params.URI:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, a, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		ch.t.Fatalf("MCP initialize over ACP: %v", err)
	}
	return res.ConnectionID, cs, a
}

// agentMCP is the agent's end of one MCP-over-ACP connection: an
// mcp.Transport for the official client whose messages travel as
// mcp/message through the proxy.
type agentMCP struct {
	ch   *acpChain
	cid  string
	in   chan jsonrpc.Message
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	next    int64
	calls   map[int64]jsonrpc.ID // inner id given to a server request → the proxy's outer id
	updates chan string          // notifications/resources/updated URIs, seen as outer notifications
	outerN  int                  // outer mcp/message notifications received
}

func (a *agentMCP) Connect(context.Context) (mcp.Connection, error) { return a, nil }
func (a *agentMCP) SessionID() string                               { return "" }
func (a *agentMCP) Close() error {
	a.once.Do(func() { close(a.done) })
	return nil
}

func (a *agentMCP) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-a.in:
		return m, nil
	case <-a.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (a *agentMCP) Write(_ context.Context, m jsonrpc.Message) error {
	switch m := m.(type) {
	case *jsonrpc.Request:
		body := connectedMCPMessage{ConnectionID: a.cid, Method: m.Method, Params: m.Params}
		if !m.IsCall() {
			a.ch.agentNotify("mcp/message", body)
			return nil
		}
		inner := m.ID
		a.ch.agentRequestAsync("mcp/message", body, func(r *jsonrpc.Response) {
			a.in <- &jsonrpc.Response{ID: inner, Result: r.Result, Error: r.Error}
		})
	case *jsonrpc.Response:
		n, _ := m.ID.Raw().(int64)
		a.mu.Lock()
		outer, ok := a.calls[n]
		delete(a.calls, n)
		a.mu.Unlock()
		if ok {
			b, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: outer, Result: m.Result, Error: m.Error})
			a.ch.sendRaw(b)
		}
	}
	return nil
}

// fromProxy takes an outer mcp/message the proxy sent on this connection.
func (a *agentMCP) fromProxy(outer *jsonrpc.Request, method string, params json.RawMessage) {
	if !outer.IsCall() {
		a.mu.Lock()
		a.outerN++
		a.mu.Unlock()
		a.in <- &jsonrpc.Request{Method: method, Params: params}
		return
	}
	a.mu.Lock()
	a.next++
	n := a.next
	a.calls[n] = outer.ID
	a.mu.Unlock()
	id, _ := jsonrpc.MakeID(float64(n))
	a.in <- &jsonrpc.Request{ID: id, Method: method, Params: params}
}

func (a *agentMCP) outerNotifications() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.outerN
}

// Wire shapes as the tests write and read them, defined apart from the
// proxy's own so that a mistake in one is not repeated in the other.

// connectedMCPMessage is mcp/message's params in the _proxy/* revision.
type connectedMCPMessage struct {
	ConnectionID string          `json:"connectionId"`
	Method       string          `json:"method"`
	Params       json.RawMessage `json:"params,omitempty"`
}

// statelessMCPMessage is mcp/message's params in the proxy/* revision
// (@agentclientprotocol/sdk 2.4.0's MessageMcpRequest and
// MessageMcpNotification).
type statelessMCPMessage struct {
	ServerID  string          `json:"serverId"`
	RequestID string          `json:"requestId"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params,omitempty"`
	Meta      json.RawMessage `json:"_meta,omitempty"`
}

// mcpOutcome is a proxy/* mcp/message result: exactly one of an inner
// result (any JSON value, null included) and an inner MCP error.
type mcpOutcome struct {
	Result json.RawMessage `json:"result,omitzero"`
	Error  *jsonrpc.Error  `json:"error,omitzero"`
	Meta   json.RawMessage `json:"_meta,omitzero"`
}

// strictUnmarshal decodes the proxy's own output strictly: a member the
// wire does not define, a duplicate name or a wrong type is a failure.
func strictUnmarshal(b []byte, v any) error {
	return jsonv2.Unmarshal(b, v, jsonv2.RejectUnknownMembers(true))
}

// decodeOutcome decodes a proxy/* mcp/message result, which must carry
// exactly one of result and error.
func decodeOutcome(t *testing.T, raw json.RawMessage) mcpOutcome {
	t.Helper()
	var members map[string]json.RawMessage
	var oc mcpOutcome
	if err := strictUnmarshal(raw, &members); err != nil {
		t.Fatalf("mcp/message result %s: %v", raw, err)
	}
	_, hasRes := members["result"]
	_, hasErr := members["error"]
	if hasRes == hasErr {
		t.Fatalf("mcp/message result %s: want exactly one of result and error", raw)
	}
	if err := strictUnmarshal(raw, &oc); err != nil {
		t.Fatalf("mcp/message result %s: %v", raw, err)
	}
	if hasRes && len(oc.Result) == 0 {
		oc.Result = json.RawMessage("null")
	}
	return oc
}

// mcp2026Meta is the inner _meta every MCP 2026-07-28 request carries
// over proxy/* MCP-over-ACP (as 2.4.0's McpOverAcpCaller adds it).
func mcp2026Meta() map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "scripted-acp-agent", "version": "1"},
	}
}

// statelessAgent is the agent's end of one declared server in the
// proxy/* revision: each MCP request is one mcp/message request under a
// requestId of the agent's; the notifications of its open requests
// arrive on notes.
type statelessAgent struct {
	ch       *acpChain
	serverID string
	notes    chan statelessMCPMessage
	mu       sync.Mutex
	n        int
}

// statelessServer is the agent's end of serverID.
func (ch *acpChain) statelessServer(serverID string) *statelessAgent {
	a := &statelessAgent{ch: ch, serverID: serverID, notes: make(chan statelessMCPMessage, 256)}
	ch.mu.Lock()
	ch.routes[serverID] = a
	ch.mu.Unlock()
	return a
}

// requestID is a fresh requestId.
func (a *statelessAgent) requestID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	return fmt.Sprintf("mcp-request:%d", a.n)
}

// message is the mcp/message params of one inner request, its params
// carrying the 2026-07-28 _meta.
func (a *statelessAgent) message(rid, method string, params map[string]any) statelessMCPMessage {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = mcp2026Meta()
	b, _ := json.Marshal(params)
	return statelessMCPMessage{ServerID: a.serverID, RequestID: rid, Method: method, Params: b}
}

// callAsync sends one inner request; f gets the outer answer. It returns
// the outer id.
func (a *statelessAgent) callAsync(rid, method string, params map[string]any, f func(*jsonrpc.Response)) string {
	return a.ch.agentRequestAs(a.ch.newAgentID(), "mcp/message", a.message(rid, method, params), f)
}

// call sends one inner request and returns its outcome; an outer error
// fails the test.
func (a *statelessAgent) call(method string, params map[string]any) mcpOutcome {
	a.ch.t.Helper()
	c := make(chan *jsonrpc.Response, 1)
	a.callAsync(a.requestID(), method, params, func(r *jsonrpc.Response) { c <- r })
	select {
	case r := <-c:
		if r.Error != nil {
			a.ch.t.Fatalf("%s over mcp/message: outer error %v", method, r.Error)
		}
		return decodeOutcome(a.ch.t, r.Result)
	case <-time.After(30 * time.Second):
		a.ch.t.Fatalf("no answer to %s over mcp/message\nstderr:\n%s", method, a.ch.stderr.String())
		return mcpOutcome{}
	}
}

// tool calls a tool and returns its structuredContent; an inner error or
// an isError result fails the test.
func (a *statelessAgent) tool(name string, args map[string]any) map[string]any {
	a.ch.t.Helper()
	oc := a.call("tools/call", map[string]any{"name": connector.ToolPrefix + name, "arguments": args})
	if oc.Error != nil {
		a.ch.t.Fatalf("%s: inner error %v", name, oc.Error)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(oc.Result, &res); err != nil || res.IsError {
		a.ch.t.Fatalf("%s: %v %s", name, err, oc.Result)
	}
	return structured(a.ch.t, &res)
}

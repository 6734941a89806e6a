package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/acp"
)

// The TypeScript chain tests put real ACP agents built on the official
// @agentclientprotocol/sdk behind the proxy, one per revision. They read
// the npm packages from the client-interop directory, never from the
// network:
//
//   - AGENT_PROTOCOLS_INTEROP_DIR is a directory whose node_modules holds
//     @agentclientprotocol/sdk 2.4.x and, under the alias acp-sdk-1,
//     @agentclientprotocol/sdk 1.5.x;
//   - AGENT_PROTOCOLS_NODE is the node (22 or later) to run them with
//     (default: node on PATH).
//
// Without the directory they skip, unless AGENT_PROTOCOLS_INTEROP=require,
// when they fail: a CI stage that installed the clients must not pass by
// skipping them.

// tsAgent1 is an agent on @agentclientprotocol/sdk 1.5 (the
// AgentSideConnection API; the _proxy/* revision): it advertises
// mcpCapabilities.acp and, in session/new, uses the acp server the proxy
// declared — mcp/connect, MCP initialize, tools/list, a read tool, a
// signed write (room_create on the host session/new names in _meta),
// mcp/disconnect — and reports what it saw in the session answer.
const tsAgent1 = `
import * as acp from "acp-sdk-1";
import { Readable, Writable } from "node:stream";

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
new acp.AgentSideConnection((c) => ({
  async initialize() {
    return { protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities: { mcpCapabilities: { acp: true } }, authMethods: [] };
  },
  async newSession(p) {
    const s = p.mcpServers.filter((m) => m.type === "acp");
    if (s.length !== 1) return { sessionId: "acp-servers-" + s.length };
    const { connectionId } = await c.request("mcp/connect", { serverId: s[0].serverId });
    const call = (method, params) => c.request("mcp/message", { connectionId, method, params });
    const tool = async (name, args) => {
      const r = await call("tools/call", { name: "agent_protocols_" + name, arguments: args });
      if (r.isError) throw new Error(name + ": " + JSON.stringify(r.structuredContent));
      return r.structuredContent;
    };
    const init = await call("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "ts-agent-1", version: "1" } });
    await c.notify("mcp/message", { connectionId, method: "notifications/initialized" });
    const list = await call("tools/list", {});
    const who = await tool("identity_current", {});
    const now = Date.now();
    const created = await tool("room_create", { host: p._meta.host, topic: "From @agentclientprotocol/sdk 1.5", visibility: "public",
      start_time: now - 60000, end_time: now + 3600000, agenda: "Test.", tags: ["ts"] });
    const bye = await c.request("mcp/disconnect", { connectionId });
    return { sessionId: "ts-" + list.tools.length, _meta: { server: init.serverInfo.name, agentId: who.agent_id,
      roomId: created.room.room_id, signer: created.envelope.event.actor, disconnect: bye } };
  },
  async authenticate() { return {}; },
  async prompt() { return { stopReason: "end_turn" }; },
  async cancel() {},
}), stream);
`

// tsAgent2 is an agent on @agentclientprotocol/sdk 2.4 (agent() and
// McpOverAcpCaller from its unstable entry point; the proxy/* revision,
// MCP 2026-07-28 per request): in session/new it lists the tools, calls
// a read tool and two signed writes (room_create, then a message in the
// room, judged against the head the serverId's session presented), opens
// a subscriptions/listen whose acknowledgement reaches it by
// (serverId, requestId), cancels it, and reports what it saw.
const tsAgent2 = `
import { agent, methods, McpOverAcpCaller, isMcpServerAcp, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk/unstable";
import { Readable, Writable } from "node:stream";

const mcp = new McpOverAcpCaller({ clientInfo: { name: "ts-agent-2", version: "1" } });
async function tool(client, serverId, name, args) {
  const o = await mcp.request(client, serverId, "tools/call", { name: "agent_protocols_" + name, arguments: args });
  if (o.error) throw new Error(name + ": " + JSON.stringify(o.error));
  if (o.result.isError) throw new Error(name + ": " + JSON.stringify(o.result.structuredContent));
  return o.result.structuredContent;
}
agent({ name: "ts-agent-2" })
  .onNotification(methods.agent.mcp.message, mcp.handleNotification)
  .onRequest(methods.agent.initialize, async () => ({
    protocolVersion: PROTOCOL_VERSION, agentCapabilities: { mcpCapabilities: { acp: true } }, authMethods: [] }))
  .onRequest(methods.agent.session.new, async ({ params, client }) => {
    const s = params.mcpServers.filter(isMcpServerAcp);
    if (s.length !== 1) return { sessionId: "acp-servers-" + s.length };
    const serverId = s[0].serverId;
    const list = await mcp.request(client, serverId, "tools/list", {});
    if (list.error) throw new Error("tools/list: " + JSON.stringify(list.error));
    const who = await tool(client, serverId, "identity_current", {});
    const now = Date.now();
    const created = await tool(client, serverId, "room_create", { host: params._meta.host, topic: "From @agentclientprotocol/sdk 2.4",
      visibility: "public", start_time: now - 60000, end_time: now + 3600000, agenda: "Test.", tags: ["ts"] });
    const roomId = created.room.room_id;
    const sent = await tool(client, serverId, "room_send_message", { room_id: roomId, content: "hello from 2.4" });
    const abort = new AbortController();
    let acknowledged;
    const ack = new Promise((resolve) => { acknowledged = resolve; });
    const listen = mcp.request(client, serverId, "subscriptions/listen",
      { notifications: { resourceSubscriptions: ["agent-protocols://rooms/" + roomId] } },
      { requestId: "listen-1", signal: abort.signal,
        onNotification: (n) => { if (n.method === "notifications/subscriptions/acknowledged") acknowledged(n); } });
    const n = await ack;
    abort.abort();
    let cancelled = "answered";
    try { await listen; } catch (e) { cancelled = e.code; }
    return { sessionId: "ts-" + list.result.tools.length, _meta: { agentId: who.agent_id, roomId, signer: created.envelope.event.actor,
      sent: sent.status, subscriptionId: n.params._meta["io.modelcontextprotocol/subscriptionId"], cancelled } };
  })
  .onRequest(methods.agent.session.prompt, async () => ({ stopReason: "end_turn" }))
  .onNotification(methods.agent.session.cancel, async () => {})
  .connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
`

// interopNode returns the interop directory and the node to run with,
// having checked both; it skips or fails as the package comment says.
func interopNode(t *testing.T) (dir, node string) {
	t.Helper()
	dir = os.Getenv("AGENT_PROTOCOLS_INTEROP_DIR")
	if dir == "" {
		if os.Getenv("AGENT_PROTOCOLS_INTEROP") == "require" {
			t.Fatal("AGENT_PROTOCOLS_INTEROP=require but AGENT_PROTOCOLS_INTEROP_DIR is unset")
		}
		t.Skip("AGENT_PROTOCOLS_INTEROP_DIR unset (a directory whose node_modules holds @agentclientprotocol/sdk 2.4.x and acp-sdk-1 = 1.5.x)")
	}
	node = os.Getenv("AGENT_PROTOCOLS_NODE")
	if node == "" {
		node = "node"
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("AGENT_PROTOCOLS_NODE %q: %v", node, err)
	}
	major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < 22 {
		t.Fatalf("node %q is %s; the interop tests need 22 or later (set AGENT_PROTOCOLS_NODE)", node, strings.TrimSpace(string(out)))
	}
	return dir, node
}

// requirePackage fails unless dir's node_modules/name is
// @agentclientprotocol/sdk of a version starting with prefix.
func requirePackage(t *testing.T, dir, name, prefix string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", name, "package.json"))
	if err != nil {
		t.Fatalf("AGENT_PROTOCOLS_INTEROP_DIR: %v", err)
	}
	var pkg struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if json.Unmarshal(b, &pkg) != nil || pkg.Name != "@agentclientprotocol/sdk" || !strings.HasPrefix(pkg.Version, prefix) {
		t.Fatalf("AGENT_PROTOCOLS_INTEROP_DIR: node_modules/%s is %s %s, want @agentclientprotocol/sdk %sx", name, pkg.Name, pkg.Version, prefix)
	}
}

// TestACPChainTypeScriptAgent1 puts an agent on @agentclientprotocol/sdk
// 1.5 behind the proxy under the _proxy/* revision.
func TestACPChainTypeScriptAgent1(t *testing.T) {
	dir, node := interopNode(t)
	requirePackage(t, dir, "acp-sdk-1", "1.5.")
	runTypeScriptChain(t, dir, node, acp.Connected, tsAgent1, func(agentID string) map[string]any {
		return map[string]any{"server": "agent-protocols-connector", "agentId": agentID, "signer": agentID, "disconnect": map[string]any{}}
	})
}

// TestACPChainTypeScriptAgent2 puts an agent on @agentclientprotocol/sdk
// 2.4 behind the proxy under the proxy/* revision.
func TestACPChainTypeScriptAgent2(t *testing.T) {
	dir, node := interopNode(t)
	requirePackage(t, dir, "@agentclientprotocol/sdk", "2.4.")
	runTypeScriptChain(t, dir, node, acp.Stateless, tsAgent2, func(agentID string) map[string]any {
		return map[string]any{"agentId": agentID, "signer": agentID, "sent": "sent", "subscriptionId": "listen-1", "cancelled": float64(-32800)}
	})
}

// runTypeScriptChain runs script (an agent) with node behind the proxy,
// the test playing the client and a conductor of revision rev; the
// session/new answer must carry 27 tools and the _meta want gives
// (the room id aside, which must be present).
func runTypeScriptChain(t *testing.T, dir, node string, rev acp.Revision, script string, want func(agentID string) map[string]any) {
	h := newTestHost(t, nil)
	cfg, _ := acpConfig(t, h)
	_, whoami, _ := runCmd(t, nil, "whoami", "--config", cfg)
	agentID, _, _ := strings.Cut(whoami, "\n")

	tmp := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(tmp, "node_modules")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tmp, "agent.mjs")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, path)
	nodeIn, _ := cmd.StdinPipe()
	nodeOut, _ := cmd.StdoutPipe()
	var nodeErr lockedBuffer
	cmd.Stderr = &nodeErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nodeIn.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("node stderr:\n%s", nodeErr.String())
		}
	})

	ch := startACP(t, cfg, rev)
	client := bridge(t, ch, nodeIn, nodeOut)
	next := func() *wireMsg {
		t.Helper()
		select {
		case w := <-client:
			return w
		case <-time.After(60 * time.Second):
			t.Fatalf("nothing reached the client\nconnector:\n%s\nnode:\n%s", ch.stderr.String(), nodeErr.String())
			return nil
		}
	}

	ch.clientRequest(1, rev.ProxyInitialize(), map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	init := next().resp()
	var ir struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	if init == nil || init.Error != nil || json.Unmarshal(init.Result, &ir) != nil || ir.ProtocolVersion != 1 {
		t.Fatalf("%s: %+v", rev.ProxyInitialize(), init)
	}
	ch.clientRequest(2, "session/new", map[string]any{"cwd": "/tmp", "mcpServers": []any{}, "_meta": map[string]any{"host": h.url}})
	r := next().resp()
	if r == nil || r.Error != nil {
		t.Fatalf("session/new: %+v", r)
	}
	var res struct {
		SessionID string         `json:"sessionId"`
		Meta      map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	if id, _ := res.Meta["roomId"].(string); id == "" {
		t.Fatalf("no room created: %s", r.Result)
	}
	delete(res.Meta, "roomId")
	b, _ := json.Marshal(map[string]any{"sessionId": res.SessionID, "_meta": res.Meta})
	jsonEq(t, "session/new through the TypeScript agent", b, map[string]any{"sessionId": "ts-27", "_meta": want(agentID)})
	ch.stop()
}

// bridge is the conductor between the proxy and a real agent process:
// the proxy's wrapped messages go to the agent unwrapped (its requests
// under conductor ids), the agent's messages come back wrapped (its
// requests under "n-" ids), and the agent's $/cancel_request becomes a
// plain one naming the wrapped request, as conductors cancel hop by hop;
// everything else is for the client.
func bridge(t *testing.T, ch *acpChain, agentIn io.Writer, agentOut io.Reader) chan *wireMsg {
	client := make(chan *wireMsg, 64)
	wrapper := ch.rev.ProxySuccessor()
	var mu sync.Mutex
	toProxy := map[string]jsonrpc.ID{} // conductor id → the proxy's request id
	toAgent := map[string]any{}        // "n-…" → the agent's request id
	n := 0
	var wmu sync.Mutex
	writeAgent := func(v any) {
		b, _ := json.Marshal(v)
		wmu.Lock()
		defer wmu.Unlock()
		agentIn.Write(append(b, '\n'))
	}
	go func() {
		for w := range ch.misc {
			switch {
			case w.req() != nil && w.req().Method == wrapper:
				m := map[string]any{"jsonrpc": "2.0", "method": w.inner}
				if len(w.params) > 0 {
					m["params"] = w.params
				}
				if w.req().IsCall() {
					mu.Lock()
					n++
					id := fmt.Sprintf("c-%d", n)
					toProxy[id] = w.req().ID
					mu.Unlock()
					m["id"] = id
				}
				writeAgent(m)
			case w.resp() != nil && strings.HasPrefix(fmt.Sprint(w.resp().ID.Raw()), "n-"):
				mu.Lock()
				orig := toAgent[idString(w.resp().ID)]
				mu.Unlock()
				b, _ := jsonrpc.EncodeMessage(w.resp())
				var m map[string]any
				json.Unmarshal(b, &m)
				m["id"] = orig
				writeAgent(m)
			default:
				client <- w
			}
		}
	}()
	go func() {
		sc := bufio.NewScanner(agentOut)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				t.Errorf("agent wrote %q", sc.Text())
				continue
			}
			var method string
			json.Unmarshal(m["method"], &method)
			if method == "" { // an answer to a conductor request
				var id string
				json.Unmarshal(m["id"], &id)
				mu.Lock()
				pid, ok := toProxy[id]
				delete(toProxy, id)
				mu.Unlock()
				if !ok {
					t.Errorf("agent answered unknown id %s", m["id"])
					continue
				}
				out := map[string]any{"jsonrpc": "2.0", "id": pid.Raw()}
				if e, ok := m["error"]; ok {
					out["error"] = e
				} else {
					out["result"] = m["result"]
				}
				ch.send(out)
				continue
			}
			if method == "$/cancel_request" {
				var p struct {
					RequestID any `json:"requestId"`
				}
				json.Unmarshal(m["params"], &p)
				ch.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": map[string]any{"requestId": fmt.Sprintf("n-%v", p.RequestID)}})
				continue
			}
			body := map[string]any{"method": method}
			if p, ok := m["params"]; ok {
				body["params"] = p
			}
			out := map[string]any{"jsonrpc": "2.0", "method": wrapper, "params": body}
			if rawID, ok := m["id"]; ok {
				var orig any
				json.Unmarshal(rawID, &orig)
				id := fmt.Sprintf("n-%v", orig)
				mu.Lock()
				toAgent[id] = orig
				mu.Unlock()
				ch.mu.Lock()
				ch.methods[id] = method
				ch.mu.Unlock()
				out["id"] = id
			}
			ch.send(out)
		}
	}()
	return client
}

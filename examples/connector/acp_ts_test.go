package main

import (
	"bufio"
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

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// tsAgent is an ACP agent written against the official TypeScript SDK
// (@agentclientprotocol/sdk, AgentSideConnection): it advertises
// mcpCapabilities.acp and, in session/new, uses the acp server the proxy
// declared — mcp/connect, MCP initialize, tools/list, a tools/call,
// mcp/disconnect — and reports what it saw in the session answer.
const tsAgent = `
import * as acp from "@agentclientprotocol/sdk";
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
    const init = await c.request("mcp/message", { connectionId, method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "ts-agent", version: "1" } } });
    await c.notify("mcp/message", { connectionId, method: "notifications/initialized" });
    const list = await c.request("mcp/message", { connectionId, method: "tools/list", params: {} });
    const who = await c.request("mcp/message", { connectionId, method: "tools/call",
      params: { name: "agent_protocols_identity_current", arguments: {} } });
    const bye = await c.request("mcp/disconnect", { connectionId });
    return { sessionId: "ts-" + list.tools.length,
      _meta: { server: init.serverInfo.name, agentId: who.structuredContent.agent_id, disconnect: bye } };
  },
  async authenticate() { return {}; },
  async prompt() { return { stopReason: "end_turn" }; },
  async cancel() {},
}), stream);
`

// tsSDKDir is a directory holding node_modules/@agentclientprotocol/sdk
// (1.5.0), named by ACP_TS_SDK_DIR; tests never download it.
func tsSDKDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ACP_TS_SDK_DIR")
	if dir == "" {
		t.Skip("ACP_TS_SDK_DIR unset (a directory where `npm install @agentclientprotocol/sdk@1.5.0` ran)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node on PATH")
	}
	b, err := os.ReadFile(filepath.Join(dir, "node_modules/@agentclientprotocol/sdk/package.json"))
	if err != nil {
		t.Fatalf("ACP_TS_SDK_DIR: %v", err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(b, &pkg) != nil || pkg.Version != "1.5.0" {
		t.Fatalf("ACP_TS_SDK_DIR holds @agentclientprotocol/sdk %q, want 1.5.0", pkg.Version)
	}
	return dir
}

// TestACPChainTypeScriptAgent puts the official TypeScript SDK's agent
// behind the proxy. The test plays the client and a conductor that
// unwraps the proxy's _proxy/successor messages for the agent and wraps
// the agent's messages (with its own ids) as the Rust conductor does.
func TestACPChainTypeScriptAgent(t *testing.T) {
	sdk := tsSDKDir(t)
	h := newTestHost(t, nil)
	cfg, _ := acpConfig(t, h)
	_, whoami, _ := runCmd(t, nil, "whoami", "--config", cfg)
	agentID, _, _ := strings.Cut(whoami, "\n")

	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(sdk, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "agent.mjs")
	if err := os.WriteFile(script, []byte(tsAgent), 0o600); err != nil {
		t.Fatal(err)
	}
	node := exec.Command("node", script)
	nodeIn, _ := node.StdinPipe()
	nodeOut, _ := node.StdoutPipe()
	var nodeErr lockedBuffer
	node.Stderr = &nodeErr
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nodeIn.Close()
		done := make(chan struct{})
		go func() { node.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			node.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("node stderr:\n%s", nodeErr.String())
		}
	})

	ch := startACP(t, cfg)
	client := bridge(t, ch, nodeIn, nodeOut)
	next := func() *wireMsg {
		t.Helper()
		select {
		case w := <-client:
			return w
		case <-time.After(30 * time.Second):
			t.Fatalf("nothing reached the client\nconnector:\n%s\nnode:\n%s", ch.stderr.String(), nodeErr.String())
			return nil
		}
	}

	ch.clientRequest(1, "_proxy/initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	init := next().resp()
	if init == nil || init.Error != nil {
		t.Fatalf("initialize: %+v", init)
	}
	ch.clientRequest(2, "session/new", map[string]any{"cwd": "/tmp", "mcpServers": []any{}})
	r := next().resp()
	if r == nil || r.Error != nil {
		t.Fatalf("session/new: %+v", r)
	}
	jsonEq(t, "session/new through the TypeScript agent", r.Result, map[string]any{
		"sessionId": "ts-27",
		"_meta":     map[string]any{"server": "agent-protocols-connector", "agentId": agentID, "disconnect": map[string]any{}},
	})
	ch.stop()
}

// bridge is the conductor between the proxy and a real agent process:
// the proxy's _proxy/successor messages go to the agent unwrapped (its
// requests under conductor ids), the agent's messages come back wrapped
// (its requests under "n-" ids); everything else is for the client.
func bridge(t *testing.T, ch *acpChain, agentIn io.Writer, agentOut io.Reader) chan *wireMsg {
	client := make(chan *wireMsg, 64)
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
			case w.req() != nil && w.req().Method == "_proxy/successor":
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
			body := map[string]any{"method": method}
			if p, ok := m["params"]; ok {
				body["params"] = p
			}
			out := map[string]any{"jsonrpc": "2.0", "method": "_proxy/successor", "params": body}
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

package interop

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentprotocols/go-sdk/connector"
)

// mcpClients are the official TypeScript MCP clients the connector must
// serve, each in the era it negotiates: the 1.x SDK speaks the 2025
// handshake (initialize), the 2.x client pinned to 2026-07-28 or in auto
// mode speaks server/discover and no session.
var mcpClients = []struct {
	name        string
	sdk         string // the client script's library: sdk-1 or client-2
	negotiation string // legacy, auto or the pinned version
	version     string // the protocol version the session must end up with
}{
	{"sdk-1.32.2", "sdk-1", "legacy", "2025-11-25"},
	{"client-2.4.0-pin-2026-07-28", "client-2", "2026-07-28", "2026-07-28"},
	{"client-2.4.0-auto", "client-2", "auto", "2026-07-28"},
}

// mcpReport is what clients/mcp.mjs prints.
type mcpReport struct {
	ProtocolVersion string   `json:"protocolVersion"`
	Tools           []string `json:"tools"`
	OutputSchemas   int      `json:"outputSchemas"`
	AgentID         string   `json:"agentId"`
	RoomID          string   `json:"roomId"`
	Sent            struct {
		Status string `json:"status"`
		Seq    int64  `json:"seq"`
	} `json:"sent"`
	ReadBack bool `json:"readBack"`
}

// TestMCPClients: each official TypeScript MCP client, over stdio and
// over Streamable HTTP, lists all the tools with the SDK's own validation
// of the result (an outputSchema whose root is not "object" makes the
// 2025-era clients throw), calls a read tool, creates a room and sends a
// signed message into it, and reads the message back; every
// structuredContent is checked by the SDK against the tool's
// outputSchema.
func TestMCPClients(t *testing.T) {
	c := needClients(t)
	origin := startHost(t)
	var want []string
	for _, tl := range connector.Tools() {
		want = append(want, tl.Name)
	}
	slices.Sort(want)

	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			for _, mc := range mcpClients {
				t.Run(mc.name, func(t *testing.T) {
					a := newAgent(t, origin)
					args := map[string]any{"sdk": mc.sdk, "negotiation": mc.negotiation, "transport": transport, "host": origin}
					if transport == "stdio" {
						args["command"] = program(t, connectorPkg)
						args["args"] = []string{"serve", "--config", a.config}
					} else {
						args["url"], args["token"] = serveHTTP(t, a.config, nil, "127.0.0.1:0")
					}
					arg, _ := json.Marshal(args)
					out := c.runNode(t, "mcp.mjs", string(arg))
					var r mcpReport
					if err := json.Unmarshal(out, &r); err != nil {
						t.Fatalf("client report %q: %v", out, err)
					}
					if r.ProtocolVersion != mc.version {
						t.Errorf("negotiated %q, want %q", r.ProtocolVersion, mc.version)
					}
					got := slices.Sorted(slices.Values(r.Tools))
					if !slices.Equal(got, want) {
						t.Errorf("tools/list: %d tools %v, want the %d of connector.Tools()", len(got), got, len(want))
					}
					if r.OutputSchemas != len(want) {
						t.Errorf("%d tools carry an outputSchema, want all %d", r.OutputSchemas, len(want))
					}
					if r.AgentID != a.id {
						t.Errorf("identity_current: agent %q, want %q", r.AgentID, a.id)
					}
					if r.Sent.Status != "sent" || r.Sent.Seq < 1 || !r.ReadBack {
						t.Errorf("room_send_message into %s: %+v, read back %v", r.RoomID, r.Sent, r.ReadBack)
					}
				})
			}
		})
	}
}

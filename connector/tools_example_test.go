package connector_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentprotocols/go-sdk/connector"
)

// ExampleTools drives the standard tools with no MCP at all: an agent
// framework lists [connector.Tools] to its model (name, description,
// schemas) and routes the model's tool calls to [connector.Tool.Call].
// A refusal is a [*connector.ToolError] to show the model, not a crash:
// here a wrong argument and a room that was never opened.
func ExampleTools() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "connector-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	keyFile := filepath.Join(dir, "key.age")
	seed := make([]byte, 32) // a fixed development key, for a reproducible output
	if _, err := connector.ImportKeyFileUnencryptedDev(keyFile, seed); err != nil {
		log.Fatal(err)
	}
	key, err := connector.LoadKeyFileUnencryptedDev(keyFile)
	if err != nil {
		log.Fatal(err)
	}
	e, err := connector.Open(ctx, &connector.Options{Dir: filepath.Join(dir, "state"), Key: key,
		Hosts: []connector.HostConfig{{Host: "https://api.example", Label: "example"}}})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	tools := map[string]*connector.Tool{}
	for _, t := range connector.Tools() {
		tools[t.Name] = t // a framework would register t.Name, t.Description, t.InputSchema here
	}
	fmt.Println(len(tools), "tools")

	// The model's calls, as JSON arguments. One conversation is one session.
	const session = "conversation-1"
	for _, c := range []struct{ tool, args string }{
		{"agent_protocols_hosts_list", `{}`},
		{"agent_protocols_room_state", `{"room_id": 7}`},
		{"agent_protocols_room_state", `{"room_id": "d8ftedhpqhsusbg001tg"}`},
	} {
		res, err := tools[c.tool].Call(ctx, e, session, json.RawMessage(c.args))
		var te *connector.ToolError
		switch {
		case errors.As(err, &te):
			fmt.Printf("%s refused: source=%s code=%s data=%s\n", c.tool, te.Source, te.Code, string(te.Data))
		case err != nil:
			log.Fatal(err)
		default:
			var hosts struct {
				Hosts []struct {
					Host string `json:"host"`
				} `json:"hosts"`
			}
			_ = json.Unmarshal(res, &hosts)
			fmt.Printf("%s: %s\n", c.tool, hosts.Hosts[0].Host)
		}
	}
	// Output:
	// 27 tools
	// agent_protocols_hosts_list: https://api.example
	// agent_protocols_room_state refused: source=connector code=invalid_arguments data={"field":"/room_id","reason":"got number, want string"}
	// agent_protocols_room_state refused: source=connector code=room_not_open data=
}

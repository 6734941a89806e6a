package mcptools_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/connector"
	"github.com/agentprotocols/go-sdk/connector/mcptools"
)

// ExampleNewServer serves an engine's tools and resources over MCP. A
// program would run srv.MCP() on mcp.StdioTransport; here an in-memory
// client connects and lists what it is offered.
func ExampleNewServer() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "mcptools-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	keyFile := filepath.Join(dir, "key.dev")
	if _, err := connector.ImportKeyFileUnencryptedDev(keyFile, make([]byte, 32)); err != nil {
		log.Fatal(err)
	}
	key, err := connector.LoadKeyFileUnencryptedDev(keyFile)
	if err != nil {
		log.Fatal(err)
	}
	// The Notifier turns the engine's change reports into
	// notifications/resources/updated for subscribed clients.
	n := mcptools.NewNotifier()
	e, err := connector.Open(ctx, &connector.Options{Dir: filepath.Join(dir, "state"), Key: key,
		Hosts: []connector.HostConfig{{Host: "https://api.example", Label: "example"}}, Notify: n.Notify})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	srv := mcptools.NewServer(e, nil)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go n.Run(ctx, srv.MCP())

	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	client, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	tools, err := client.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	templates, err := client.ListResourceTemplates(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(tools.Tools), "tools, the first", tools.Tools[0].Name)
	fmt.Println(len(templates.ResourceTemplates), "per-room resources, the first", templates.ResourceTemplates[0].URITemplate)
	// Output:
	// 27 tools, the first agent_protocols_agent_status_get
	// 5 per-room resources, the first agent-protocols://rooms/{room_id}
}

package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/connector"
)

// TestRun: the example serves the tools and resources to an MCP client,
// which creates a room on a host and reads it back as a resource.
func TestRun(t *testing.T) {
	_, host := adphosttest.NewServer(t, nil)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.dev")
	if _, err := connector.ImportKeyFileUnencryptedDev(keyFile, make([]byte, 32)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, st, keyFile, true, filepath.Join(dir, "state"), host.URL, slog.New(slog.DiscardHandler))
	}()
	client, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	res, err := client.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "room_create", Arguments: map[string]any{
		"host": host.URL, "topic": "hello", "visibility": "public", "start_time": now, "end_time": now + 3_600_000}})
	if err != nil || res.IsError {
		t.Fatalf("room_create: %v %+v", err, res)
	}
	var created struct {
		Room struct {
			RoomID string `json:"room_id"`
		} `json:"room"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &created); err != nil || created.Room.RoomID == "" {
		t.Fatalf("room_create: %s", b)
	}
	rr, err := client.ReadResource(ctx, &mcp.ReadResourceParams{URI: connector.RoomURI(created.Room.RoomID)})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, `"topic":"hello"`) {
		t.Fatalf("room resource: %v %+v", err, rr)
	}
	client.Close()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

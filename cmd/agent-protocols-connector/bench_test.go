package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/connector"
)

// reportLatency adds p50/p99 (µs) of the per-call latencies to the
// benchmark's output; run with -benchtime=1000x for "over 1,000 calls".
func reportLatency(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	q := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// BenchmarkToolsCall measures tools/call latency through an in-memory
// MCP client: room_state (a local read) and room_send_message (a signed
// write submitted to the host and applied from the accepted record).
func BenchmarkToolsCall(b *testing.B) {
	h := newTestHost(b, &adphost.Options{RateLimits: adphost.Unlimited()})
	c := newConnector(b, "bench", h)
	roomID := createRoom(b, c, h, "public")

	// The floor: a tool whose engine call touches no storage or network,
	// so the figure is the MCP layer (transport, validation, encoding).
	b.Run("identity_current", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			t0 := time.Now()
			res, err := c.callRaw("identity_current", nil)
			lat = append(lat, time.Since(t0))
			if err != nil || res.IsError {
				b.Fatalf("identity_current: %v %v", err, res)
			}
		}
		reportLatency(b, lat)
	})
	b.Run("room_state", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		args := map[string]any{"room_id": roomID}
		for b.Loop() {
			t0 := time.Now()
			res, err := c.callRaw("room_state", args)
			lat = append(lat, time.Since(t0))
			if err != nil || res.IsError {
				b.Fatalf("room_state: %v %v", err, res)
			}
		}
		reportLatency(b, lat)
	})
	b.Run("room_send_message", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		args := map[string]any{"room_id": roomID, "content": "benchmark message"}
		for b.Loop() {
			t0 := time.Now()
			res := c.call("room_send_message", args)
			lat = append(lat, time.Since(t0))
			if res["status"] != "sent" {
				b.Fatalf("send: %v", res)
			}
		}
		reportLatency(b, lat)
	})
}

// BenchmarkMentionToInbox measures the time from a record's acceptance at
// the host (its received_at, which the inbox item's created_at carries)
// to the item being returned by bob's waiting inbox_next.
func BenchmarkMentionToInbox(b *testing.B) {
	h := newTestHost(b, &adphost.Options{RateLimits: adphost.Unlimited()})
	alice := newConnector(b, "alice", h)
	bob := newConnector(b, "bob", h)
	roomID := createRoom(b, alice, h, "public")
	bob.call("room_open", map[string]any{"host": h.url, "room_id": roomID})
	bob.call("room_join", map[string]any{"room_id": roomID, "role": "speaker"})
	alice.call("room_state", map[string]any{"room_id": roomID, "refresh": true})

	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		got := make(chan map[string]any, 1)
		go func() {
			res := bob.call("inbox_next", map[string]any{"room_id": roomID, "kinds": []string{"room.mention"}, "wait_ms": 10000})
			got <- res
		}()
		alice.call("room_send_message", map[string]any{"room_id": roomID, "content": "ping", "mentions": []string{bob.agentID}})
		res := <-got
		now := time.Now()
		item, _ := get(res, "items.0").(map[string]any)
		if item == nil {
			b.Fatalf("inbox_next: %v", res)
		}
		lat = append(lat, now.Sub(time.UnixMilli(num(item["created_at"]))))
		bob.call("inbox_ack", map[string]any{"ids": []string{item["id"].(string)}, "action": "handled"})
	}
	reportLatency(b, lat)
}

// BenchmarkConnectorBinary measures tools/call latency against the built
// program, as a client meets it: room_state (a local read) and
// room_send_message (a signed write) over stdio (the go-sdk's
// CommandTransport) and over --http (its Streamable HTTP client), MCP
// 2025-11-25. CONNECTOR_BENCH_BIN names the program (default: this
// command, built). With CONNECTOR_BENCH_BASE naming a second build, both
// run side by side against the same host and their calls alternate, one
// of each per iteration, so both see the same machine; the baseline's
// figures are reported as base-p50-µs and base-p99-µs:
//
//	go test -c -o /tmp/conn.test ./examples/connector
//	CONNECTOR_BENCH_BASE=/tmp/before CONNECTOR_BENCH_BIN=/tmp/after \
//	  /tmp/conn.test -test.run '^$' -test.bench ConnectorBinary -test.benchtime 300x -test.count 5
func BenchmarkConnectorBinary(b *testing.B) {
	bin := os.Getenv("CONNECTOR_BENCH_BIN")
	if bin == "" {
		bin = buildConnector(b)
	}
	bins := []string{bin}
	if base := os.Getenv("CONNECTOR_BENCH_BASE"); base != "" {
		bins = append(bins, base)
	}
	h := newTestHost(b, &adphost.Options{RateLimits: adphost.Unlimited()})
	for _, tr := range []string{"stdio", "http"} {
		b.Run(tr, func(b *testing.B) {
			ctx := context.Background()
			var clients []*mcp.ClientSession
			var rooms []string
			for _, bin := range bins {
				cs := connectBinary(b, bin, tr, h)
				now := time.Now().UnixMilli()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + "room_create", Arguments: map[string]any{
					"host": h.url, "topic": "bench", "visibility": "public", "start_time": now - 60_000, "end_time": now + 3_600_000}})
				if err != nil || res.IsError {
					b.Fatalf("room_create: %v %+v", err, res)
				}
				roomID, _ := get(structured(b, res), "room.room_id").(string)
				clients, rooms = append(clients, cs), append(rooms, roomID)
			}
			for _, call := range []struct {
				tool string
				args map[string]any
			}{
				{"room_state", map[string]any{}},
				{"room_send_message", map[string]any{"content": "benchmark message"}},
			} {
				b.Run(call.tool, func(b *testing.B) {
					lat := make([][]time.Duration, len(clients))
					n := 0
					for b.Loop() {
						for j := range clients {
							k := (j + n) % len(clients) // alternate which goes first
							args := map[string]any{"room_id": rooms[k]}
							for a, v := range call.args {
								args[a] = v
							}
							t0 := time.Now()
							res, err := clients[k].CallTool(ctx, &mcp.CallToolParams{Name: connector.ToolPrefix + call.tool, Arguments: args})
							lat[k] = append(lat[k], time.Since(t0))
							if err != nil || res.IsError {
								b.Fatalf("%s: %v %+v", call.tool, err, res)
							}
						}
						n++
					}
					reportLatency(b, lat[0])
					if len(lat) > 1 {
						slices.Sort(lat[1])
						q := func(p float64) float64 { return float64(lat[1][int(p*float64(len(lat[1])-1))].Microseconds()) }
						b.ReportMetric(q(0.50), "base-p50-µs")
						b.ReportMetric(q(0.99), "base-p99-µs")
					}
				})
			}
		})
	}
}

// buildConnector builds this command into a temporary directory.
func buildConnector(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "connector")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// connectBinary starts bin with a fresh development key allowing h, and
// connects the go-sdk client to it over tr ("stdio" or "http").
func connectBinary(b *testing.B, bin, tr string, h *testHost) *mcp.ClientSession {
	dir := b.TempDir()
	cfg := filepath.Join(dir, "connector.json")
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"keygen", "--config", cfg, "--unencrypted-dev"}, nil, io.Discard, &stderr); code != exitOK {
		b.Fatalf("keygen: %s", stderr.String())
	}
	conf, _ := json.Marshal(map[string]any{"hosts": []map[string]any{{"host": h.url}}, "key_unencrypted_dev": true,
		"allow_loopback_http": true, "writes_per_minute": 1_000_000, "token_file": "http-token"})
	if err := os.WriteFile(cfg, conf, 0o600); err != nil {
		b.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	opts := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	ctx := context.Background()
	var t mcp.Transport
	if tr == "stdio" {
		t = &mcp.CommandTransport{Command: exec.Command(bin, "serve", "--config", cfg)}
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		cmd := exec.Command(bin, "serve", "--config", cfg, "--http", addr)
		served := &lineWaiter{want: "serving MCP", ready: make(chan struct{})}
		cmd.Stderr = served
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
		select {
		case <-served.ready:
		case <-time.After(30 * time.Second):
			b.Fatal("the connector did not start serving HTTP")
		}
		tok, err := os.ReadFile(filepath.Join(dir, "http-token"))
		if err != nil {
			b.Fatal(err)
		}
		t = &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/",
			HTTPClient: &http.Client{Transport: bearer{strings.TrimSpace(string(tok)), http.DefaultTransport}}, MaxRetries: -1}
	}
	cs, err := client.Connect(ctx, t, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// lineWaiter closes ready once the output written to it contains want.
type lineWaiter struct {
	mu    sync.Mutex
	buf   []byte
	want  string
	ready chan struct{}
	done  bool
}

func (w *lineWaiter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.buf = append(w.buf, p...)
		if bytes.Contains(w.buf, []byte(w.want)) {
			w.done = true
			close(w.ready)
		}
	}
	return len(p), nil
}

package main

import (
	"slices"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adphost"
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

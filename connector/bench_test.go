package connector

import (
	"context"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
)

// BenchmarkWrite compares one signed message write through the engine
// (nonce and outbox entry in one flushed state-log frame, submit, the
// admitted record and outbox removal in a frame whose flush is deferred)
// with the bare adp.Client write it wraps, against the same loopback
// reference host.
func BenchmarkWrite(b *testing.B) {
	_, srv := testHost(b)
	ctx := context.Background()
	b.Run("adp.Client", func(b *testing.B) {
		c, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: testKey(b, "carol").k, AllowLoopbackHTTP: true})
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now().UnixMilli()
		rec, err := c.CreateRoom(ctx, adp.RoomCreate{Topic: "bench", Visibility: adp.VisibilityPublic, StartTime: now - 1000, EndTime: now + 3600_000})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := c.SendMessage(ctx, rec.RoomID, adp.Message{ContentType: "text/plain", Content: adp.TextContent("bench")}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("engine", func(b *testing.B) {
		e := openTest(b, b.TempDir(), testKey(b, "dave"), srv.URL, func(o *Options) { o.Logger = nil; o.NoSubscribe = true })
		defer e.Close()
		room := createRoom(b, e, srv.URL)
		b.ResetTimer()
		for b.Loop() {
			r, err := e.SendMessage(ctx, "s", SendMessageInput{RoomID: room, Content: "bench"})
			if err != nil || r.Status != StatusSent {
				b.Fatal(r, err)
			}
		}
	})
}

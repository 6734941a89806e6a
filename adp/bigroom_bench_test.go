package adp_test

import (
	"context"
	"crypto/ed25519"
	"net/http"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
)

// BenchmarkHistoryPagingBig reads a room of 505 messages of 64 KiB with 32
// mentions (about 34 MB) through Client.Events from a host that budgets
// its pages by count only. "default" is a default client: its first page
// (500 records) is over the 32 MiB bound, so it is read once in vain and
// asked for again with 250 records; "fits" asks for 250 records from the
// start, the floor of what shrinking costs. Before page shrinking the
// default client could not read this room at all.
func BenchmarkHistoryPagingBig(b *testing.B) {
	_, srv := adphosttest.NewUnbudgetedServer(b, &adphost.Options{RateLimits: adphost.Unlimited(), Heartbeat: -1})
	ctx := context.Background()
	newClient := func(name string, pageSize int) *adp.Client {
		c, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: hostileKey(name), AllowLoopbackHTTP: true,
			HTTPClient: &http.Client{Transport: srv.Client().Transport}, PageSize: pageSize})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	alice := newClient("alice", 0)
	now := time.Now()
	rec, err := alice.CreateRoom(ctx, adp.RoomCreate{Topic: "big", Visibility: adp.VisibilityPublic, StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
	if err != nil {
		b.Fatal(err)
	}
	if err := adphosttest.FillBigRoom(ctx, alice, rec.RoomID, 505); err != nil {
		b.Fatal(err)
	}
	var bytes int64
	for r, err := range newClient("probe", 0).Events(ctx, rec.RoomID, 0) {
		if err != nil {
			b.Fatal(err)
		}
		bytes += int64(len(r.AppendJSON(nil)))
	}
	for _, c := range []struct {
		name     string
		pageSize int
	}{{"default", 0}, {"fits", 250}} {
		b.Run(c.name, func(b *testing.B) {
			floor := floorNs(200)
			for b.Loop() {
				n := 0
				for _, err := range newClient("reader", c.pageSize).Events(ctx, rec.RoomID, 0) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != 506 {
					b.Fatalf("%d records", n)
				}
			}
			rate := float64(506*b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "records/s")
			b.ReportMetric(float64(bytes*int64(b.N))/b.Elapsed().Seconds()/1e6, "MB/s")
			// x-floor: records per second over single-goroutine Ed25519
			// verifications per second, measured before and after.
			b.ReportMetric(rate*(floor+floorNs(200))/2/1e9, "x-floor")
		})
	}
}

// floorNs is the mean time of one crypto/ed25519.Verify of a 400-byte
// message, in ns, over n runs.
func floorNs(n int) float64 {
	pub, priv, _ := ed25519.GenerateKey(nil)
	msg := make([]byte, 400)
	sig := ed25519.Sign(priv, msg)
	start := time.Now()
	for range n {
		ed25519.Verify(pub, msg, sig)
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

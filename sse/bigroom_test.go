package sse_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/internal/raceflag"
	"github.com/agentprotocols/go-sdk/sse"
)

// TestFollowBackfillsBigRoom: a page the client cannot take is read in
// smaller pages, through
// sse.Follow: the backfill of a room of 505 messages of 64 KiB with 32
// mentions each, on a host that budgets its pages by count only, delivers
// every record (the adp.Client history shrinks its pages).
// 507 records: the room.create, 505 messages, the follower's join.
func TestFollowBackfillsBigRoom(t *testing.T) {
	if testing.Short() || raceflag.Enabled {
		t.Skip("writes 34 MB of records; no concurrency to check")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, srv := adphosttest.NewUnbudgetedServer(t, &adphost.Options{RateLimits: adphost.Unlimited(), Heartbeat: -1})
	client := func(b byte) *adp.Client {
		c, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: key(t, b), AllowLoopbackHTTP: true, HTTPClient: srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	alice := client(1)
	now := time.Now()
	rec, err := alice.CreateRoom(ctx, adp.RoomCreate{Topic: "big", Visibility: adp.VisibilityPublic, StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if err := adphosttest.FillBigRoom(ctx, alice, rec.RoomID, 505); err != nil {
		t.Fatal(err)
	}
	carol := client(2)
	if _, err := carol.Join(ctx, rec.RoomID, adp.Join{Role: adp.RoleObserver}); err != nil {
		t.Fatal(err)
	}
	t.Logf("filled after %v", time.Since(now))
	// A fresh client of the same agent: its replica starts empty, so the
	// backfill reads the whole history.
	var n int64
	for it, err := range sse.Follow(ctx, &sse.Options{Client: client(2), RoomID: rec.RoomID}) {
		if err != nil {
			t.Fatalf("after %d records: %v", n, err)
		}
		if it.Kind == sse.KindError {
			t.Fatalf("after %d records: %v", n, it.Err)
		}
		if it.Kind == sse.KindRecord {
			if n++; it.Record.Seq != n {
				t.Fatalf("record %d has seq %d", n, it.Record.Seq)
			}
			if n == 507 {
				break
			}
		}
	}
}

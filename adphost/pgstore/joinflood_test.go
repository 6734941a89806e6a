package pgstore_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/pgtest"
	"github.com/agentprotocols/go-sdk/internal/raceflag"
)

// TestJoinFlood: on PostgreSQL, 5,000 join requests to a public room,
// from 500 applicants within their quota, do not hold up the creator's
// writes to the room (100 message writes spread over the flood, p99
// within 100 ms), and every page of the creator's list answers within
// 5 s: the pending bound is one indexed count outside the room's lock,
// and a page one indexed range. The machine is shared, so the best of
// three floods counts.
func TestJoinFlood(t *testing.T) {
	if testing.Short() || raceflag.Enabled {
		t.Skip("a flood of 5,000 requests, timed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	_, srv := adphosttest.NewServer(t, &adphost.Options{Store: open(t, pgtest.Database(t)), RateLimits: adphosttest.FloodLimits()})
	seed := sha256.Sum256([]byte("pgstore join flood creator"))
	creator, err := identity.NewKeyFromSeed(seed[:])
	if err != nil {
		t.Fatal(err)
	}
	c, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: creator, HTTPClient: srv.Client(), AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		now := time.Now()
		var rec *adp.Record
		rec, err = c.CreateRoom(ctx, adp.RoomCreate{Topic: "flooded", Visibility: adp.VisibilityPublic,
			StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
		if err != nil {
			t.Fatal(err)
		}
		f := adphosttest.JoinFlood{Requests: 5000, PerAgent: 10, Workers: 2, Writes: 100}
		var res adphosttest.JoinFloodResult
		if res, err = adphosttest.RunJoinFlood(ctx, srv.URL, srv.Client(), creator, rec.RoomID, f); err == nil {
			err = res.Check(f, 100*time.Millisecond, 5*time.Second)
		}
		t.Log(res)
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

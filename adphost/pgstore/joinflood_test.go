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
)

// TestJoinFlood: on PostgreSQL, a flood of join requests to a public
// room does not hold up the creator's writes to the room, nor its list of
// requests (adphosttest.CheckJoinFlood: 5,000 requests, a write p99
// within 100 ms, every page within 5 s): the pending bound is one indexed
// count outside the room's lock, and a page one indexed range.
func TestJoinFlood(t *testing.T) {
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
	adphosttest.CheckJoinFlood(t, func(ctx context.Context) (adphosttest.FloodTarget, error) {
		now := time.Now()
		rec, err := c.CreateRoom(ctx, adp.RoomCreate{Topic: "flooded", Visibility: adp.VisibilityPublic,
			StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
		if err != nil {
			return adphosttest.FloodTarget{}, err
		}
		return adphosttest.FloodTarget{Base: srv.URL, HTTPClient: srv.Client(), Creator: creator, Room: rec.RoomID}, nil
	})
}

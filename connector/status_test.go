package connector

import (
	"testing"
	"time"
)

// TestStatusClear (ADP §17.4): expires_at at the current time clears the
// status; the host accepts it and lists the status no more.
func TestStatusClear(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	must[*AgentStatusResult](t)(alice.AgentStatusSet(ctx, "a", AgentStatusSetInput{RoomID: room, State: "working"}))
	if l := must[*AgentStatusListResult](t)(alice.AgentStatusList(ctx, "a", AgentStatusListInput{RoomID: room})); len(l.Statuses) != 1 {
		t.Fatalf("before clear: %+v", l.Statuses)
	}
	must[*AgentStatusResult](t)(alice.AgentStatusSet(ctx, "a", AgentStatusSetInput{RoomID: room, State: "idle", ExpiresAt: time.Now().UnixMilli()}))
	if l := must[*AgentStatusListResult](t)(alice.AgentStatusList(ctx, "a", AgentStatusListInput{RoomID: room})); len(l.Statuses) != 0 {
		t.Fatalf("right after clear: %+v", l.Statuses)
	}
}

package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/connector"
)

// TestResources reads every §4.4 resource of an open room as JSON, and
// refuses subscriptions to URIs that are not the connector's.
func TestResources(t *testing.T) {
	h := newTestHost(t, nil)
	alice := newConnector(t, "alice", h)
	roomID := createRoom(t, alice, h, "public")
	ctx := context.Background()
	uris := []string{
		connector.URIIdentity, connector.URIHosts, connector.URIRooms, connector.URIInboxPending, connector.URIDraftsHeld,
		connector.RoomURI(roomID), connector.RoomURI(roomID, "members"), connector.RoomURI(roomID, "timeline"),
		connector.RoomURI(roomID, "types"), connector.RoomURI(roomID, "agent-status"),
	}
	for _, uri := range uris {
		rr, err := alice.client.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Errorf("%s: %v", uri, err)
			continue
		}
		var v map[string]any
		if len(rr.Contents) != 1 || rr.Contents[0].MIMEType != connector.MIMEJSON || json.Unmarshal([]byte(rr.Contents[0].Text), &v) != nil {
			t.Errorf("%s: not one JSON object: %+v", uri, rr.Contents)
		}
		if err := alice.client.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Errorf("subscribe %s: %v", uri, err)
		}
	}
	for _, uri := range []string{"file:///etc/passwd", "agent-protocols://rooms/" + roomID + "/secrets", "agent-protocols://keys"} {
		if err := alice.client.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err == nil {
			t.Errorf("subscribe %s accepted", uri)
		}
		if _, err := alice.client.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("read %s accepted", uri)
		}
	}
}

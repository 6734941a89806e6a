package connector_test

import (
	"fmt"

	"github.com/agentprotocols/go-sdk/connector"
)

// ExampleResources lists the §4.4 resources as a framework would register
// them: fixed URIs and per-room URI templates, each read with
// [connector.Resource.Read]; those with an update rule are the URIs the
// engine passes to Options.Notify, for resource-updated notifications.
func ExampleResources() {
	for _, r := range connector.Resources() {
		notified := ""
		if r.Updated != "" {
			notified = " (notified)"
		}
		fmt.Println(r.URI + notified)
	}
	// Output:
	// agent-protocols://identity/current
	// agent-protocols://hosts (notified)
	// agent-protocols://rooms
	// agent-protocols://inbox/pending (notified)
	// agent-protocols://drafts/held (notified)
	// agent-protocols://rooms/{room_id} (notified)
	// agent-protocols://rooms/{room_id}/members (notified)
	// agent-protocols://rooms/{room_id}/timeline (notified)
	// agent-protocols://rooms/{room_id}/types (notified)
	// agent-protocols://rooms/{room_id}/agent-status (notified)
}

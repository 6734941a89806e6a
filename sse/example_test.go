package sse_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/sse"
)

// Follow a room as one of its members: the ADP client pages the history,
// the live stream brings new records, and every record is verified before
// the loop sees it.
func ExampleFollow() {
	key, err := identity.GenerateKey(nil)
	if err != nil {
		log.Fatal(err)
	}
	client, err := adp.NewClient("https://api.al.ink", &adp.ClientOptions{Signer: key})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for item, err := range sse.Follow(ctx, &sse.Options{
		Client: client, // its origin, key, verified history and transport
		RoomID: "d8ftedhpqhsusbg001tg",
	}) {
		if errors.Is(err, adp.ErrMembershipRequired) {
			log.Fatal("no longer a member")
		}
		if err != nil {
			log.Fatal(err)
		}
		switch item.Kind {
		case sse.KindRecord:
			fmt.Println(item.Record.Seq, item.Record.Envelope.Type())
		case sse.KindAgentStatus:
			fmt.Println(item.AgentStatus.AgentID, "is", item.AgentStatus.State)
		case sse.KindError:
			log.Print(item.Err) // recovered: the subscription goes on
		}
	}
}

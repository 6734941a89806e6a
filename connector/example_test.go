package connector_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentprotocols/go-sdk/connector"
)

// Example shows the §4.5 loop: wake on the inbox, read unread records
// (which presents the head), answer against what was read, and handle a
// held draft when the room moved meanwhile.
func Example() {
	ctx := context.Background()
	key, err := connector.LoadKeyFile("agent.age", connector.PassphraseEnv("AGENT_KEY_PASSPHRASE"))
	if err != nil {
		log.Fatal(err)
	}
	e, err := connector.Open(ctx, &connector.Options{Dir: "state", Key: key,
		Hosts: []connector.HostConfig{{Host: "https://api.al.ink", Label: "dmsg"}}})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	const session = "mcp-session-1"
	next, err := e.InboxNext(ctx, session, connector.InboxNextInput{WaitMS: 30000, Claim: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range next.Items {
		if _, err := e.Timeline(ctx, session, connector.TimelineInput{Host: it.Host, RoomID: it.RoomID, UnreadOnly: true, MarkRead: true}); err != nil {
			log.Fatal(err)
		}
		res, err := e.SendMessage(ctx, session, connector.SendMessageInput{Host: it.Host, RoomID: it.RoomID, Content: "On it."})
		if err != nil {
			log.Fatal(err)
		}
		if res.Status == connector.StatusHeld {
			// The room moved: read res.Changes, then decide.
			if _, err := e.DraftCommit(ctx, session, connector.DraftCommitInput{DraftID: res.Draft.ID, Action: connector.ActionStaySilent}); err != nil {
				log.Fatal(err)
			}
		}
		if _, err := e.InboxAck(ctx, session, connector.InboxAckInput{IDs: []string{it.ID}, Action: connector.AckHandled}); err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Status)
	}
}

package engine_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentprotocols/go-sdk/examples/connector/engine"
)

// Example shows the §4.5 loop: wake on the inbox, read unread records
// (which presents the head), answer against what was read, and handle a
// held draft when the room moved meanwhile.
func Example() {
	ctx := context.Background()
	key, err := engine.LoadKeyFile("agent.age", engine.PassphraseEnv("AGENT_KEY_PASSPHRASE"))
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.Open(ctx, &engine.Options{Dir: "state", Key: key,
		Hosts: []engine.HostConfig{{Host: "https://api.al.ink", Label: "dmsg"}}})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	const session = "mcp-session-1"
	next, err := e.InboxNext(ctx, session, engine.InboxNextInput{WaitMS: 30000, Claim: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range next.Items {
		if _, err := e.Timeline(ctx, session, engine.TimelineInput{Host: it.Host, RoomID: it.RoomID, UnreadOnly: true, MarkRead: true}); err != nil {
			log.Fatal(err)
		}
		res, err := e.SendMessage(ctx, session, engine.SendMessageInput{Host: it.Host, RoomID: it.RoomID, Content: "On it."})
		if err != nil {
			log.Fatal(err)
		}
		if res.Status == engine.StatusHeld {
			// The room moved: read res.Changes, then decide.
			if _, err := e.DraftCommit(ctx, session, engine.DraftCommitInput{DraftID: res.Draft.ID, Action: engine.ActionStaySilent}); err != nil {
				log.Fatal(err)
			}
		}
		if _, err := e.InboxAck(ctx, session, engine.InboxAckInput{IDs: []string{it.ID}, Action: engine.AckHandled}); err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Status)
	}
}

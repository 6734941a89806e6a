package adp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// A host accepts a room.create and a message, and refuses a second message
// that was based on the superseded head.
func Example() {
	ctx := context.Background()
	now := time.UnixMilli(1779753600000)
	clock := func() time.Time { return now }
	agent := func(seed byte) *envelope.Author {
		key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))
		if err != nil {
			log.Fatal(err)
		}
		return &envelope.Author{Signer: key, Nonces: identity.NewNonceSource(nil), Now: clock}
	}
	// must stops the example on an error the flow does not expect.
	must := func(rec *adp.Record, err error) *adp.Record {
		if err != nil {
			log.Fatal(err)
		}
		return rec
	}
	alice, bob := agent(1), agent(2)

	room := adp.NewRoom("d8ftedhpqhsusbg001tg", nil)
	create, err := adp.NewRoomCreate(ctx, alice, adp.RoomCreate{
		Topic: "Retry policy", Visibility: adp.VisibilityPublic,
		StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(),
	})
	if err != nil {
		log.Fatal(err)
	}
	rec := must(room.Accept(ctx, create, now))
	fmt.Println("created, seq", rec.Seq, room.Status(now))

	base, err := room.BaseFor(adp.TypeRoomJoin)
	if err != nil {
		log.Fatal(err)
	}
	join, err := adp.NewJoin(ctx, bob, base, adp.Join{Role: adp.RoleSpeaker})
	if err != nil {
		log.Fatal(err)
	}
	rec = must(room.Accept(ctx, join, now))
	fmt.Println("bob joined, seq", rec.Seq, "head still", room.Head().Seq)

	head, err := room.BaseFor(adp.TypeMessageCreate)
	if err != nil {
		log.Fatal(err)
	}
	first, err := adp.NewMessage(ctx, alice, head, adp.Message{ContentType: "text/plain", Content: adp.TextContent("Exponential backoff?")})
	if err != nil {
		log.Fatal(err)
	}
	late, err := adp.NewMessage(ctx, bob, head, adp.Message{ContentType: "text/plain", Content: adp.TextContent("Fixed delay!")})
	if err != nil {
		log.Fatal(err)
	}
	rec = must(room.Accept(ctx, first, now))
	fmt.Println("message, seq", rec.Seq, "head", room.Head().Seq)

	_, err = room.Accept(ctx, late, now)
	fmt.Println("late reply refused:", errors.Is(err, adp.ErrRoomHeadMismatch))
	// Output:
	// created, seq 1 active
	// bob joined, seq 2 head still 1
	// message, seq 3 head 3
	// late reply refused: true
}

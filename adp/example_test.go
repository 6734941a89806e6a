package adp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
		key, _ := identity.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))
		return &envelope.Author{Signer: key, Nonces: identity.NewNonceSource(nil), Now: clock}
	}
	alice, bob := agent(1), agent(2)

	room := adp.NewRoom("d8ftedhpqhsusbg001tg", nil)
	create, _ := adp.NewRoomCreate(ctx, alice, adp.RoomCreate{
		Topic: "Retry policy", Visibility: adp.VisibilityPublic,
		StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(),
	})
	rec, _ := room.Accept(ctx, create, now)
	fmt.Println("created, seq", rec.Seq, room.Status(now))

	base, _ := room.BaseFor(adp.TypeRoomJoin)
	join, _ := adp.NewJoin(ctx, bob, base, adp.Join{Role: adp.RoleSpeaker})
	rec, _ = room.Accept(ctx, join, now)
	fmt.Println("bob joined, seq", rec.Seq, "head still", room.Head().Seq)

	head, _ := room.BaseFor(adp.TypeMessageCreate)
	first, _ := adp.NewMessage(ctx, alice, head, adp.Message{ContentType: "text/plain", Content: adp.TextContent("Exponential backoff?")})
	late, _ := adp.NewMessage(ctx, bob, head, adp.Message{ContentType: "text/plain", Content: adp.TextContent("Fixed delay!")})
	rec, _ = room.Accept(ctx, first, now)
	fmt.Println("message, seq", rec.Seq, "head", room.Head().Seq)

	_, err := room.Accept(ctx, late, now)
	fmt.Println("late reply refused:", errors.Is(err, adp.ErrRoomHeadMismatch))
	// Output:
	// created, seq 1 active
	// bob joined, seq 2 head still 1
	// message, seq 3 head 3
	// late reply refused: true
}

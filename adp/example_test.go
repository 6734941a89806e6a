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

// The same flow in the 2026-09-24 draft: the room is bound to its host,
// bob asks to join with a signed room.join.request, the review embedding
// it makes him a member, and messages based on one head are all accepted
// without moving it.
func ExampleNewJoinRequest() {
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
	must := func(rec *adp.Record, err error) *adp.Record {
		if err != nil {
			log.Fatal(err)
		}
		return rec
	}
	alice, bob := agent(1), agent(2)
	const host = "https://api.example.com"

	room := adp.NewRoom("d8ftedhpqhsusbg001tg", &adp.RoomOptions{Draft: adp.Draft20260924, Host: host})
	create, err := adp.NewRoomCreateIn(ctx, alice, adp.Draft20260924, adp.RoomCreate{
		Host: host, Topic: "Retry policy", Visibility: adp.VisibilityRestricted,
		StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(),
	})
	if err != nil {
		log.Fatal(err)
	}
	must(room.Accept(ctx, create, now))

	// Bob cannot read a restricted room's records, so his request names
	// only the room. The host holds it; it is never a record.
	req, err := adp.NewJoinRequest(ctx, bob, adp.Draft20260924, room.ID(), adp.JoinRequestPayload{Role: adp.RoleSpeaker})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := room.CheckJoinRequest(ctx, req, now); err != nil {
		log.Fatal(err)
	}
	base, err := room.BaseFor(adp.TypeRoomJoinReview)
	if err != nil {
		log.Fatal(err)
	}
	review, err := adp.NewSignedJoinReview(ctx, alice, base, adp.SignedJoinReview{Request: req, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker})
	if err != nil {
		log.Fatal(err)
	}
	rec := must(room.Accept(ctx, review, now))
	m, _ := room.Member(bob.AgentID())
	fmt.Println("review, seq", rec.Seq, "bob is", m.Status, m.Role)

	base, err = room.BaseFor(adp.TypeMessageCreate)
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range []*envelope.Author{alice, bob} {
		msg, err := adp.NewMessage(ctx, a, base, adp.Message{ContentType: "text/plain", Content: adp.TextContent("on the same head")})
		if err != nil {
			log.Fatal(err)
		}
		rec = must(room.Accept(ctx, msg, now))
	}
	fmt.Println("two messages, latest seq", rec.Seq, "head", room.Head().Seq)
	// Output:
	// review, seq 2 bob is active speaker
	// two messages, latest seq 4 head 1
}

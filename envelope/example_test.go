package envelope_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// Sign an event, verify the wire bytes, and see a replay refused by a
// service's live-write Verifier.
func Example() {
	ctx := context.Background()
	key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		log.Fatal(err)
	}
	now := time.UnixMilli(1779753600000)
	author := &envelope.Author{Signer: key, Nonces: identity.NewNonceSource(nil), Now: func() time.Time { return now }}

	payload, err := json.Marshal(struct {
		ID   identity.AgentID `json:"id"`
		Name string           `json:"name"`
	}{key.AgentID(), "ResearchAgent"})
	if err != nil {
		log.Fatal(err)
	}
	env, err := author.Sign(ctx, "agent-profile/1.0", "profile.update", payload, nil)
	if err != nil {
		log.Fatal(err)
	}
	wire := env.AppendJSON(nil)
	fmt.Println("hash:", env.Hash())

	if _, err := envelope.Verify(wire); err != nil {
		log.Fatal(err)
	}
	fmt.Println("verified")

	svc := envelope.NewVerifier(&envelope.VerifierOptions{Now: func() time.Time { return now }})
	_, outcome, err := svc.Accept(ctx, wire, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first write fresh:", outcome == envelope.Fresh)
	_, _, err = svc.Accept(ctx, wire, nil) // no accepted history: judged fresh again
	fmt.Println("replay refused:", errors.Is(err, identity.ErrNonceNotGreater))
	// Output:
	// hash: jRc2yf0x__2vmrD0U8TCryg2qzZ3FbeOFhzOeRwaSp4
	// verified
	// first write fresh: true
	// replay refused: true
}

// Verify events of a protocol this module does not implement: its extra
// top-level fields are accepted only when its Protocol is passed.
func ExampleVerifyWith() {
	ctx := context.Background()
	key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		log.Fatal(err)
	}
	notes := envelope.Protocol{Name: "agent-notes/1.0", Fields: []string{"thread"}}
	env, err := envelope.SignWith(ctx, key, envelope.Event{
		Protocol: notes.Name, Type: "note.create", Actor: key.AgentID(),
		CreatedAt: 1779753600000, Nonce: 1779753600000, Payload: jsontext.Value(`{"text":"hi"}`),
		Ext: envelope.Fields{{Name: "thread", Value: jsontext.Value(`"t1"`)}},
	}, notes)
	if err != nil {
		log.Fatal(err)
	}
	wire := env.AppendJSON(nil)

	_, err = envelope.Verify(wire)
	fmt.Println("without its Protocol:", errors.Is(err, identity.ErrInvalidEvent))
	if _, err := envelope.VerifyWith(wire, notes); err != nil {
		log.Fatal(err)
	}
	fmt.Println("with its Protocol: verified")
	// Output:
	// without its Protocol: true
	// with its Protocol: verified
}

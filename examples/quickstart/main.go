// Command quickstart shows the SDK's core loop in a few lines: generate an
// agent key, sign an event, verify it, and watch a tampered copy fail with
// its protocol error code.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/profile"
)

func main() {
	ctx := context.Background()

	// 1. An agent is an Ed25519 key; its Agent ID is the public key.
	key, err := identity.GenerateKey(nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("agent id: ", key.AgentID())

	// 2. An Author signs events for that agent: it fills actor, created_at
	//    and a clock-derived nonce, canonicalizes (RFC 8785), hashes
	//    (SHA3-256) and signs the 32-byte digest. profile.NewUpdate checks
	//    the payload rules before anything is signed.
	author := envelope.NewAuthor(key)
	env, err := profile.NewUpdate(ctx, author, profile.Payload{Name: "Quickstart agent"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	wire := env.AppendJSON(nil)
	fmt.Println("event hash:", env.Hash())
	fmt.Println("envelope: ", string(wire))

	// 3. A receiver parses strictly and verifies hash and signature.
	if _, err := envelope.Verify(wire); err != nil {
		log.Fatal(err)
	}
	fmt.Println("verify:    ok")

	// 4. Change one character of the signed event: the hash no longer
	//    matches and the receiver answers with the protocol's error code.
	tampered := []byte(strings.Replace(string(wire), "Quickstart agent", "Quickstart agenT", 1))
	_, err = envelope.Verify(tampered)
	var perr *identity.Error
	if !errors.As(err, &perr) {
		log.Fatalf("tampered envelope was not rejected: %v", err)
	}
	fmt.Printf("tampered:  rejected with %s (%s)\n", perr.Code, perr.Message)
	if !errors.Is(err, identity.ErrInvalidEventHash) {
		log.Fatal("unexpected error code")
	}
}

package profiletest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/profile"
	"github.com/agentprotocols/go-sdk/profile/profiletest"
)

// Run an in-memory profile service, publish a profile through a client and
// read it back verified; the service applies the real rules, so an exact
// resubmission is answered with the original acceptance.
func Example() {
	ctx := context.Background()
	srv := profiletest.NewServer(nil)
	defer srv.Close()
	client := srv.NewClient(nil) // a *profile.Client for srv

	key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		log.Fatal(err)
	}
	author := envelope.NewAuthor(key)

	v, err := client.Update(ctx, author, profile.Payload{Name: "Scout", Capabilities: []string{"search"}})
	if err != nil {
		log.Fatal(err)
	}
	again, err := client.Publish(ctx, v.Update) // the same signed bytes once more
	if err != nil {
		log.Fatal(err)
	}
	got, err := client.Get(ctx, key.AgentID())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("profile:", got.Document.Name, got.Document.Capabilities)
	fmt.Println("resubmission is the same event:", again.Update.Hash() == v.Update.Hash())
	fmt.Println("served exactly the signed update:", got.Discrepancy == nil)

	_, err = client.Get(ctx, identity.AgentID{})
	fmt.Println("zero Agent ID refused:", errors.Is(err, identity.ErrInvalidRequest))
	// Output:
	// profile: Scout [search]
	// resubmission is the same event: true
	// served exactly the signed update: true
	// zero Agent ID refused: true
}

// A service without event history cannot prove a profile: the client
// refuses to return it as verified.
func Example_withoutHistory() {
	ctx := context.Background()
	srv := profiletest.NewServer(&profiletest.Options{DisableHistory: true})
	defer srv.Close()
	client := srv.NewClient(nil)

	key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.Update(ctx, envelope.NewAuthor(key), profile.Payload{Name: "Quiet"}); err != nil {
		log.Fatal(err)
	}
	_, err = client.Get(ctx, key.AgentID())
	fmt.Println("verified get:", errors.Is(err, profile.ErrUnsupported))
	doc, err := client.GetUnverifiedUnsafe(ctx, key.AgentID())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("unverified get:", doc.Name)
	// Output:
	// verified get: true
	// unverified get: Quiet
}

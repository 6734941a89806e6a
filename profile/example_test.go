package profile_test

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

// Publish a profile to a service and read it back verified against the
// agent's signature.
func Example() {
	ctx := context.Background()
	srv := profiletest.NewServer(nil) // an in-memory profile service
	defer srv.Close()
	client := srv.NewClient(nil)

	key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		log.Fatal(err)
	}
	author := envelope.NewAuthor(key) // signer + nonce source + clock

	_, err = client.Update(ctx, author, profile.Payload{
		Name:         "ResearchAgent",
		Description:  new("Reads papers, writes summaries."),
		Capabilities: []string{"research", "summarize"},
		Links:        []profile.Link{{Name: "Home", URL: "https://example.com", Rel: profile.RelHomepage}},
	})
	if err != nil {
		log.Fatal(err)
	}

	got, err := client.Get(ctx, key.AgentID()) // document + latest signed update, checked
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Document.Name, got.Document.Capabilities)
	fmt.Println("signed by", got.Update.Actor() == key.AgentID())

	// Invalid payloads are refused before anything is signed or sent.
	_, err = client.Update(ctx, author, profile.Payload{Name: "Bad", AvatarURL: new("http://example.com/a.png")})
	ptr, _ := profile.FieldPointer(err)
	fmt.Println(errors.Is(err, identity.ErrInvalidEvent), ptr)
	// Output:
	// ResearchAgent [research summarize]
	// signed by true
	// true /avatar_url
}

package agentprotocols_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/profile"
	"github.com/agentprotocols/go-sdk/profile/profiletest"
	"github.com/agentprotocols/go-sdk/sse"
)

// The four data paths: an agent signs an event, anyone verifies the
// envelope, a host accepts it into a room, and a verifier replays the
// room's history with the rules the host ran. README.md shows the middle
// of this function; TestReadmeSnippetsCompile keeps the two equal.
func Example() {
	ctx := context.Background()
	key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{7}, identity.SeedSize))
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()

	// 1. Sign: a builder signs through an Author (key + nonce source + clock).
	author := envelope.NewAuthor(key)
	env, err := adp.NewRoomCreate(ctx, author, adp.RoomCreate{Topic: "Retry policy", Visibility: adp.VisibilityPublic,
		StartTime: start.UnixMilli(), EndTime: start.Add(time.Hour).UnixMilli()})
	if err != nil {
		log.Fatal(err)
	}
	body := env.AppendJSON(nil) // the wire bytes

	// 2. Verify one envelope: strict parse, canonicalize, SHA3-256, strict Ed25519.
	env, err = envelope.Verify(body)
	if err != nil {
		log.Fatal(err) // err carries the protocol's code: errors.Is(err, identity.ErrInvalidSignature)
	}

	// 3. Host accepts a write: identity rules (window, nonce, resubmission), then room rules.
	verifier := envelope.NewVerifier(nil)
	room := adp.NewRoom("d8ftedhpqhsusbg001tg", nil)
	var records []*adp.Record // the host's Store
	_, outcome, err := verifier.Accept(ctx, body, func(ctx context.Context, env *envelope.Envelope) error {
		rec, err := room.Accept(ctx, env, time.Now()) // head precondition, permissions, schemas → record
		if err == nil {
			records = append(records, rec)
		}
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	// 4. Verify history: Room.Apply, in seq order, runs the same rules the host ran.
	replica := adp.NewRoom(room.ID(), nil)
	for _, rec := range records {
		if err := replica.Apply(ctx, rec); err != nil {
			log.Fatal(err) // err carries the §20 code: errors.Is(err, adp.ErrRoomHeadMismatch)
		}
	}

	fmt.Println(env.Type(), outcome == envelope.Fresh, replica.Head().Seq)
	// Output: room.create true 1
}

// Publish a signed profile and read it back verified. The service here is
// the in-memory one of package profiletest; README.md shows this function.
func Example_profiles() {
	ctx := context.Background()
	key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{7}, identity.SeedSize))
	if err != nil {
		log.Fatal(err)
	}

	srv := profiletest.NewServer(nil) // a real service: profile.NewClient("https://profiles.example", nil)
	defer srv.Close()
	client := srv.NewClient(nil)

	author := envelope.NewAuthor(key)
	_, err = client.Update(ctx, author, profile.Payload{Name: "ResearchAgent", Capabilities: []string{"research"}})
	if err != nil {
		log.Fatal(err)
	}
	got, err := client.Get(ctx, key.AgentID()) // checked against the latest signed update
	if err != nil {
		log.Fatal(err)
	}

	fmt.Println(got.Document.Name, got.Document.Capabilities)
	// Output: ResearchAgent [research]
}

// Talk to a host: the client verifies every record it returns against its
// own replica of the room, and sse.Follow delivers the room's records live,
// verified, once and in order. The host here is the reference host on a
// loopback test server; README.md shows the middle of this function.
func Example_client() {
	ctx := context.Background()
	key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{7}, identity.SeedSize))
	if err != nil {
		log.Fatal(err)
	}
	host, srv, err := adphosttest.NewUnstarted(nil)
	if err != nil {
		log.Fatal(err)
	}
	srv.Start()
	defer srv.Close()
	defer host.Close()
	origin := srv.URL // a public host: "https://api.al.ink"
	start := time.Now()

	client, err := adp.NewClient(origin, &adp.ClientOptions{Signer: key, AllowLoopbackHTTP: true}) // every record it returns is verified
	if err != nil {
		log.Fatal(err)
	}
	created, err := client.CreateRoom(ctx, adp.RoomCreate{Topic: "Retry policy", Visibility: adp.VisibilityPublic,
		StartTime: start.UnixMilli(), EndTime: start.Add(time.Hour).UnixMilli()})
	if err != nil {
		log.Fatal(err)
	}
	roomID := created.RoomID
	_, err = client.SendMessage(ctx, roomID, adp.Message{ContentType: "text/plain", Content: adp.TextContent("Three retries?")})
	if err != nil { // another write landed first: a *adp.HeadMismatchError carries the current head
		log.Fatal(err)
	}
	for rec, err := range client.Events(ctx, roomID, 0) { // history, paged until done
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("history:", rec.Seq, rec.Envelope.Type())
	}
	for item, err := range sse.Follow(ctx, &sse.Options{Client: client, RoomID: roomID}) { // live: stream, backfill, dedupe, verify, resume
		if err != nil {
			log.Fatal(err)
		}
		if item.Kind == sse.KindRecord {
			fmt.Println("live:", item.Record.Seq, item.Record.Envelope.Type())
			if item.Record.Seq == 2 {
				break // a real follower stays until the room ends or ctx is done
			}
		}
	}
	// Output:
	// history: 1 room.create
	// history: 2 message.create
	// live: 1 room.create
	// live: 2 message.create
}

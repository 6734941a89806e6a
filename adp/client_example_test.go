package adp_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/identity"
)

// A Client creates a room on a host, posts a message and reads the
// verified history back. The host here is the reference host on a
// loopback test server.
func ExampleClient() {
	ctx := context.Background()
	host, srv, err := adphosttest.NewUnstarted(nil)
	if err != nil {
		log.Fatal(err)
	}
	srv.Start()
	defer srv.Close()
	defer host.Close()

	key, err := identity.NewKeyFromSeed(make([]byte, identity.SeedSize))
	if err != nil {
		log.Fatal(err)
	}
	client, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: key, AllowLoopbackHTTP: true})
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	created, err := client.CreateRoom(ctx, adp.RoomCreate{
		Topic: "Release checklist", Visibility: adp.VisibilityPublic,
		StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(),
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.SendMessage(ctx, created.RoomID, adp.Message{ContentType: "text/plain", Content: adp.TextContent("Tests are green.")}); err != nil {
		log.Fatal(err)
	}
	for rec, err := range client.Events(ctx, created.RoomID, 0) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(rec.Seq, rec.Envelope.Type())
	}
	// Output:
	// 1 room.create
	// 2 message.create
}

// A Replica owned by the caller holds a room's verified state: the
// client verifies every record into it, and its Admitted hook sees each
// new record once, in order (a store would persist them there). The same
// replica goes to sse.Options to follow the room live.
func ExampleReplica() {
	ctx := context.Background()
	host, srv, err := adphosttest.NewUnstarted(nil)
	if err != nil {
		log.Fatal(err)
	}
	srv.Start()
	defer srv.Close()
	defer host.Close()

	key, err := identity.NewKeyFromSeed(make([]byte, identity.SeedSize))
	if err != nil {
		log.Fatal(err)
	}
	admitted := func(_ context.Context, recs []*adp.Record, _ *adp.Room) error {
		for _, rec := range recs {
			fmt.Println("persist", rec.Seq, rec.Envelope.Type())
		}
		return nil
	}
	client, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: key, AllowLoopbackHTTP: true,
		NewReplica: func(roomID string) (*adp.Replica, error) {
			return adp.NewReplica(roomID, &adp.ReplicaOptions{Admitted: admitted}), nil
		}})
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	created, err := client.CreateRoom(ctx, adp.RoomCreate{
		Topic: "Release checklist", Visibility: adp.VisibilityPublic,
		StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(),
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := client.SendMessage(ctx, created.RoomID, adp.Message{ContentType: "text/plain", Content: adp.TextContent("Tests are green.")}); err != nil {
		log.Fatal(err)
	}
	rep, err := client.Replica(created.RoomID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("latest", rep.Latest().Seq)
	// Output:
	// persist 1 room.create
	// persist 2 message.create
	// latest 2
}

// A Client learns the draft its host serves from the host's discovery
// document and speaks it: here a host of the 2026-09-24 draft, whose
// room.create the client binds to the host and whose records carry
// accepted_at.
func ExampleClient_Draft() {
	ctx := context.Background()
	host, srv, err := adphosttest.NewUnstarted(&adphost.Options{Draft: adp.Draft20260924})
	if err != nil {
		log.Fatal(err)
	}
	srv.Start()
	defer srv.Close()
	defer host.Close()

	key, err := identity.NewKeyFromSeed(make([]byte, identity.SeedSize))
	if err != nil {
		log.Fatal(err)
	}
	client, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: key, AllowLoopbackHTTP: true})
	if err != nil {
		log.Fatal(err)
	}
	d, err := client.Draft(ctx)
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	created, err := client.CreateRoom(ctx, adp.RoomCreate{
		Topic: "Release checklist", Visibility: adp.VisibilityPublic,
		StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d, created.Draft, strings.Contains(string(created.AppendJSON(nil)), `"accepted_at"`))
	// Output:
	// 2026-09-24 2026-09-24 true
}

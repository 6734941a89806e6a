package adphosttest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/identity"
)

// Start the reference host on a loopback test server, for code that talks
// to a host over HTTP. The server's URL is the host's origin, so clients
// must allow loopback HTTP. In a test, NewServer(t, opts) does the same
// and stops both when the test ends.
func ExampleNewUnstarted() {
	host, srv, err := adphosttest.NewUnstarted(&adphost.Options{
		RateLimits: &adphost.RateLimits{Message: -1, Signal: -1, Control: -1}, // no quotas: a test writes faster than any agent
	})
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
	rec, err := client.CreateRoom(context.Background(), adp.RoomCreate{Topic: "Test room", Visibility: adp.VisibilityPublic,
		StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(host.Origin().String() == srv.URL, rec.Seq, rec.Envelope.Type())
	// Output: true 1 room.create
}

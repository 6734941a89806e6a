package adphost_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/identity"
)

// A Host serves the ADP API at its origin; the origin must be known
// before the host is built, since it is the request-JWT audience and the
// base of every URL the host announces.
func ExampleHost() {
	ctx := context.Background()
	srv := httptest.NewUnstartedServer(nil)
	origin, err := identity.ParseOrigin("http://"+srv.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		log.Fatal(err)
	}
	host, err := adphost.New(ctx, &adphost.Options{Origin: origin, Store: adphost.NewMemoryStore()})
	if err != nil {
		log.Fatal(err)
	}
	srv.Config.Handler = host
	srv.Start()
	defer srv.Close()
	defer host.Close()

	key, err := identity.NewKeyFromSeed(make([]byte, identity.SeedSize))
	if err != nil {
		log.Fatal(err)
	}
	client, err := adp.NewClient(origin.String(), &adp.ClientOptions{Signer: key, AllowLoopbackHTTP: true})
	if err != nil {
		log.Fatal(err)
	}
	d, err := client.Discover(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Protocol, d.HasFeature(adp.FeatureJoinReview), d.Endpoints.API == host.API())
	// Output: agent-discourse/1.0 true true
}

// A Host serves the 2026-09-24 draft when Options.Draft says so: its
// discovery document is an Agent Identity document whose service is the
// origin every room.create must name.
func ExampleOptions_draft() {
	ctx := context.Background()
	srv := httptest.NewUnstartedServer(nil)
	origin, err := identity.ParseOrigin("http://"+srv.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		log.Fatal(err)
	}
	host, err := adphost.New(ctx, &adphost.Options{Origin: origin, Draft: adp.Draft20260924})
	if err != nil {
		log.Fatal(err)
	}
	srv.Config.Handler = host
	srv.Start()
	defer srv.Close()
	defer host.Close()

	resp, err := srv.Client().Get(origin.String() + adp.DiscoveryPath)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		log.Fatal(err)
	}
	d, err := identity.ParseDiscovery(body, &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(host.Draft(), d.Service == origin, d.Endpoints["rooms"] == host.API()+"/rooms")
	// Output: 2026-09-24 true true
}

package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/boltstore"
	"github.com/agentprotocols/go-sdk/identity"
)

// Run a host on a bbolt file: the program a host team writes around
// adphost. The origin is the public one behind TLS in production; on a
// laptop it is a loopback http origin, which must be allowed explicitly.
// README.md shows the middle of this function.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	production := false

	st, err := boltstore.Open("/var/lib/adp/host.db", nil) // or adphost.NewMemoryStore(), or your database
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	origin := identity.MustParseOrigin("https://adp.example") // production: the public origin, behind TLS
	if !production {
		// On one machine: a loopback http origin, allowed explicitly.
		origin, err = identity.ParseOrigin("http://127.0.0.1:8787", &identity.OriginOptions{AllowLoopbackHTTP: true})
		if err != nil {
			log.Fatal(err)
		}
	}
	host, err := adphost.New(ctx, &adphost.Options{Origin: origin, Store: st})
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close() // ends live streams, so that Shutdown need not wait for them

	srv := &http.Server{Addr: "127.0.0.1:8787", Handler: host, // behind TLS and edge rate limits
		ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// A host on a bbolt file keeps its rooms across a restart: the second
// host, on the same file, serves the room the first one created.
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "boltstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "host.db")
	key, err := identity.NewKeyFromSeed(make([]byte, identity.SeedSize))
	if err != nil {
		log.Fatal(err)
	}

	// serve runs a host on the file for the duration of use.
	serve := func(use func(*adp.Client)) {
		st, err := boltstore.Open(path, nil) // one process at a time: bbolt locks the file
		if err != nil {
			log.Fatal(err)
		}
		srv := httptest.NewUnstartedServer(nil)
		origin, err := identity.ParseOrigin("http://"+srv.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
		if err != nil {
			log.Fatal(err)
		}
		host, err := adphost.New(ctx, &adphost.Options{Origin: origin, Store: st})
		if err != nil {
			log.Fatal(err)
		}
		srv.Config.Handler = host
		srv.Start()
		defer st.Close() // last: the file is free for the next process
		defer srv.Close()
		defer host.Close()
		client, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: key, AllowLoopbackHTTP: true})
		if err != nil {
			log.Fatal(err)
		}
		use(client)
	}

	var roomID string
	serve(func(c *adp.Client) {
		now := time.Now()
		rec, err := c.CreateRoom(ctx, adp.RoomCreate{Topic: "Kept on disk", Visibility: adp.VisibilityPublic,
			StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
		if err != nil {
			log.Fatal(err)
		}
		roomID = rec.RoomID
	})
	serve(func(c *adp.Client) {
		room, err := c.GetRoom(ctx, roomID)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("after a restart:", room.Topic)
	})
	// Output: after a restart: Kept on disk
}

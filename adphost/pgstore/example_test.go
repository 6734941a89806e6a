package pgstore_test

import (
	"context"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/pgstore"
	"github.com/agentprotocols/go-sdk/identity"
)

// One process of a host whose state is in PostgreSQL. Several such
// processes on one database, behind one origin, are one host: start the
// same program on other addresses and let a reverse proxy that does not
// buffer responses spread the requests over them. The example needs a
// server, so it is compiled but not run; the package's tests and
// cmd/adphost's multi-process tests run the same code against one.
func Example() {
	ctx := context.Background()
	st, err := pgstore.Open(ctx, os.Getenv("AGENT_PROTOCOLS_POSTGRES"), nil) // e.g. postgres://adp@127.0.0.1:5432/adp
	if err != nil {
		log.Fatal(err) // also pgstore.ErrSchemaTooNew: a newer version migrated the database
	}
	defer st.Close()
	host, err := adphost.New(ctx, &adphost.Options{
		Origin: identity.MustParseOrigin("https://adp.example"), // every process serves the one public origin
		Store:  st,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close()
	srv := &http.Server{Addr: "127.0.0.1:8801", Handler: host, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

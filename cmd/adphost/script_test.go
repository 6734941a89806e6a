package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentprotocols/go-sdk/adphost/boltstore"
	"github.com/agentprotocols/go-sdk/cmd/internal/clitest"
	"github.com/agentprotocols/go-sdk/internal/pgtest"
)

// TestMain makes the test binary the adphost program for the scripts
// (clitest) and gives the PostgreSQL tests a real server; the host
// process the multi-process tests re-execute needs neither.
func TestMain(m *testing.M) {
	if os.Getenv(envHostArgs) != "" {
		os.Exit(m.Run())
	}
	clitest.Main(withPostgres{m}, map[string]func(){"adphost": main})
}

// withPostgres runs the tests with pgtest's server.
type withPostgres struct{ m *testing.M }

func (w withPostgres) Run() int { return pgtest.Main(w.m) }

// TestScripts runs testdata/*.txt: adphost as a process, its exit status
// and its output (go test -update rewrites the expected output).
func TestScripts(t *testing.T) {
	clitest.Run(t, &clitest.Params{Cmds: map[string]func(*testscript.TestScript, bool, []string){
		// holdbolt FILE: open FILE as a bbolt store until the script ends,
		// as a running adphost holds its data file.
		"holdbolt": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 1 {
				ts.Fatalf("usage: holdbolt FILE")
			}
			st, err := boltstore.Open(ts.MkAbs(args[0]), nil)
			ts.Check(err)
			ts.Defer(func() { st.Close() })
		},
		// pgdatabase NAME PASSWORD: set $NAME to the URL of a fresh
		// database on pgtest's server, with PASSWORD in it (which the
		// server, trusting local connections, ignores). Scripts guard it
		// with [postgres].
		"pgdatabase": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 2 {
				ts.Fatalf("usage: pgdatabase NAME PASSWORD")
			}
			raw, drop, err := pgtest.Current().CreateDatabase(context.Background())
			ts.Check(err)
			ts.Defer(drop)
			u, err := url.Parse(raw)
			ts.Check(err)
			u.User = url.UserPassword(u.User.Username(), args[1])
			ts.Setenv(args[0], u.String())
		},
	}, Condition: func(cond string) (bool, error) {
		if cond != "postgres" {
			return false, fmt.Errorf("unknown condition %q", cond)
		}
		// Without a server the scripts skip what needs one, as pgtest's
		// tests do; under CI=true that fails.
		if pgtest.Current() == nil && os.Getenv("CI") == "true" {
			return false, errors.New("PostgreSQL is required under CI=true")
		}
		return pgtest.Current() != nil, nil
	}})
}

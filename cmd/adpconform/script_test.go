package main

import (
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/cmd/internal/clitest"
)

func TestMain(m *testing.M) {
	clitest.Main(m, map[string]func(){"adpconform": main})
}

// TestScripts runs testdata/*.txt: adpconform as a process, its exit
// status and its output (go test -update rewrites the expected output).
func TestScripts(t *testing.T) {
	clitest.Run(t, &clitest.Params{Cmds: map[string]func(*testscript.TestScript, bool, []string){
		// nononcehost NAME: a host that drops Max-Seen-Nonce.
		"nononcehost": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 1 {
				ts.Fatalf("usage: nononcehost NAME")
			}
			clitest.StartHost(ts, args[0], noNonceHeader)
		},
		// laterhost NAME: the SDK's host serving the 2026-09-24 draft.
		"laterhost": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 1 {
				ts.Fatalf("usage: laterhost NAME")
			}
			h, srv, err := adphosttest.NewUnstarted(&adphost.Options{Draft: adp.Draft20260924})
			ts.Check(err)
			srv.Start()
			ts.Defer(func() {
				srv.Close()
				h.Close()
			})
			ts.Setenv(args[0], srv.URL)
		},
	}})
}

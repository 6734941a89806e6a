// Package clitest runs a program's scripted tests: testscript files
// (testdata/*.txt, txtar archives of shell-like commands and expected
// output, as filippo.io/age's cmd/age/testdata) that run the program as a
// separate process and check its exit status, stdout and stderr.
//
// A program's test file hands its main function to [Main] and runs the
// scripts with [Run]:
//
//	func TestMain(m *testing.M) { clitest.Main(m, map[string]func(){"adpconform": main}) }
//
//	func TestScripts(t *testing.T) { clitest.Run(t, nil) }
//
// A script then runs the program as exec adpconform --help, and the
// commands of [Run] start what the program talks to. go test -update
// rewrites the expected output (cmp stdout want) in the scripts.
package clitest

import (
	"flag"
	"maps"
	"net/http"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
)

var update = flag.Bool("update", false, "rewrite the expected output in the scripts of testdata")

// Main is a program's TestMain: the test binary, run under one of the
// names of programs, is that program (its main function), so scripts run
// it as a process of its own; otherwise it runs the tests.
func Main(m *testing.M, programs map[string]func()) {
	testscript.Main(m, programs)
}

// Params are a program's additions to the scripts' environment; nil means
// none.
type Params struct {
	// Dir holds the scripts; "" means testdata.
	Dir string
	// Cmds are commands of the program's own, beside those of Run.
	Cmds map[string]func(ts *testscript.TestScript, neg bool, args []string)
}

// Run runs every script of p.Dir as a subtest. Besides testscript's
// commands, a script has:
//
//	host NAME
//
// which starts the reference ADP host (adphost, memory store) on a
// loopback test server for the rest of the script and sets $NAME to its
// origin (see [StartHost]). Each script starts with HOME
// at its work directory, and runs the program with exec.
func Run(t *testing.T, p *Params) {
	if p == nil {
		p = &Params{}
	}
	dir := p.Dir
	if dir == "" {
		dir = "testdata"
	}
	cmds := map[string]func(*testscript.TestScript, bool, []string){"host": startHost}
	maps.Copy(cmds, p.Cmds)
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		Cmds:                cmds,
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", env.WorkDir)
			return nil
		},
	})
}

// startHost is the host command.
func startHost(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: host NAME")
	}
	StartHost(ts, args[0], nil)
}

// StartHost starts the reference ADP host (adphost, memory store) on a
// loopback test server for the rest of the script, with its handler
// wrapped by wrap unless wrap is nil, and sets $name to its origin. A
// program's own commands use it to start a host with a defect.
func StartHost(ts *testscript.TestScript, name string, wrap func(http.Handler) http.Handler) {
	h, srv, err := adphosttest.NewUnstarted(nil)
	ts.Check(err)
	if wrap != nil {
		srv.Config.Handler = wrap(h)
	}
	srv.Start()
	ts.Defer(func() {
		srv.Close()
		h.Close()
	})
	ts.Setenv(name, srv.URL)
}

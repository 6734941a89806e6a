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
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
)

var update = flag.Bool("update", false, "rewrite the expected output in the scripts of testdata and the program's other golden files")

// Updating reports whether go test ran with -update, the flag this
// package defines for a program's tests: a program's other golden files
// follow it too (a second flag of that name would not be allowed).
func Updating() bool { return *update }

// Main is a program's TestMain: the test binary, run under one of the
// names of programs, is that program (its main function), so scripts run
// it as a process of its own; otherwise it runs the tests (m.Run, a
// *testing.M or a wrapper that prepares something first), with the
// programs on $PATH, so a Go test may exec them by name too.
//
// Besides the programs, the scripts have the program untilready (see
// [Run]).
func Main(m testscript.TestingM, programs map[string]func()) {
	all := maps.Clone(programs)
	all["untilready"] = untilReady
	testscript.Main(m, all)
}

// Params are a program's additions to the scripts' environment; nil means
// none.
type Params struct {
	// Dir holds the scripts; "" means testdata.
	Dir string
	// Cmds are commands of the program's own, beside those of Run.
	Cmds map[string]func(ts *testscript.TestScript, neg bool, args []string)
	// Condition decides the program's own script conditions ([name]),
	// beside testscript's; nil means none.
	Condition func(cond string) (bool, error)
	// Setup prepares each script's environment after Run's own setup
	// (HOME), for example with variables naming fixtures; nil means none.
	Setup func(env *testscript.Env) error
}

// Run runs every script of p.Dir as a subtest. Besides testscript's
// commands, a script has:
//
//	host NAME
//
// which starts the reference ADP host (adphost, memory store) on a
// loopback test server for the rest of the script and sets $NAME to its
// origin (see [StartHost]);
//
//	status [-within DURATION] N PROGRAM [ARGS...]
//
// which runs PROGRAM as exec does and checks that its exit status is N,
// and with -within that it exited within DURATION; and the program
//
//	exec untilready PROGRAM [ARGS...]
//
// which runs a server PROGRAM until its first line on standard output
// (the line a server prints when it is ready), then interrupts it, as an
// operator's Ctrl-C would: PROGRAM's output and exit status are
// untilready's, for stdout and stderr to check what a server prints and
// logs at start-up. Each script starts with HOME at its work directory,
// and runs the program with exec.
func Run(t *testing.T, p *Params) {
	if p == nil {
		p = &Params{}
	}
	dir := p.Dir
	if dir == "" {
		dir = "testdata"
	}
	cmds := map[string]func(*testscript.TestScript, bool, []string){"host": startHost, "status": status}
	maps.Copy(cmds, p.Cmds)
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		Cmds:                cmds,
		UpdateScripts:       *update,
		Condition:           p.Condition,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", env.WorkDir)
			if p.Setup != nil {
				return p.Setup(env)
			}
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

// status is the status command.
func status(ts *testscript.TestScript, neg bool, args []string) {
	var within time.Duration
	if len(args) > 1 && args[0] == "-within" {
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		within, args = d, args[2:]
	}
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status [-within DURATION] N PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	start := time.Now()
	err = ts.Exec(args[1], args[2:]...)
	took := time.Since(start)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s: exit status %d, want %d", args[1], got, want)
	}
	if within > 0 && took > within {
		ts.Fatalf("%s: exited after %v, want within %v", args[1], took.Round(time.Millisecond), within)
	}
}

// readyTimeout bounds untilready's wait for the ready line.
const readyTimeout = 30 * time.Second

// untilReady is the untilready program.
func untilReady() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: untilready PROGRAM [ARGS...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "untilready:", err)
		os.Exit(1)
	}
	ready := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		r := bufio.NewReader(out)
		line, err := r.ReadString('\n')
		os.Stdout.WriteString(line)
		if err == nil {
			close(ready)
		}
		io.Copy(os.Stdout, r)
	}()
	select {
	case <-ready:
		cmd.Process.Signal(os.Interrupt)
	case <-copied:
	case <-time.After(readyTimeout):
		fmt.Fprintf(os.Stderr, "untilready: no line on standard output within %v\n", readyTimeout)
		cmd.Process.Kill()
	}
	<-copied
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "untilready:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

package main

import (
	"os"
	"testing"

	"github.com/agentprotocols/go-sdk/cmd/internal/clitest"
)

// TestMain makes the test binary the agent-protocols-connector program for
// the scripts (clitest), and for BenchmarkConnectorCPUPerWrite's profiled
// connector.
func TestMain(m *testing.M) {
	if prof := os.Getenv(benchChildEnv); prof != "" {
		os.Exit(benchChild(prof))
	}
	clitest.Main(removeBuilt{m}, map[string]func(){prog: main})
}

// TestScripts runs testdata/script/*.txt: agent-protocols-connector as a
// process, its exit status and its output (go test -update rewrites the
// expected output).
func TestScripts(t *testing.T) {
	clitest.Run(t, &clitest.Params{Dir: "testdata/script"})
}

package main

import (
	"testing"

	"github.com/agentprotocols/go-sdk/cmd/internal/clitest"
)

// TestMain makes the test binary the agent-protocols-connector program for
// the scripts (clitest).
func TestMain(m *testing.M) {
	clitest.Main(removeBuilt{m}, map[string]func(){prog: main})
}

// TestScripts runs testdata/script/*.txt: agent-protocols-connector as a
// process, its exit status and its output (go test -update rewrites the
// expected output).
func TestScripts(t *testing.T) {
	clitest.Run(t, &clitest.Params{Dir: "testdata/script"})
}

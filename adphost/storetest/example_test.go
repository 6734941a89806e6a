package storetest_test

import (
	"path/filepath"
	"testing"

	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/boltstore"
	"github.com/agentprotocols/go-sdk/adphost/storetest"
)

// boltConformance checks a Store with the suite: open returns an empty
// store for each subtest and registers its Close with that subtest.
// (boltstore's own tests run exactly this.)
func boltConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) adphost.Store {
		st, err := boltstore.Open(filepath.Join(t.TempDir(), "host.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// A Store's tests call Run with a function that opens an empty store; an
// example has no *testing.T, so the test is the function above.
func ExampleRun() {
	_ = boltConformance
}

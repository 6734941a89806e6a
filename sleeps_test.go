package agentprotocols

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxTestSleeps bounds the sleeps in the module's tests. A test that waits
// for something waits on a signal (a channel, a change notification,
// synctest.Wait, a long-poll); a sleep is left only where time is the
// scenario itself (a process or database kept down, a crash at a random
// point, a retry's backoff, a writer's pace) or where nothing can signal
// (goroutines exiting, the absence of background work).
const maxTestSleeps = 8

// TestFewSleepsInTests counts the sleep calls of the module's test files.
func TestFewSleepsInTests(t *testing.T) {
	call := []byte("time." + "Sleep(") // spelled so that this file does not count
	var where []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for range bytes.Count(src, call) {
			where = append(where, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(where) > maxTestSleeps {
		t.Fatalf("%d sleeps in tests, at most %d: wait on a signal or use testing/synctest instead (%s)", len(where), maxTestSleeps, strings.Join(where, ", "))
	}
}

// Command testsummary reads the output of go test -json on stdin, prints
// what go test without -json would have printed (each package's result,
// and the output of the tests that failed), and ends with a list of every skipped test and the reason it gave, so that a test that
// did not run (the PostgreSQL tests without a server, a check that needs
// a tool the machine lacks) is seen without -v:
//
//	go test -json ./... | go run ./internal/testsummary
//
// Its own exit status is 0 unless stdin is not go test -json; the
// pipeline's status (set -o pipefail) is go test's.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// skip is a skipped test and what it printed.
type skip struct {
	pkg, test string
	reason    []string
}

func main() {
	skips, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	report(os.Stdout, skips)
}

// summarize copies the tests' output from r to w and returns the skipped
// tests in the order they ended.
func summarize(r io.Reader, w io.Writer) ([]skip, error) {
	type key struct{ pkg, test string }
	printed := map[key][]string{}
	var skips []skip
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e, json.RejectUnknownMembers(false)); err != nil {
			return nil, fmt.Errorf("not go test -json output: %v: %.80q", err, sc.Text())
		}
		k := key{e.Package, e.Test}
		switch {
		case e.Action == "output" && e.Test == "" && (e.Output == "PASS\n" || e.Output == "testing: warning: no tests to run\n"):
			// Printed under -json (the test binary runs verbose), not by go test.
		case e.Action == "build-output" || e.Action == "output" && e.Test == "":
			io.WriteString(w, e.Output)
		case e.Action == "output":
			printed[k] = append(printed[k], e.Output)
		case e.Action == "fail" && e.Test != "":
			io.WriteString(w, strings.Join(printed[k], ""))
			delete(printed, k)
		case e.Action == "skip" && e.Test != "":
			skips = append(skips, skip{e.Package, e.Test, reason(printed[k])})
			delete(printed, k)
		case e.Action == "pass":
			delete(printed, k)
		}
	}
	return skips, sc.Err()
}

// reason keeps the lines a test logged: not go test's own framing.
func reason(lines []string) []string {
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		out = append(out, t)
	}
	return out
}

// report lists the skipped tests.
func report(w io.Writer, skips []skip) {
	if len(skips) == 0 {
		fmt.Fprintln(w, "skipped tests: none")
		return
	}
	slices.SortStableFunc(skips, func(a, b skip) int { return strings.Compare(a.pkg, b.pkg) })
	fmt.Fprintf(w, "skipped tests: %d\n", len(skips))
	for _, s := range skips {
		why := strings.Join(s.reason, " / ")
		if why == "" {
			why = "(no reason given)"
		}
		fmt.Fprintf(w, "  %s %s: %s\n", s.pkg, s.test, why)
	}
}

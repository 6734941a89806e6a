package main

import (
	"bytes"
	"strings"
	"testing"
)

// stream is go test -json of a package with a failing subtest, a skipped
// test, a passing test, and a package without test files.
const stream = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:3: boom\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- FAIL: TestA (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:4: pgtest: no PostgreSQL server available\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Test":"TestC","Output":"=== RUN   TestC\n"}
{"Action":"output","Package":"p","Test":"TestC","Output":"--- PASS: TestC (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Output":"testing: warning: no tests to run\n"}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"FAIL\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.005s\n"}
{"Action":"fail","Package":"p"}
{"Action":"output","Package":"q","Output":"?   \tq\t[no test files]\n"}
{"Action":"skip","Package":"q"}
`

// TestSummarize: the output is go test's without -v (the failed test's
// lines and the package results), and the summary names the skipped test
// with its reason; a package without tests is not a skipped test.
func TestSummarize(t *testing.T) {
	var out bytes.Buffer
	skips, err := summarize(strings.NewReader(stream), &out)
	if err != nil {
		t.Fatal(err)
	}
	report(&out, skips)
	want := "=== RUN   TestA\n    a_test.go:3: boom\n--- FAIL: TestA (0.00s)\nFAIL\nFAIL\tp\t0.005s\n?   \tq\t[no test files]\n" +
		"skipped tests: 1\n  p TestB: b_test.go:4: pgtest: no PostgreSQL server available\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	if _, err := summarize(strings.NewReader("ok  \tp\t0.1s\n"), &out); err == nil {
		t.Fatal("plain go test output was taken for -json")
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/jsonl"
	"github.com/agentprotocols/go-sdk/cmd/internal/clitest"
	"github.com/agentprotocols/go-sdk/connector"
)

// transcriptSteps are the conformance exchanges: what a stdio MCP client
// sends, one JSON-RPC message per line.
var transcriptSteps = []struct{ name, send string }{
	{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"transcript","version":"1"}}}`},
	{"initialized", `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`},
	{"tools-list", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`},
	{"call-identity-current", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"agent_protocols_identity_current","arguments":{}}}`},
	{"call-malformed", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"agent_protocols_room_state","arguments":{"room_id":""}}}`},
	{"call-rejected", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"agent_protocols_room_state","arguments":{"room_id":"d8ftedhpqhsusbg001tg"}}}`},
	{"resources-list", `{"jsonrpc":"2.0","id":6,"method":"resources/list","params":{}}`},
	{"resource-templates-list", `{"jsonrpc":"2.0","id":7,"method":"resources/templates/list","params":{}}`},
	{"logging-set-level", `{"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"debug"}}`},
	{"subscribe-inbox", `{"jsonrpc":"2.0","id":8,"method":"resources/subscribe","params":{"uri":"agent-protocols://inbox/pending"}}`},
}

// TestTranscripts replays the conformance transcript over the stdio
// framing (newline-delimited JSON-RPC) and compares every answer with
// testdata/transcripts.txtar; go test -run TestTranscripts -update
// rewrites it. The key is fixed and the one host is never contacted, so
// the answers are deterministic.
func TestTranscripts(t *testing.T) {
	dir := t.TempDir()
	c := newConnectorWith(t, "transcript", &connectorOptions{
		dir:   dir,
		hosts: []connector.HostConfig{{Host: "https://api.example", Label: "example"}},
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- c.srv.MCP().Run(ctx, &jsonl.Transport{R: inR, W: outW, MaxLine: mcp.DefaultMaxRequestBodyBytes})
	}()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	var got []txtarFile
	for _, st := range transcriptSteps {
		if _, err := io.WriteString(inW, st.send+"\n"); err != nil {
			t.Fatal(err)
		}
		got = append(got, txtarFile{st.name + ".send", st.send})
		if !strings.Contains(st.send, `"id"`) {
			continue // a notification has no answer
		}
		select {
		case l := <-lines:
			got = append(got, txtarFile{st.name + ".recv", indentJSON(t, l)})
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no answer", st.name)
		}
	}
	inW.Close()

	const path = "testdata/transcripts.txtar"
	if clitest.Updating() { // go test -update rewrites testdata/transcripts.txtar
		if err := os.WriteFile(path, formatTxtar(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	want := parseTxtar(b)
	if len(want) != len(got) {
		t.Fatalf("transcript has %d files, run produced %d (run with -update after checking)", len(want), len(got))
	}
	for i := range want {
		if want[i].name != got[i].name || strings.TrimSpace(want[i].data) != strings.TrimSpace(got[i].data) {
			t.Errorf("%s differs (go test -run TestTranscripts -update rewrites it): %s", want[i].name, firstDiff(want[i].data, got[i].data))
		}
	}
}

func indentJSON(t *testing.T, s string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(s), "", "  "); err != nil {
		t.Fatalf("answer is not JSON: %v: %s", err, s)
	}
	return buf.String()
}

// A minimal txtar (golang.org/x/tools/txtar's format): "-- name --"
// lines separate files.
type txtarFile struct{ name, data string }

func formatTxtar(files []txtarFile) []byte {
	var b strings.Builder
	b.WriteString("Conformance transcript of the connector over stdio framing (regenerate: go test -run TestTranscripts -update).\n")
	for _, f := range files {
		b.WriteString("-- " + f.name + " --\n")
		b.WriteString(strings.TrimRight(f.data, "\n") + "\n")
	}
	return []byte(b.String())
}

func parseTxtar(b []byte) []txtarFile {
	var out []txtarFile
	for _, line := range strings.SplitAfter(string(b), "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") {
			out = append(out, txtarFile{name: strings.TrimSuffix(strings.TrimPrefix(trimmed, "-- "), " --")})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].data += line
		}
	}
	return out
}

// firstDiff names the first line where two texts differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, x, y)
		}
	}
	return "whitespace only"
}

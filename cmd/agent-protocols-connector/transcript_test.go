package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/tools/txtar"

	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/jsonl"
	"github.com/agentprotocols/go-sdk/cmd/internal/clitest"
	"github.com/agentprotocols/go-sdk/connector"
)

// TestTranscripts replays the conformance transcripts over the stdio
// framing (newline-delimited JSON-RPC) and compares every answer with the
// recorded one. Both sides are data: each testdata/transcripts/*.txtar is
// one session, its files in order, a NAME.send being what a stdio MCP
// client sends (one JSON-RPC message) and the NAME.recv after it the
// connector's answer (a notification has none). tools-list.txtar holds
// the tool catalogue alone, so a change of one tool is a diff of that
// file. go test -run TestTranscripts -update rewrites the answers and
// keeps the requests. The key is fixed and the one host is never
// contacted, so the answers are deterministic.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/transcripts/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := replayTranscript(t, ar)
			if clitest.Updating() {
				if err := os.WriteFile(path, txtar.Format(&txtar.Archive{Comment: ar.Comment, Files: got}), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if len(ar.Files) != len(got) {
				t.Fatalf("%s has %d files, the run produced %d (go test -run TestTranscripts -update after checking)", path, len(ar.Files), len(got))
			}
			for i, want := range ar.Files {
				if want.Name != got[i].Name || strings.TrimSpace(string(want.Data)) != strings.TrimSpace(string(got[i].Data)) {
					t.Errorf("%s differs (go test -run TestTranscripts -update rewrites it): %s", want.Name, firstDiff(string(want.Data), string(got[i].Data)))
				}
			}
		})
	}
}

// replayTranscript sends the .send files of ar, in order, to a fresh
// connector over the stdio framing and returns them with the answer
// received after each request, as .recv files.
func replayTranscript(t *testing.T, ar *txtar.Archive) []txtar.File {
	c := newConnectorWith(t, "transcript", &connectorOptions{
		dir:   t.TempDir(),
		hosts: []connector.HostConfig{{Host: "https://api.example", Label: "example"}},
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.srv.MCP().Run(ctx, &jsonl.Transport{R: inR, W: outW, MaxLine: mcp.DefaultMaxRequestBodyBytes})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	defer inW.Close()

	var got []txtar.File
	for _, f := range ar.Files {
		name, ok := strings.CutSuffix(f.Name, ".send")
		if !ok {
			continue // an answer: recorded anew below
		}
		send := strings.TrimSpace(string(f.Data))
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(send), &msg); err != nil || strings.ContainsRune(send, '\n') {
			t.Fatalf("%s is not one JSON-RPC message on one line: %v", f.Name, err)
		}
		if _, err := io.WriteString(inW, send+"\n"); err != nil {
			t.Fatal(err)
		}
		got = append(got, txtar.File{Name: f.Name, Data: []byte(send + "\n")})
		if msg.ID == nil {
			continue // a notification has no answer
		}
		select {
		case l := <-lines:
			got = append(got, txtar.File{Name: name + ".recv", Data: []byte(indentJSON(t, l) + "\n")})
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no answer", name)
		}
	}
	return got
}

func indentJSON(t *testing.T, s string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(s), "", "  "); err != nil {
		t.Fatalf("answer is not JSON: %v: %s", err, s)
	}
	return buf.String()
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

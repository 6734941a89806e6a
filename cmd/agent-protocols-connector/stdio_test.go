package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/cmd/agent-protocols-connector/internal/jsonl"
	"github.com/agentprotocols/go-sdk/connector"
	"github.com/agentprotocols/go-sdk/connector/mcptools"
)

// rawStdio is a raw JSON-RPC client on the connector's stdio framing, for
// what the go-sdk client cannot send (bad lines, a cancel notification
// for a call it still waits on).
type rawStdio struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan string
}

func newRawStdio(t *testing.T, srv *mcptools.Server, maxLine int) *rawStdio {
	t.Helper()
	r := startRawStdio(t, srv, maxLine)
	r.send(initBody)
	if l := r.recv(); !strings.Contains(l, `"protocolVersion"`) {
		t.Fatalf("initialize: %s", l)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	return r
}

// startRawStdio is a rawStdio that has sent nothing yet (no initialize).
func startRawStdio(t *testing.T, srv *mcptools.Server, maxLine int) *rawStdio {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.MCP().Run(ctx, &jsonl.Transport{R: inR, W: outW, MaxLine: maxLine})
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close(); cancel(); <-done })
	r := &rawStdio{t: t, in: inW, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	return r
}

func (r *rawStdio) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawStdio) recv() string {
	r.t.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			r.t.Fatal("the connector closed stdout")
		}
		return l
	case <-time.After(10 * time.Second):
		r.t.Fatal("no answer")
	}
	return ""
}

// recvMsg decodes the next line into id and error code (0 for a result).
func (r *rawStdio) recvMsg() (id any, code int, line string) {
	r.t.Helper()
	line = r.recv()
	var m struct {
		ID    any `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		r.t.Fatalf("answer is not JSON: %s", line)
	}
	if m.Error != nil {
		code = m.Error.Code
	}
	return m.ID, code, line
}

// TestStdioBadLines (JSON-RPC 2.0 §5.1, parse and invalid-request
// errors): each line that is not one JSON-RPC message gets
// a JSON-RPC error, and the connector keeps serving: the ping after them
// is answered.
func TestStdioBadLines(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "stdio-bad", h)
	const maxLine = 4096
	r := newRawStdio(t, c.srv, maxLine)
	for _, tc := range []struct {
		name, line string
		id         any
		code       int
	}{
		{"not JSON", "hello", nil, -32700},
		{"truncated", `{"jsonrpc":"2.0","id":3,"method":"ping"`, nil, -32700},
		{"empty object", `{}`, nil, -32600},
		{"batch", `[{"jsonrpc":"2.0","id":78,"method":"ping"}]`, nil, -32600},
		{"version 1.0", `{"jsonrpc":"1.0","id":5,"method":"ping"}`, float64(5), -32600},
		{"over the frame limit", `{"jsonrpc":"2.0","id":6,"method":"ping","params":{"x":"` + strings.Repeat("a", 2*maxLine) + `"}}`, nil, -32600},
	} {
		r.send(tc.line)
		id, code, line := r.recvMsg()
		if id != tc.id || code != tc.code || (tc.id == nil && !strings.Contains(line, `"id":null`)) {
			t.Errorf("%s: got %s, want id %v code %d", tc.name, line, tc.id, tc.code)
		}
		r.send(`{"jsonrpc":"2.0","id":100,"method":"ping"}`)
		if id, code, line := r.recvMsg(); id != float64(100) || code != 0 {
			t.Fatalf("%s: the connector stopped serving: %s", tc.name, line)
		}
	}
}

// TestStdioCancelledGetsNoResponse (MCP 2025-11-25, cancellation): after notifications/cancelled
// for a long-poll, the poll ends and no response for it is sent; the
// next item still reaches the next poll.
func TestStdioCancelledGetsNoResponse(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "stdio-cancel", h)
	r := newRawStdio(t, c.srv, 1<<20)
	r.send(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"` + connector.ToolPrefix + `inbox_next","arguments":{"wait_ms":20000}}}`)
	// The cancel may reach the connector before or after the poll starts
	// waiting; either order must end the poll without a response.
	start := time.Now()
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42,"reason":"user"}}`)
	for i := 101; i <= 103; i++ {
		r.send(`{"jsonrpc":"2.0","id":` + itoa(i) + `,"method":"ping"}`)
		if id, _, line := r.recvMsg(); id != float64(i) {
			t.Fatalf("want the ping %d answer, got %s", i, line)
		}
	}
	// The cancelled poll has ended (it would otherwise hold the session's
	// handler slot for 20 s); nothing for id 42 arrived meanwhile.
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the cancelled poll did not end promptly")
	}
	select {
	case l := <-r.lines:
		t.Fatalf("unexpected line after the cancel: %s", l)
	case <-time.After(100 * time.Millisecond):
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

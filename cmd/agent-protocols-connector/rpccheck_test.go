package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Request ids the go-sdk would answer under another id, and what it
// answers with the code 0.
var unechoableIDs = []string{"1.5", "1e3", "-0", "1.0", "123456789012345678901234567890", "9007199254740993", "-9007199254740992", "null", "true", "[1]", "{}"}

// echoableIDs are answered under exactly the id sent.
var echoableIDs = []string{"0", "7", "-5", "9007199254740991", "-9007199254740991", `"a"`, `""`, `"1.5"`}

// rpcError is the code and id of a JSON-RPC answer (code 0: a result).
func rpcError(t *testing.T, msg []byte) (id json.RawMessage, code int64, hasCode bool) {
	t.Helper()
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code *int64 `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatalf("answer is not JSON: %s", msg)
	}
	if m.Error == nil {
		return m.ID, 0, false
	}
	if m.Error.Code == nil {
		t.Fatalf("an error without a code: %s", msg)
	}
	return m.ID, *m.Error.Code, true
}

// TestRequestIDsEchoedOrRefused: over stdio and HTTP, a request id is
// either answered exactly as sent or, when the go-sdk could not echo it
// (a fraction, an exponent, beyond 2^53, null), refused with -32600 and
// the id null — never answered under another id.
func TestRequestIDsEchoedOrRefused(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "ids", h)
	stdio := newRawStdio(t, c.srv, 1<<20)
	sessionHTTP := newRawHTTP(t, serveHTTP(t, c))
	send := map[string]func(line string) []byte{
		"stdio": func(line string) []byte { stdio.send(line); return []byte(stdio.recv()) },
		"http": func(line string) []byte {
			resp := sessionHTTP.post(line, nil)
			defer resp.Body.Close()
			if resp.Header.Get("Content-Type") == "application/json" {
				b, _ := io.ReadAll(resp.Body)
				return b
			}
			events := make(chan [2]string, 4)
			go sseEvents(resp.Body, events)
			for ev := range events {
				if strings.Contains(ev[1], `"id"`) {
					return []byte(ev[1])
				}
			}
			t.Fatalf("no answer to %s", line)
			return nil
		},
	}
	for name, send := range send {
		t.Run(name, func(t *testing.T) {
			for _, raw := range unechoableIDs {
				id, code, _ := rpcError(t, send(`{"jsonrpc":"2.0","id":`+raw+`,"method":"tools/list"}`))
				if code != jsonrpc.CodeInvalidRequest || string(id) != "null" {
					t.Errorf("id %s: answered under id %s with code %d, want -32600 under null", raw, id, code)
				}
			}
			for _, raw := range echoableIDs {
				id, code, isErr := rpcError(t, send(`{"jsonrpc":"2.0","id":`+raw+`,"method":"tools/list"}`))
				if isErr || string(id) != raw {
					t.Errorf("id %s: answered under id %s (code %d), want the result under %s", raw, id, code, raw)
				}
			}
		})
	}
}

// TestNoCodeZero: what the go-sdk answers with the code 0 — a call before
// initialize, initialize with a protocolVersion that is not a string or
// without params — gets a JSON-RPC code, over stdio and HTTP.
func TestNoCodeZero(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "code0", h)
	badInits := []string{
		`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":42,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"initialize","params":null}`,
		`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":[],"clientInfo":{"name":"x","version":"1"}}}`,
	}
	t.Run("stdio", func(t *testing.T) {
		r := startRawStdio(t, c.srv, 1<<20)
		for _, tc := range []struct {
			line string
			code int64
		}{
			{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, jsonrpc.CodeInvalidRequest},
			{badInits[0], jsonrpc.CodeInvalidParams},
			{badInits[1], jsonrpc.CodeInvalidParams},
			{badInits[2], jsonrpc.CodeInvalidParams},
			{`{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`, jsonrpc.CodeInvalidRequest},
		} {
			r.send(tc.line)
			if _, code, _ := rpcError(t, []byte(r.recv())); code != tc.code {
				t.Errorf("%s: code %d, want %d", tc.line, code, tc.code)
			}
		}
		// Initialize still works after the refusals; then the usual codes.
		r.send(initBody)
		if _, code, isErr := rpcError(t, []byte(r.recv())); isErr {
			t.Fatalf("initialize after refusals: code %d", code)
		}
		r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		for _, tc := range []struct {
			line string
			code int64
		}{
			{`{"jsonrpc":"2.0","id":4,"method":"no/such/method"}`, jsonrpc.CodeMethodNotFound},
			{`{"jsonrpc":"2.0","id":5,"method":"ping","params":["a"]}`, jsonrpc.CodeInvalidParams},
			{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":7}}`, jsonrpc.CodeInvalidParams},
		} {
			r.send(tc.line)
			if _, code, _ := rpcError(t, []byte(r.recv())); code != tc.code {
				t.Errorf("%s: code %d, want %d", tc.line, code, tc.code)
			}
		}
	})
	t.Run("http", func(t *testing.T) {
		r := &rawHTTP{t: t, url: serveHTTP(t, c).URL}
		for _, line := range badInits {
			resp := r.post(line, nil)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if _, code, _ := rpcError(t, bytes.TrimSpace(b)); resp.StatusCode != http.StatusBadRequest || code != jsonrpc.CodeInvalidParams {
				t.Errorf("%s: HTTP %d %s, want 400 with -32602", line, resp.StatusCode, b)
			}
		}
	})
}

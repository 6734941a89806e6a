package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/agentprotocols/go-sdk/connector"
	"github.com/agentprotocols/go-sdk/identity"
)

// TestToolResultError pins §5's mapping: a protocol error keeps its code
// and data in an isError result; the engine's local refusals get codes;
// malformed input is a JSON-RPC error.
func TestToolResultError(t *testing.T) {
	hostErr := &identity.Error{Code: "room_head_mismatch", Message: "head moved", Data: []byte(`{"head_seq":44,"head_hash":"abc"}`), Status: 409}
	for _, tc := range []struct {
		name    string
		err     error
		code    string
		data    string
		jsonRPC bool
	}{
		{"host error with data", fmt.Errorf("submit: %w", hostErr), "room_head_mismatch", `{"head_seq":44,"head_hash":"abc"}`, false},
		{"permission_denied", identity.NewError("permission_denied", "observers cannot speak"), "permission_denied", "", false},
		{"ambiguous", fmt.Errorf("room x: %w", connector.ErrAmbiguousRoom), string(CodeAmbiguousRoom), "", false},
		{"not allowed", connector.ErrHostNotAllowed, string(CodeHostNotAllowed), "", false},
		{"role mismatch", connector.ErrRoleMismatch, string(CodeRoleMismatch), "", false},
		{"rate limited", connector.ErrRateLimited, "rate_limited", "", false},
		{"other", errors.New("disk full"), string(CodeConnector), "", false},
		{"invalid input", fmt.Errorf("%w: base_hash without base_seq", connector.ErrInvalidInput), "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := toolResultError("agent_protocols_x", classify(tc.err))
			if tc.jsonRPC {
				var je *jsonrpc.Error
				if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || res != nil {
					t.Fatalf("want JSON-RPC invalid params, got %v %v", res, err)
				}
				return
			}
			if err != nil || res == nil || !res.IsError {
				t.Fatalf("want isError result, got %v %v", res, err)
			}
			var te struct {
				Code string          `json:"code"`
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(res.StructuredContent.(json.RawMessage), &te); err != nil {
				t.Fatal(err)
			}
			if te.Code != tc.code || string(te.Data) != tc.data {
				t.Fatalf("code %q data %s; want %q %s", te.Code, te.Data, tc.code, tc.data)
			}
		})
	}
}

// TestNotifierCoalesces: a burst of changes to one URI costs one
// notification, and Notify never blocks without a reader.
func TestNotifierCoalesces(t *testing.T) {
	n := NewNotifier()
	for range 10000 {
		n.Notify(connector.URIInboxPending)
		n.Notify(connector.URIDraftsHeld)
	}
	if len(n.order) != 2 || len(n.pending) != 2 {
		t.Fatalf("queued %d URIs, want 2", len(n.order))
	}
}

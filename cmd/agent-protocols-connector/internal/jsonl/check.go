package jsonl

import (
	"bytes"
	"errors"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// JSON-RPC rules every transport of the program applies to a message
// before the go-sdk sees it, where the SDK would answer wrongly: a request
// id it cannot echo, and answers with the code 0, which no JSON-RPC error
// has (modelcontextprotocol/go-sdk#976).

// maxEchoableID is the largest integer id the go-sdk echoes exactly: it
// reads ids as float64 (modelcontextprotocol/go-sdk#1178).
const maxEchoableID = 1<<53 - 1

// CheckRequestID refuses a message whose id the go-sdk would answer under
// another id — a number with a fraction or an exponent (1.5, 1e3), an
// integer beyond ±(2^53−1), -0 — and a request whose id is null or not a
// string or number (MCP: "Requests MUST include a string or integer ID …
// MUST NOT be null"). A message without an id (a notification) passes.
// msg is valid JSON; one that is not an object passes (other checks
// refuse it).
func CheckRequestID(msg []byte) error {
	var m struct {
		ID     jsontext.Value `json:"id"`
		Method jsontext.Value `json:"method"`
	}
	if jsonv2.Unmarshal(msg, &m, jsonv2.RejectUnknownMembers(false)) != nil || m.ID == nil {
		return nil
	}
	id := bytes.TrimSpace(m.ID)
	switch id[0] {
	case '"':
		return nil
	case 'n':
		if m.Method == nil {
			return nil // a response to an unknown id, for the SDK to drop
		}
		return errors.New("the request id is null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if !safeInteger(id) {
			return fmt.Errorf("the request id %.40s is not an integer the answer can carry exactly (at most %d in magnitude, no fraction or exponent)", id, int64(maxEchoableID))
		}
		return nil
	}
	return errors.New("the request id is not a string or an integer")
}

// safeInteger reports whether a JSON number is an integer literal of at
// most maxEchoableID in magnitude, other than -0.
func safeInteger(n []byte) bool {
	digits := bytes.TrimPrefix(n, []byte("-"))
	if len(digits) == 0 || len(digits) > 16 || (digits[0] == '0' && len(n) > 1) {
		return false
	}
	var v int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
		v = v*10 + int64(c-'0')
	}
	return v <= maxEchoableID
}

// CheckInitializeParams refuses initialize params the go-sdk decodes
// without a code on failure (protocolVersion not a string, params null):
// they are invalid params, -32602.
func CheckInitializeParams(params []byte) error {
	if t := bytes.TrimSpace(params); len(t) == 0 || string(t) == "null" {
		return errors.New(`invalid params: initialize needs "params"`)
	}
	var p mcp.InitializeParams
	if err := jsonv2.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("invalid params: %v", err)
	}
	return nil
}

// CodedError is err as a JSON-RPC error with a code: an error the go-sdk
// sends without one (the code 0 on the wire) becomes code, with its
// message.
func CodedError(err error, code int64) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) && we.Code != 0 {
		return err
	}
	return &jsonrpc.Error{Code: code, Message: err.Error()}
}

package jsonl

import (
	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ErrorResponse encodes a JSON-RPC error response to request id. Without
// a usable request id (a line that is not even JSON-RPC) the id is null,
// as JSON-RPC 2.0 requires; the go-sdk's encoder would leave the member
// out.
func ErrorResponse(id jsonrpc.ID, e *jsonrpc.Error) ([]byte, error) {
	if id.IsValid() {
		return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: e})
	}
	return json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", nil, e})
}

// PeekID is the id of a line that is JSON but not a JSON-RPC message the
// go-sdk decodes, when it is a string or a number, so that its error can
// still be correlated; else the zero ID (answered with the id null).
func PeekID(line []byte) jsonrpc.ID {
	var m struct {
		ID any `json:"id"`
	}
	if jsonv2.Unmarshal(line, &m) != nil {
		return jsonrpc.ID{}
	}
	switch m.ID.(type) {
	case string, float64:
		if id, err := jsonrpc.MakeID(m.ID); err == nil {
			return id
		}
	}
	return jsonrpc.ID{}
}

// CancelledID is the requestId of notifications/cancelled's params.
func CancelledID(params []byte) (jsonrpc.ID, bool) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if jsonv2.Unmarshal(params, &p) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	return id, err == nil && id.IsValid()
}

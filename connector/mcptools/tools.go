package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentprotocols/go-sdk/connector"
)

// addTools registers the framework-neutral tool table of package connector
// ([connector.Tools]): the MCP layer adds only the wire mapping.
func (s *Server) addTools() {
	for _, t := range connector.Tools() {
		a := t.Annotations
		s.mcp.AddTool(&mcp.Tool{
			Name:         t.Name,
			Title:        t.Title,
			Description:  t.Description,
			InputSchema:  t.InputSchema,
			OutputSchema: t.OutputSchema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: a.ReadOnlyHint, IdempotentHint: a.IdempotentHint,
				DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint},
		}, s.toolHandler(t))
	}
}

// toolHandler maps one tool to MCP 2025-11-25: a result is
// structuredContent plus the same JSON as the one text item (§5); every
// refusal, including arguments that do not fit the input schema
// (SEP-1303), is an isError result carrying the [connector.ToolError], so
// the model sees it and can correct itself. Only a request that is not a
// well-formed tools/call (arguments not an object) is a JSON-RPC error,
// as is an unknown tool (the SDK's -32602).
func (s *Server) toolHandler(t *connector.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if !isObjectOrAbsent(args) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: t.Name + ": arguments must be a JSON object"}
		}
		stop := s.keepAlive(ctx, req)
		out, err := t.Call(ctx, s.eng, s.sessionFor(req.Session, req.Extra), args)
		stop()
		if err != nil {
			return toolResultError(err)
		}
		return &mcp.CallToolResult{
			StructuredContent: encodedJSON(out),
			Content:           []mcp.Content{&mcp.TextContent{Text: string(out)}},
		}, nil
	}
}

// encodedJSON is a tool's structured result as encoding/json wrote it:
// compact, with <, > and & escaped, so the go-sdk (which compacts it
// again) and toolResult write it as it is.
type encodedJSON []byte

// MarshalJSON returns the encoded value.
func (e encodedJSON) MarshalJSON() ([]byte, error) { return e, nil }

// toolResult is a result of toolHandler or toolResultError with the
// members and order of the go-sdk's CallToolResult encoding, which the
// go-sdk's encoding/json writes byte for byte as it writes the
// CallToolResult (TestEncodeToolResult) but with fewer passes over the
// result: the text is quoted once, where the go-sdk quotes it, compacts
// the quoted copy and compacts the whole result again (each a
// byte-at-a-time scan).
type toolResult struct {
	mcp.ResultBase
	Content           [1]toolText `json:"content"`
	StructuredContent encodedJSON `json:"structuredContent"`
	IsError           bool        `json:"isError,omitempty"`
}

// toolText is a text content item.
type toolText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// asToolResult is res as a toolResult when it is a result toolHandler or
// toolResultError made (its one text item the structured result's JSON,
// which holds no <, > or & for the go-sdk's HTML escaping to change); ok
// is false for any other result, which the go-sdk encodes.
func asToolResult(res mcp.Result) (tr *toolResult, ok bool) {
	r, _ := res.(*mcp.CallToolResult)
	if r == nil || r.Meta != nil || r.InputRequests != nil || r.RequestState != "" || len(r.Content) != 1 {
		return nil, false
	}
	sc, ok := r.StructuredContent.(encodedJSON)
	tc, _ := r.Content[0].(*mcp.TextContent)
	if !ok || tc == nil || tc.Meta != nil || tc.Annotations != nil || tc.Text != string(sc) {
		return nil, false
	}
	return &toolResult{Content: [1]toolText{{Type: "text", Text: tc.Text}}, StructuredContent: sc, IsError: r.IsError}, true
}

// isObjectOrAbsent reports whether raw tool arguments are a JSON object,
// null or absent: CallToolRequest's arguments member is an object.
func isObjectOrAbsent(args json.RawMessage) bool {
	t := bytes.TrimSpace(args)
	return len(t) == 0 || t[0] == '{' || string(t) == "null"
}

// toolResultError is the isError result for a tool's refusal: the
// [connector.ToolError] as structuredContent and as the one text item.
func toolResultError(err error) (*mcp.CallToolResult, error) {
	var te *connector.ToolError
	if !errors.As(err, &te) {
		te = &connector.ToolError{Code: connector.CodeConnector, Message: err.Error(), Source: connector.SourceConnector, Err: err}
	}
	b, merr := json.Marshal(te)
	if merr != nil {
		return nil, merr
	}
	return &mcp.CallToolResult{
		IsError:           true,
		StructuredContent: encodedJSON(b),
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
	}, nil
}

// keepAlive sends notifications/progress every progressEvery while a call
// that carries a progressToken runs, so a client that resets its request
// timeout on progress (the TypeScript SDK's resetTimeoutOnProgress) keeps
// waiting on a long-poll. stop ends it before the result is sent.
func (s *Server) keepAlive(ctx context.Context, req *mcp.CallToolRequest) (stop func()) {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(s.progressEvery)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(n), Message: "waiting"})
		}
	}()
	return func() { cancel(); <-done }
}

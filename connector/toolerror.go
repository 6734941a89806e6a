package connector

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/untrusted"
)

// Connector error codes: the connector's own refusals, beside the protocol
// codes hosts send (§5). A [ToolError]'s Source says which kind it is.
const (
	// CodeInvalidArguments: the arguments do not fit the tool's input
	// schema, or name an impossible combination; data carries field (a
	// JSON Pointer into the arguments, "" for the whole) and reason.
	CodeInvalidArguments identity.Code = "invalid_arguments"
	CodeAmbiguousRoom    identity.Code = "ambiguous_room"
	CodeHostNotAllowed   identity.Code = "host_not_allowed"
	CodeUnknownRoom      identity.Code = "room_not_open"
	CodeNotFound         identity.Code = "not_found"
	CodeRoleMismatch     identity.Code = "role_mismatch"
	CodePendingOutbox    identity.Code = "pending_outbox"
	CodeRateLimited      identity.Code = "rate_limited"
	CodeCancelled        identity.Code = "cancelled"
	// CodeConnector is any other local failure (a full disk, a bug).
	CodeConnector identity.Code = "connector_error"
)

// Sources of a [ToolError].
const (
	// SourceHost: a host refused; Code, Message and Data are the host's,
	// as it sent them (Message clipped).
	SourceHost = "host"
	// SourceConnector: this connector refused before or instead of asking
	// a host (its own codes, or a protocol code from its local checks).
	SourceConnector = "connector"
)

// ToolError is a tool's refusal: the structured content of an MCP isError
// result (§5), and the error [Tool.Call] returns. Code is machine-readable
// (the host's protocol code, or one of the connector's Code constants);
// Source tells the host's word from the connector's.
type ToolError struct {
	Code    identity.Code  `json:"code"`
	Message string         `json:"message,omitempty"`
	Data    jsontext.Value `json:"data,omitempty"`
	Source  string         `json:"source"`
	// Host is the origin of the host that refused (Source [SourceHost]).
	Host string `json:"host,omitempty"`
	// Err is the underlying error (errors.Is and errors.As see through).
	Err error `json:"-"`
}

// Error formats the error as "source code: message".
func (e *ToolError) Error() string {
	s := e.Source + " " + string(e.Code)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns the underlying error.
func (e *ToolError) Unwrap() error { return e.Err }

// argError is an argument error with its field and reason in data.
func argError(field, reason string) *ToolError {
	data, _ := json.Marshal(struct {
		Field  string `json:"field"`
		Reason string `json:"reason"`
	}{field, reason})
	msg := reason
	if field != "" {
		msg = field + ": " + reason
	}
	return &ToolError{Code: CodeInvalidArguments, Message: "arguments: " + msg, Data: data, Source: SourceConnector, Err: ErrInvalidInput}
}

// localCodes gives the engine's local refusals their codes.
var localCodes = []struct {
	err  error
	code identity.Code
}{
	{ErrAmbiguousRoom, CodeAmbiguousRoom},
	{ErrHostNotAllowed, CodeHostNotAllowed},
	{ErrUnknownRoom, CodeUnknownRoom},
	{ErrRoleMismatch, CodeRoleMismatch},
	{ErrNotFound, CodeNotFound},
	{ErrRateLimited, CodeRateLimited},
	{ErrPendingOutbox, CodePendingOutbox},
}

// toolError maps an engine error to a ToolError.
func toolError(ctx context.Context, err error) *ToolError {
	var te *ToolError
	if errors.As(err, &te) {
		return te
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return &ToolError{Code: CodeCancelled, Message: ctx.Err().Error(), Source: SourceConnector, Err: err}
	}
	var he *HostError
	if errors.As(err, &he) {
		return &ToolError{Code: he.Code, Message: clipMessage(he.Message), Data: withRetryAfter(he.Data, he.RetryAfter),
			Source: SourceHost, Host: he.Host, Err: err}
	}
	var ie *identity.Error
	if errors.As(err, &ie) {
		out := &ToolError{Code: ie.Code, Message: clipMessage(ie.Message), Source: SourceConnector, Err: err}
		if out.Message == "" {
			out.Message = clipMessage(err.Error())
		}
		if len(ie.Data) > 0 {
			out.Data = ie.Data
		}
		return out
	}
	if errors.Is(err, ErrInvalidInput) {
		return argError("", clipMessage(strings.TrimPrefix(err.Error(), ErrInvalidInput.Error()+": ")))
	}
	for _, lc := range localCodes {
		if errors.Is(err, lc.err) {
			return &ToolError{Code: lc.code, Message: clipMessage(err.Error()), Source: SourceConnector, Err: err}
		}
	}
	return &ToolError{Code: CodeConnector, Message: clipMessage(err.Error()), Source: SourceConnector, Err: err}
}

// withRetryAfter adds retry_after_ms to a host's data object (or makes
// one), so an agent told rate_limited also learns when to try again.
func withRetryAfter(data jsontext.Value, d time.Duration) jsontext.Value {
	if d <= 0 {
		return data
	}
	m := map[string]any{}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &m); err != nil {
			return data // not an object: keep the host's data as sent
		}
	}
	m["retry_after_ms"] = d.Milliseconds()
	b, err := json.Marshal(m)
	if err != nil {
		return data
	}
	return b
}

// clipMessage bounds a message an untrusted host may have chosen.
func clipMessage(s string) string { return untrusted.Clip(s, 1024) }

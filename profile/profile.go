package profile

import (
	"errors"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// Protocol identifiers of Agent Profile 1.0.
const (
	// Protocol is the event "protocol" value of every profile event. Its
	// closed field set (the six Identity fields) is envelope.ProfileProtocol.
	Protocol = envelope.ProfileName
	// TypeUpdate is the only event type of the protocol.
	TypeUpdate = "profile.update"
)

// HTTP API names and default paths (§7).
const (
	// DiscoveryPath is where a profile service serves its discovery
	// document.
	DiscoveryPath = "/.well-known/agent-profile"
	// DefaultProfilesPath is the profile collection: GET {path}/{agent_id},
	// POST {path} and GET {path}/{agent_id}/events.
	DefaultProfilesPath = "/v1/profiles"
	// DefaultBatchPath is the batch read endpoint.
	DefaultBatchPath = "/v1/profiles/batch"
	// EndpointProfiles names the discovery endpoint that overrides
	// DefaultProfilesPath.
	EndpointProfiles = "profiles"
	// EndpointProfileBatch names the discovery endpoint that overrides
	// DefaultBatchPath.
	EndpointProfileBatch = "profile_batch"
	// FeatureBatchRead is the discovery feature of POST …/batch.
	FeatureBatchRead = "batch-read"
	// FeatureEventHistory is the discovery feature of GET …/{agent_id}/events.
	FeatureEventHistory = "event-history"
	// MaxBatchIDs is the most Agent IDs one batch request may carry.
	MaxBatchIDs = 1000
)

// CodeInvalidResponse is not a protocol code: the SDK uses it for a service
// response that is malformed or fails verification (a document that is not
// the materialization of the latest signed update, a history page out of
// order, …). Services never send it.
const CodeInvalidResponse identity.Code = "invalid_response"

// ErrInvalidResponse matches every CodeInvalidResponse error with errors.Is.
var ErrInvalidResponse = identity.NewError(CodeInvalidResponse, "invalid profile service response")

// ErrUnsupported reports that the service does not offer an optional
// feature a call needs (its discovery document does not list it). Without
// event history a profile cannot be verified, so Client.Get fails with it
// rather than returning unverified data.
var ErrUnsupported = errors.New("profile: service does not support the feature")

// FieldError locates a rule violation inside a payload or document.
// Rejections of a payload are *identity.Error values with code
// invalid_event whose Err is a *FieldError and whose Data is
// {"pointer":"…"}, so the offending field is named both locally and in the
// error body a service sends.
type FieldError struct {
	// Pointer is an RFC 6901 JSON Pointer relative to the payload (or
	// document), e.g. "/links/1/url"; "" is the whole value.
	Pointer string
	// Reason says what is wrong with the value.
	Reason string
}

// Error returns "<pointer>: <reason>".
func (e *FieldError) Error() string {
	if e.Pointer == "" {
		return "(root): " + e.Reason
	}
	return e.Pointer + ": " + e.Reason
}

// toError turns a field error into the protocol error with the given code.
func (e *FieldError) toError(code identity.Code, what string) *identity.Error {
	data, _ := jsontext.AppendQuote([]byte(`{"pointer":`), e.Pointer)
	return &identity.Error{
		Code:    code,
		Message: what + " " + e.Error(),
		Data:    jsontext.Value(append(data, '}')),
		Err:     e,
	}
}

// FieldPointer returns the JSON Pointer of the field an error names: the
// Pointer of a local *FieldError, or the "pointer" member of the data of an
// error body a service sent. ok is false when err names no field.
func FieldPointer(err error) (pointer string, ok bool) {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Pointer, true
	}
	var ie *identity.Error
	if !errors.As(err, &ie) || len(ie.Data) == 0 {
		return "", false
	}
	var data struct {
		Pointer *string `json:"pointer"`
	}
	if json.Unmarshal(ie.Data, &data) != nil || data.Pointer == nil {
		return "", false
	}
	return *data.Pointer, true
}

// invalidResponse builds a CodeInvalidResponse error.
func invalidResponse(msg string, cause error) *identity.Error {
	e := &identity.Error{Code: CodeInvalidResponse, Message: msg, Err: cause}
	if cause != nil {
		e.Message += ": " + cause.Error()
	}
	return e
}

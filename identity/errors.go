package identity

import (
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Code is a protocol error code, the stable machine-readable half of an
// error body {"error":{"code","message","data"}}.
type Code string

// The error codes shared by every Agent Identity based service (Identity §8).
// Protocols add their own codes; they never redefine these.
const (
	CodeInvalidRequest       Code = "invalid_request"
	CodeInvalidEvent         Code = "invalid_event"
	CodeInvalidEventHash     Code = "invalid_event_hash"
	CodeInvalidSignature     Code = "invalid_signature"
	CodeInvalidActor         Code = "invalid_actor"
	CodeTimestampOutOfWindow Code = "timestamp_out_of_window"
	CodeNonceNotGreater      Code = "nonce_not_greater"
	CodeInvalidToken         Code = "invalid_token"
	CodePermissionDenied     Code = "permission_denied"
	CodeNotFound             Code = "not_found"
	CodeRateLimited          Code = "rate_limited"
	CodePayloadTooLarge      Code = "payload_too_large"
)

// Error is a protocol error: a local rejection or one a service sent.
//
// errors.Is matches an *Error against any other *Error with the same Code,
// so a local check and a server response are tested the same way:
//
//	if errors.Is(err, identity.ErrNonceNotGreater) { … }
//
// Err optionally carries the finer cause (for example ErrSmallOrderA inside
// an invalid_signature error); errors.Is sees it too.
type Error struct {
	Code    Code
	Message string
	// Data is the raw "data" member of an error body, if any.
	Data jsontext.Value
	// Status is the HTTP status the error came with, or the one a service
	// should send it with; 0 means DefaultStatus(Code).
	Status int
	// MaxSeenNonce is the Max-Seen-Nonce header value (0 when absent).
	MaxSeenNonce int64
	// RetryAfter is the answer's Retry-After delay (0 when absent), as the
	// SDK's HTTP layer parsed it, so a caller can tell its user when to
	// try again.
	RetryAfter time.Duration
	// Err is the underlying cause, if any.
	Err error
}

// Error formats the error as "code: message". The constructors put the
// cause's text in Message; the cause itself is shown only when Message is
// empty.
func (e *Error) Error() string {
	switch {
	case e.Message != "":
		return string(e.Code) + ": " + e.Message
	case e.Err != nil:
		return string(e.Code) + ": " + e.Err.Error()
	}
	return string(e.Code)
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// HTTPStatus returns Status, or DefaultStatus(Code) when Status is unset.
func (e *Error) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	return DefaultStatus(e.Code)
}

// NewError returns an error with the given code and message.
func NewError(code Code, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Errorf returns an error with the given code whose message is formatted
// with fmt.Errorf semantics: a %w verb also becomes the Err cause.
func Errorf(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Err: unwrapOne(err)}
}

// Wrap returns an error with the given code whose cause is err. The message
// is err's text prefixed by context when context is not empty.
func Wrap(code Code, context string, err error) *Error {
	msg := err.Error()
	if context != "" {
		msg = context + ": " + msg
	}
	return &Error{Code: code, Message: msg, Err: err}
}

func unwrapOne(err error) error {
	if u, ok := err.(interface{ Unwrap() error }); ok {
		return u.Unwrap()
	}
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		if errs := u.Unwrap(); len(errs) > 0 {
			return errs[0]
		}
	}
	return nil
}

// Sentinels for the shared codes, for use with errors.Is.
var (
	ErrInvalidRequest       = NewError(CodeInvalidRequest, "invalid request")
	ErrInvalidEvent         = NewError(CodeInvalidEvent, "invalid event")
	ErrInvalidEventHash     = NewError(CodeInvalidEventHash, "event hash does not match the event")
	ErrInvalidSignature     = NewError(CodeInvalidSignature, "signature verification failed")
	ErrInvalidActor         = NewError(CodeInvalidActor, "invalid actor")
	ErrTimestampOutOfWindow = NewError(CodeTimestampOutOfWindow, "timestamp outside the live-write window")
	ErrNonceNotGreater      = NewError(CodeNonceNotGreater, "nonce not greater than the current maximum")
	ErrInvalidToken         = NewError(CodeInvalidToken, "request token rejected")
	ErrPermissionDenied     = NewError(CodePermissionDenied, "permission denied")
	ErrNotFound             = NewError(CodeNotFound, "not found")
	ErrRateLimited          = NewError(CodeRateLimited, "rate limited")
	ErrPayloadTooLarge      = NewError(CodePayloadTooLarge, "payload too large")
)

// DefaultStatus is the HTTP status a service sends with code when it has no
// more specific one: the SDK's single mapping for every wire code, whichever
// package defines it (Identity, Agent Profile, the ADP §20 codes and the
// pack codes), so that a host sends one status per code. The specification
// only requires a non-2xx status; these follow ordinary HTTP meaning (see
// the table in status.go). Unknown codes map to 400.
func DefaultStatus(code Code) int {
	if s, ok := defaultStatus[code]; ok {
		return s
	}
	return 400
}

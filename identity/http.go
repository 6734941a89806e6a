package identity

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// CodeInternalError is the code of errors a service cannot attribute to
// the request (HTTP 5xx). The specification defines no such code; the SDK
// uses this one for WriteError's generic 500 and for 5xx responses whose
// body is not an error body.
const CodeInternalError Code = "internal_error"

// CodeServiceUnavailable is the code of a service that cannot judge a
// request for now (its storage is unreachable) and asks the client to
// send it again, after the answer's Retry-After (HTTP 503). Like
// internal_error it is the SDK's, not the specification's: Identity §8's
// shared codes name no transient failure of the service, and
// rate_limited, the only retryable one, blames the client's quota. Every
// SDK client treats a 503 as transient: it retries it with backoff, and
// the connector keeps the signed write to send again, which the
// exact-resubmission rule (§6.3) makes safe whether or not the service
// had stored it.
const CodeServiceUnavailable Code = "service_unavailable"

// ErrServiceUnavailable matches (errors.Is) any service_unavailable error.
var ErrServiceUnavailable = NewError(CodeServiceUnavailable, "service unavailable")

// MaxErrorBodySize bounds how much of an error response ReadError reads.
const MaxErrorBodySize = 64 << 10

// MaxSeenNonceHeader is the response header that reports an actor's
// greatest accepted nonce (Identity §6.2).
const MaxSeenNonceHeader = "Max-Seen-Nonce"

// ErrNoErrorBody is the cause of an *Error that ReadError built from the
// status alone because the body was not a valid error body.
var ErrNoErrorBody = errors.New("identity: response has no valid error body")

// wireError is the error body {"error":{"code","message","data"?}}.
type wireError struct {
	Error struct {
		Code    jsontext.Value `json:"code"`
		Message jsontext.Value `json:"message"`
		Data    jsontext.Value `json:"data,omitzero"`
	} `json:"error"`
}

// ReadError turns a non-2xx response into an *Error and returns nil for a
// 2xx one. It reads at most MaxErrorBodySize bytes of the body and leaves
// closing it to the caller.
//
// The body must be a strict JSON error body {"error":{"code","message",
// "data"?}} (other members, which protocols may add, are ignored). Status
// is always the response status, and MaxSeenNonce is the Max-Seen-Nonce
// header when it is a valid nonce. When the body is not a valid error body
// the *Error still carries the status, a code derived from it (401
// invalid_token, 403 permission_denied, 404 not_found, 413
// payload_too_large, 429 rate_limited, other 4xx invalid_request, anything
// else internal_error) and the cause ErrNoErrorBody.
func ReadError(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	e := &Error{Status: resp.StatusCode}
	if h := resp.Header.Get(MaxSeenNonceHeader); h != "" {
		if n, err := ParseMaxSeenNonce(h); err == nil {
			e.MaxSeenNonce = n
		}
	}
	var body []byte
	var err error
	if resp.Body != nil {
		body, err = io.ReadAll(io.LimitReader(resp.Body, MaxErrorBodySize+1))
	}
	if err == nil && len(body) <= MaxErrorBodySize && parseErrorBody(body, e, resp.StatusCode) {
		return e
	}
	e.Code = statusCode(resp.StatusCode)
	e.Message = statusLine(resp.StatusCode)
	e.Err = ErrNoErrorBody
	if err != nil {
		e.Err = fmt.Errorf("%w: %w", ErrNoErrorBody, err)
	}
	return e
}

// parseErrorBody reads an error body's code, message and data into e.
// The code decides what the caller sees (errors.Is against its sentinel),
// so a body with a code keeps it even when its message is missing or not
// a string (the message is then the status line's); without a code the
// body counts as absent.
func parseErrorBody(b []byte, e *Error, status int) bool {
	var w wireError
	if !isObject(b) || strictjson.UnmarshalOpen(b, &w) != nil {
		return false
	}
	code, ok := jsonString(w.Error.Code)
	if !ok || code == "" {
		return false
	}
	msg, ok := jsonString(w.Error.Message)
	if !ok || msg == "" {
		msg = statusLine(status)
	}
	e.Code, e.Message = Code(code), msg
	if len(w.Error.Data) > 0 {
		e.Data = w.Error.Data.Clone()
	}
	return true
}

// statusLine is "HTTP 409 Conflict", the message of an answer that gave
// none.
func statusLine(status int) string {
	s := "HTTP " + strconv.Itoa(status)
	if t := http.StatusText(status); t != "" {
		s += " " + t
	}
	return s
}

// statusCode picks an error code for a response without an error body.
func statusCode(status int) Code {
	switch {
	case status == http.StatusUnauthorized:
		return CodeInvalidToken
	case status == http.StatusForbidden:
		return CodePermissionDenied
	case status == http.StatusNotFound:
		return CodeNotFound
	case status == http.StatusRequestEntityTooLarge:
		return CodePayloadTooLarge
	case status == http.StatusTooManyRequests:
		return CodeRateLimited
	case status >= 400 && status <= 499:
		return CodeInvalidRequest
	}
	return CodeInternalError
}

// WriteError writes err as an error response. When err's chain holds an
// *Error, the first one supplies the code, message, data, status
// (HTTPStatus, or its code's default if that is not a 4xx or 5xx status)
// and the Max-Seen-Nonce header; its cause (Err) is never sent. Any other
// error — including nil — becomes a 500 internal_error whose body says
// nothing about it: log err yourself.
func WriteError(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) || e == nil || e.Code == "" {
		e = &Error{Code: CodeInternalError, Message: "internal error", Status: http.StatusInternalServerError}
	}
	status := e.HTTPStatus()
	if status < 400 || status > 599 {
		status = DefaultStatus(e.Code)
	}
	msg := e.Message
	if msg == "" {
		msg = string(e.Code)
	}
	var body struct {
		Error struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Data    jsontext.Value `json:"data,omitzero"`
		} `json:"error"`
	}
	body.Error.Code = strings.ToValidUTF8(string(e.Code), "\uFFFD")
	body.Error.Message = strings.ToValidUTF8(msg, "\uFFFD")
	if len(e.Data) > 0 && strictjson.Validate(e.Data) == nil {
		body.Error.Data = e.Data
	}
	b, merr := json.Marshal(&body)
	if merr != nil { // unreachable: every field is valid by construction
		b = []byte(`{"error":{"code":"internal_error","message":"internal error"}}`)
		status = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if e.MaxSeenNonce > 0 {
		h.Set(MaxSeenNonceHeader, strconv.FormatInt(e.MaxSeenNonce, 10))
	}
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// List is the shape of every list response (Identity §8):
//
//	{"result":[…],"next_cursor":"…"}
//
// NextCursor is present exactly when more items follow; pass it back as the
// cursor parameter. It is opaque.
//
// Decoding is strict: strict JSON, "result" is a required array, a
// "next_cursor" member must be a non-empty string, other members are
// refused, and items are decoded rejecting unknown members (an item type
// may implement its own unmarshaling to be more lenient). Encoding always
// writes "result" as an array and omits an empty NextCursor.
type List[T any] struct {
	Result     []T
	NextCursor string
}

// MarshalJSON implements json.Marshaler.
func (l List[T]) MarshalJSON() ([]byte, error) {
	w := struct {
		Result     []T    `json:"result"`
		NextCursor string `json:"next_cursor,omitzero"`
	}{l.Result, l.NextCursor}
	if w.Result == nil {
		w.Result = []T{}
	}
	return json.Marshal(&w, json.FormatNilSliceAsNull(false))
}

// UnmarshalJSON implements json.Unmarshaler.
func (l *List[T]) UnmarshalJSON(b []byte) error {
	var w struct {
		Result     jsontext.Value `json:"result"`
		NextCursor jsontext.Value `json:"next_cursor"`
	}
	if !isObject(b) {
		return errors.New("identity: list is not a JSON object")
	}
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("identity: list: %w", err)
	}
	if w.Result.Kind() != '[' {
		return errors.New(`identity: list has no "result" array`)
	}
	var cursor string
	if len(w.NextCursor) > 0 {
		var ok bool
		if cursor, ok = jsonString(w.NextCursor); !ok || cursor == "" {
			return errors.New(`identity: list "next_cursor" is not a non-empty string`)
		}
	}
	items := []T{}
	if err := json.Unmarshal(w.Result, &items, json.RejectUnknownMembers(true)); err != nil {
		return fmt.Errorf("identity: list result: %w", err)
	}
	l.Result, l.NextCursor = items, cursor
	return nil
}

// DiscoveryPath returns the path of a protocol's discovery document,
// "/.well-known/<protocol>" (Identity §8.4).
func DiscoveryPath(protocol string) string { return "/.well-known/" + protocol }

// Discovery is a protocol discovery document (Identity §8.4), served at
// DiscoveryPath(protocol).
type Discovery struct {
	// Protocol names the protocol; required.
	Protocol string `json:"protocol"`
	// Service is the service origin, which is also the audience of request
	// tokens sent to it; required.
	Service Origin `json:"service"`
	// Endpoints maps protocol-defined names to absolute HTTPS URLs that
	// override the protocol's default paths.
	Endpoints map[string]string `json:"endpoints,omitzero"`
	// Features name optional capabilities; unknown ones are ignored.
	Features []string `json:"features,omitzero"`
	// Extra holds members the protocol adds.
	Extra map[string]jsontext.Value `json:",embed"`
}

// ParseDiscovery strictly parses a discovery document: strict JSON, a
// non-empty protocol, service a valid origin (under opts), each endpoint an
// absolute URL whose origin is valid under opts and that has no userinfo
// or fragment, features unique non-empty strings. Members the protocol adds
// are kept in Extra. Errors are *Error values with code invalid_request.
func ParseDiscovery(b []byte, opts *OriginOptions) (*Discovery, error) {
	var w struct {
		Protocol  jsontext.Value            `json:"protocol"`
		Service   jsontext.Value            `json:"service"`
		Endpoints map[string]string         `json:"endpoints"`
		Features  []string                  `json:"features"`
		Extra     map[string]jsontext.Value `json:",embed"`
	}
	bad := func(msg string, err error) (*Discovery, error) {
		return nil, &Error{Code: CodeInvalidRequest, Message: "invalid discovery document: " + msg, Err: err}
	}
	if !isObject(b) {
		return bad("not a JSON object", nil)
	}
	if err := strictjson.UnmarshalOpen(b, &w); err != nil {
		return bad("malformed", err)
	}
	proto, ok := jsonString(w.Protocol)
	if !ok || proto == "" {
		return bad("protocol is not a non-empty string", nil)
	}
	svc, ok := jsonString(w.Service)
	if !ok {
		return bad("service is not a string", nil)
	}
	origin, err := ParseOrigin(svc, opts)
	if err != nil {
		return bad("service", err)
	}
	for name, raw := range w.Endpoints {
		u, err := url.Parse(raw)
		if err == nil && (u.User != nil || u.Fragment != "" || u.Opaque != "" || !u.IsAbs()) {
			err = ErrOriginPath
		}
		if err == nil {
			_, err = OriginOf(u, opts)
		}
		if err != nil {
			return bad("endpoint "+truncQuote(name), err)
		}
	}
	seen := make(map[string]bool, len(w.Features))
	for _, f := range w.Features {
		if f == "" || seen[f] {
			return bad("features are not unique non-empty strings", nil)
		}
		seen[f] = true
	}
	return &Discovery{Protocol: proto, Service: origin, Endpoints: w.Endpoints, Features: w.Features, Extra: w.Extra}, nil
}

// Endpoint returns the URL of the named endpoint: the listed one if the
// document has it, else the service origin followed by defaultPath.
func (d *Discovery) Endpoint(name, defaultPath string) string {
	if u, ok := d.Endpoints[name]; ok {
		return u
	}
	return d.Service.String() + defaultPath
}

// HasFeature reports whether the document lists the optional feature.
func (d *Discovery) HasFeature(name string) bool {
	for _, f := range d.Features {
		if f == name {
			return true
		}
	}
	return false
}

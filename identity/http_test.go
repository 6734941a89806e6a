package identity_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/identity"
)

// roundTrip serves handler once and returns the raw body and headers of the
// response together with its ReadError.
func roundTrip(t *testing.T, handler http.HandlerFunc) (string, http.Header, error) {
	t.Helper()
	srv := httptest.NewServer(handler)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rerr := identity.ReadError(resp)
	rest, _ := io.ReadAll(resp.Body)
	return string(rest), resp.Header, rerr
}

func TestErrorRoundTrip(t *testing.T) {
	sent := &identity.Error{
		Code:         identity.CodeNonceNotGreater,
		Message:      "nonce 5 is not greater than 7",
		Data:         jsontext.Value(`{"max_seen_nonce":7}`),
		MaxSeenNonce: 7,
		Err:          errors.New("internal detail that must not be sent"),
	}
	var raw string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		identity.WriteError(w, fmt.Errorf("handler: %w", sent))
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	raw = string(b)
	resp.Body = io.NopCloser(strings.NewReader(raw))
	got := identity.ReadError(resp)

	if !errors.Is(got, identity.ErrNonceNotGreater) {
		t.Fatalf("ReadError = %v, want nonce_not_greater", got)
	}
	var e *identity.Error
	if !errors.As(got, &e) {
		t.Fatal("not an *Error")
	}
	if e.Status != http.StatusConflict || e.MaxSeenNonce != 7 || e.Message != sent.Message || string(e.Data) != `{"max_seen_nonce":7}` || e.Err != nil {
		t.Errorf("got %+v", e)
	}
	if strings.Contains(raw, "internal detail") {
		t.Errorf("cause leaked: %s", raw)
	}
	if raw != `{"error":{"code":"nonce_not_greater","message":"nonce 5 is not greater than 7","data":{"max_seen_nonce":7}}}`+"\n" {
		t.Errorf("body %s", raw)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestWriteError(t *testing.T) {
	cases := []struct {
		name       string
		err        error
		status     int
		body       string
		maxSeen    string
		wantReason error
	}{
		{"plain error leaks nothing", errors.New("db: password=hunter2"), 500,
			`{"error":{"code":"internal_error","message":"internal error"}}`, "", identity.ErrNoErrorBody},
		{"nil", nil, 500, `{"error":{"code":"internal_error","message":"internal error"}}`, "", nil},
		{"explicit status", &identity.Error{Code: identity.CodeRateLimited, Message: "slow down", Status: 503}, 503,
			`{"error":{"code":"rate_limited","message":"slow down"}}`, "", nil},
		{"2xx status is not sent", &identity.Error{Code: identity.CodeNotFound, Message: "no room", Status: 200}, 404,
			`{"error":{"code":"not_found","message":"no room"}}`, "", nil},
		{"invalid data is dropped", &identity.Error{Code: identity.CodeInvalidEvent, Message: "bad", Data: jsontext.Value(`{"a":1,"a":2}`)}, 400,
			`{"error":{"code":"invalid_event","message":"bad"}}`, "", nil},
		{"empty message", &identity.Error{Code: identity.CodePermissionDenied}, 403,
			`{"error":{"code":"permission_denied","message":"permission_denied"}}`, "", nil},
		{"invalid UTF-8 message", &identity.Error{Code: identity.CodeInvalidRequest, Message: "bad \xff"}, 400,
			`{"error":{"code":"invalid_request","message":"bad ` + "\uFFFD" + `"}}`, "", nil},
		{"max seen nonce header", identity.Wrap(identity.CodeNonceNotGreater, "", errors.New("stale")), 409,
			`{"error":{"code":"nonce_not_greater","message":"stale"}}`, "", nil},
		{"sentinel", identity.ErrPayloadTooLarge, 413,
			`{"error":{"code":"payload_too_large","message":"payload too large"}}`, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			identity.WriteError(rec, c.err)
			if rec.Code != c.status || strings.TrimSpace(rec.Body.String()) != c.body {
				t.Errorf("got %d %s", rec.Code, rec.Body)
			}
			if h := rec.Header().Get("Max-Seen-Nonce"); h != c.maxSeen {
				t.Errorf("Max-Seen-Nonce %q", h)
			}
			// The client reads back the same code; a body WriteError wrote is
			// always a valid error body.
			got := identity.ReadError(rec.Result())
			var e *identity.Error
			if !errors.As(got, &e) || e.Status != c.status || errors.Is(got, identity.ErrNoErrorBody) {
				t.Errorf("ReadError = %#v", got)
			}
			if want, ok := c.err.(*identity.Error); ok && !errors.Is(got, want) {
				t.Errorf("ReadError = %v, want code %s", got, want.Code)
			}
		})
	}
}

func TestReadError(t *testing.T) {
	big := `{"error":{"code":"invalid_request","message":"` + strings.Repeat("x", identity.MaxErrorBodySize) + `"}}`
	cases := []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		code    identity.Code
		message string
		noBody  bool
		maxSeen int64
	}{
		{"protocol code", 409, map[string]string{"Max-Seen-Nonce": "1779753600123"},
			`{"error":{"code":"room_head_mismatch","message":"head moved","data":{"head":3}}}`, "room_head_mismatch", "head moved", false, 1779753600123},
		{"extra members are allowed", 400, nil,
			`{"error":{"code":"invalid_event","message":"m","hint":"x"},"trace":"t"}`, identity.CodeInvalidEvent, "m", false, 0},
		{"malformed Max-Seen-Nonce ignored", 409, map[string]string{"Max-Seen-Nonce": "0x10"},
			`{"error":{"code":"nonce_not_greater","message":"m"}}`, identity.CodeNonceNotGreater, "m", false, 0},
		{"html 502", 502, nil, `<html>bad gateway</html>`, identity.CodeInternalError, "HTTP 502 Bad Gateway", true, 0},
		{"empty 401", 401, nil, ``, identity.CodeInvalidToken, "HTTP 401 Unauthorized", true, 0},
		{"empty 403", 403, nil, ``, identity.CodePermissionDenied, "HTTP 403 Forbidden", true, 0},
		{"empty 404", 404, nil, ``, identity.CodeNotFound, "HTTP 404 Not Found", true, 0},
		{"empty 413", 413, nil, ``, identity.CodePayloadTooLarge, "HTTP 413 Request Entity Too Large", true, 0},
		{"empty 429", 429, nil, ``, identity.CodeRateLimited, "HTTP 429 Too Many Requests", true, 0},
		{"empty 418", 418, nil, ``, identity.CodeInvalidRequest, "HTTP 418 I'm a teapot", true, 0},
		{"redirect", 302, nil, ``, identity.CodeInternalError, "HTTP 302 Found", true, 0},
		{"duplicate code member", 400, nil, `{"error":{"code":"a","code":"b","message":"m"}}`, identity.CodeInvalidRequest, "HTTP 400 Bad Request", true, 0},
		// The code is what callers test: kept when the message is not.
		{"missing message", 409, nil, `{"error":{"code":"nonce_not_greater"}}`, identity.CodeNonceNotGreater, "HTTP 409 Conflict", false, 0},
		{"message not a string", 400, nil, `{"error":{"code":"invalid_event","message":7}}`, identity.CodeInvalidEvent, "HTTP 400 Bad Request", false, 0},
		{"empty message", 400, nil, `{"error":{"code":"invalid_event","message":""}}`, identity.CodeInvalidEvent, "HTTP 400 Bad Request", false, 0},
		{"empty code", 400, nil, `{"error":{"code":"","message":"m"}}`, identity.CodeInvalidRequest, "HTTP 400 Bad Request", true, 0},
		{"code not a string", 400, nil, `{"error":{"code":1,"message":"m"}}`, identity.CodeInvalidRequest, "HTTP 400 Bad Request", true, 0},
		{"error not an object", 400, nil, `{"error":"invalid_event"}`, identity.CodeInvalidRequest, "HTTP 400 Bad Request", true, 0},
		{"top level array", 400, nil, `[]`, identity.CodeInvalidRequest, "HTTP 400 Bad Request", true, 0},
		{"trailing data", 400, nil, `{"error":{"code":"a","message":"m"}}x`, identity.CodeInvalidRequest, "HTTP 400 Bad Request", true, 0},
		{"oversized body", 400, nil, big, identity.CodeInvalidRequest, "HTTP 400 Bad Request", true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := roundTrip(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range c.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			})
			var e *identity.Error
			if !errors.As(err, &e) {
				t.Fatalf("ReadError = %v", err)
			}
			if e.Code != c.code || e.Message != c.message || e.Status != c.status || e.MaxSeenNonce != c.maxSeen {
				t.Errorf("got %+v", e)
			}
			if errors.Is(err, identity.ErrNoErrorBody) != c.noBody {
				t.Errorf("ErrNoErrorBody = %v, want %v", !c.noBody, c.noBody)
			}
		})
	}
	_, _, ok := roundTrip(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	if ok != nil {
		t.Errorf("2xx: %v", ok)
	}
	// ReadError reads no more than it needs: the rest stays for the caller.
	rest, _, _ := roundTrip(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		io.WriteString(w, big)
	})
	if len(rest) != len(big)-identity.MaxErrorBodySize-1 {
		t.Errorf("read %d bytes past the limit", len(big)-len(rest))
	}
}

type item struct {
	ID string `json:"id"`
}

func TestList(t *testing.T) {
	b, err := json.Marshal(identity.List[item]{})
	if err != nil || string(b) != `{"result":[]}` {
		t.Errorf("empty list = %s, %v", b, err)
	}
	b, err = json.Marshal(&identity.List[item]{Result: []item{{"a"}, {"b"}}, NextCursor: "c1"})
	if err != nil || string(b) != `{"result":[{"id":"a"},{"id":"b"}],"next_cursor":"c1"}` {
		t.Errorf("list = %s, %v", b, err)
	}
	var l identity.List[item]
	if err := json.Unmarshal(b, &l); err != nil || len(l.Result) != 2 || l.Result[1].ID != "b" || l.NextCursor != "c1" {
		t.Errorf("Unmarshal = %+v, %v", l, err)
	}
	var empty identity.List[item]
	if err := json.Unmarshal([]byte(`{"result":[]}`), &empty); err != nil || empty.Result == nil || empty.NextCursor != "" {
		t.Errorf("empty = %+v, %v", empty, err)
	}
	for _, bad := range []string{
		`{}`,
		`{"result":null}`,
		`{"result":{}}`,
		`{"result":[],"next_cursor":""}`,
		`{"result":[],"next_cursor":null}`,
		`{"result":[],"next_cursor":5}`,
		`{"result":[],"more":true}`,
		`{"result":[],"result":[]}`,
		`{"result":[{"id":"a","extra":1}]}`,
		`{"result":[{"id":"a","ID":"b"}]}`,
		`{"result":[9007199254740993]}`,
		`[]`,
		`null`,
	} {
		var l identity.List[item]
		if err := json.Unmarshal([]byte(bad), &l); err == nil {
			t.Errorf("Unmarshal(%s) succeeded: %+v", bad, l)
		}
	}
}

func TestDiscovery(t *testing.T) {
	doc := `{
		"protocol": "agent-discourse",
		"service": "https://al.example",
		"endpoints": {"api": "https://api.al.example/v1", "sse": "https://sse.al.example:8443/events"},
		"features": ["public_rooms", "archive"],
		"x_vendor": {"k": 1}
	}`
	d, err := identity.ParseDiscovery([]byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Protocol != "agent-discourse" || d.Service != identity.MustParseOrigin("https://al.example") {
		t.Errorf("got %+v", d)
	}
	if got := d.Endpoint("api", "/v1"); got != "https://api.al.example/v1" {
		t.Errorf("listed endpoint %q", got)
	}
	if got := d.Endpoint("rooms", "/v1/rooms"); got != "https://al.example/v1/rooms" {
		t.Errorf("default endpoint %q", got)
	}
	if !d.HasFeature("archive") || d.HasFeature("unknown") {
		t.Error("HasFeature")
	}
	if string(d.Extra["x_vendor"]) != `{"k": 1}` {
		t.Errorf("Extra = %q", d.Extra)
	}
	if identity.DiscoveryPath("agent-discourse") != "/.well-known/agent-discourse" {
		t.Error("DiscoveryPath")
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	again, err := identity.ParseDiscovery(b, nil)
	if err != nil || again.Service != d.Service || len(again.Endpoints) != 2 || len(again.Extra) != 1 {
		t.Errorf("round trip %s: %+v, %v", b, again, err)
	}

	if _, err := identity.ParseDiscovery([]byte(`{"protocol":"p","service":"https://a.example"}`), nil); err != nil {
		t.Errorf("minimal document: %v", err)
	}
	local := `{"protocol":"p","service":"http://127.0.0.1:8080","endpoints":{"api":"http://127.0.0.1:8080/v1"}}`
	if _, err := identity.ParseDiscovery([]byte(local), nil); !errors.Is(err, identity.ErrOriginScheme) {
		t.Errorf("loopback without option: %v", err)
	}
	if _, err := identity.ParseDiscovery([]byte(local), &identity.OriginOptions{AllowLoopbackHTTP: true}); err != nil {
		t.Errorf("loopback with option: %v", err)
	}
	for _, bad := range []string{
		`{"service":"https://a.example"}`,
		`{"protocol":"","service":"https://a.example"}`,
		`{"protocol":"p"}`,
		`{"protocol":"p","service":"https://a.example/"}`,
		`{"protocol":"p","service":"al.example"}`,
		`{"protocol":"p","service":"https://a.example","endpoints":{"api":"/v1"}}`,
		`{"protocol":"p","service":"https://a.example","endpoints":{"api":"http://a.example/v1"}}`,
		`{"protocol":"p","service":"https://a.example","endpoints":{"api":"https://a.example/v1#x"}}`,
		`{"protocol":"p","service":"https://a.example","endpoints":{"api":"https://u@a.example/v1"}}`,
		`{"protocol":"p","service":"https://a.example","endpoints":{"api":1}}`,
		`{"protocol":"p","service":"https://a.example","features":["a","a"]}`,
		`{"protocol":"p","service":"https://a.example","features":[""]}`,
		`{"protocol":"p","protocol":"p","service":"https://a.example"}`,
		`[]`,
	} {
		if d, err := identity.ParseDiscovery([]byte(bad), nil); !errors.Is(err, identity.ErrInvalidRequest) {
			t.Errorf("ParseDiscovery(%s) = %+v, %v", bad, d, err)
		}
	}
}

package adphost

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentprotocols/go-sdk/identity"
)

// TestWriteRouteIsTheMuxs: every request writeRoom takes past the mux is
// one the mux routes to the write pattern, with the same room_id, so the
// shortcut changes no route.
func TestWriteRouteIsTheMuxs(t *testing.T) {
	h, err := New(context.Background(), &Options{Origin: identity.MustParseOrigin("https://route.example")})
	if err != nil {
		t.Fatal(err)
	}
	const pattern = "POST /v1/rooms/{room_id}"
	var got string
	ref := http.NewServeMux()
	ref.HandleFunc(pattern, func(_ http.ResponseWriter, r *http.Request) { got = r.PathValue("room_id") })
	taken := 0
	for _, c := range []struct{ method, target string }{
		{"POST", "/v1/rooms/d8ftedhpqhsusbg001tg"},
		{"POST", "/v1/rooms/public"},
		{"POST", "/v1/rooms/a.b"},
		{"POST", "/v1/rooms/a%20b"},
		{"POST", "/v1/rooms/%c3%a9"}, // é, percent-encoded
		{"POST", "/v1/rooms/a%2Fb"},
		{"POST", "/v1/rooms/a%2fb"},
		{"POST", "/v1/rooms/"},
		{"POST", "/v1/rooms"},
		{"POST", "/v1/rooms/."},
		{"POST", "/v1/rooms/.."},
		{"POST", "/v1/rooms/%2E%2E"},
		{"POST", "/v1/rooms//x"},
		{"POST", "/v1/rooms/x/"},
		{"POST", "/v1/rooms/x/join-requests"},
		{"POST", "/v1//rooms/x"},
		{"POST", "/v1/rooms/x?y=1"},
		{"GET", "/v1/rooms/x"},
		{"PUT", "/v1/rooms/x"},
		{"post", "/v1/rooms/x"},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		id, ok := writeRoom(r)
		if !ok {
			continue
		}
		taken++
		if _, pat := h.mux.Handler(r); pat != pattern {
			t.Errorf("%s %s: writeRoom takes it (room %q), the host's mux routes it to %q", c.method, c.target, id, pat)
		}
		got = "\x00"
		ref.ServeHTTP(httptest.NewRecorder(), r)
		if got != id {
			t.Errorf("%s %s: writeRoom's room_id %q, the mux's %q", c.method, c.target, id, got)
		}
	}
	if taken < 5 {
		t.Fatalf("writeRoom took %d of the requests", taken)
	}
}

package httpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/httpc"
)

// A protocol client sends a read, which is retried after a 503, and a
// write, whose protocol error comes back as an *identity.Error.
func Example() {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			identity.WriteError(w, &identity.Error{Code: identity.CodeNonceNotGreater, Message: "stale nonce", MaxSeenNonce: 1779753600000})
		case calls.Add(1) == 1:
			w.Header().Set("Retry-After", "1")
			identity.WriteError(w, &identity.Error{Code: identity.CodeRateLimited, Message: "busy", Status: http.StatusServiceUnavailable})
		default:
			io.WriteString(w, `{"ok":true}`)
		}
	}))
	defer srv.Close()

	c := httpc.New(&httpc.Options{
		Origins: &identity.OriginOptions{AllowLoopbackHTTP: true},
		Sleep: func(ctx context.Context, d time.Duration) error { // do not wait in an example
			fmt.Println("retry after", d)
			return ctx.Err()
		},
	})
	ctx := context.Background()
	resp, err := c.Do(ctx, &httpc.Request{Method: http.MethodGet, URL: srv.URL + "/v1/thing", Idempotent: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.StatusCode, string(resp.Body))

	_, err = c.Do(ctx, &httpc.Request{Method: http.MethodPost, URL: srv.URL + "/v1/things", Body: []byte(`{"signed":"envelope"}`)})
	var ie *identity.Error
	if errors.As(err, &ie) && ie.Code == identity.CodeNonceNotGreater {
		fmt.Println("write:", ie.Status, ie.Code, "max seen", ie.MaxSeenNonce)
	}
	// Output:
	// retry after 1s
	// 200 {"ok":true}
	// write: 409 nonce_not_greater max seen 1779753600000
}

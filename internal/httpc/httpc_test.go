package httpc_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/httpc"
)

var loopback = &identity.OriginOptions{AllowLoopbackHTTP: true}

// sleeps records the waits Do asks for instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// script answers the nth request with answers[n] (the last one repeats).
type script struct {
	hits    atomic.Int64
	answers []func(w http.ResponseWriter, r *http.Request)
	mu      sync.Mutex
	reqs    []*http.Request
	bodies  [][]byte
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(s.hits.Add(1)) - 1
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.bodies = append(s.bodies, b)
	s.mu.Unlock()
	s.answers[min(n, len(s.answers)-1)](w, r)
}

func status(code int, hdr ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		identity.WriteError(w, &identity.Error{Code: "rate_limited", Message: "slow down", Status: code})
	}
}

func ok(body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestRetries(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name       string
		answers    []func(http.ResponseWriter, *http.Request)
		idempotent bool
		opts       httpc.Options
		wantErr    error
		wantStatus int // of the *identity.Error
		wantHits   int64
	}{
		{"503 then success", []func(http.ResponseWriter, *http.Request){status(503), status(503), ok(`{}`)}, true,
			httpc.Options{}, nil, 0, 3},
		{"429, 502 and 504", []func(http.ResponseWriter, *http.Request){status(429), status(502), status(504), ok(`{}`)}, true,
			httpc.Options{Retries: 3}, nil, 0, 4},
		{"retries exhausted", []func(http.ResponseWriter, *http.Request){status(503)}, true,
			httpc.Options{Retries: 1}, identity.ErrRateLimited, 503, 2},
		{"retries disabled", []func(http.ResponseWriter, *http.Request){status(503)}, true,
			httpc.Options{Retries: -1}, identity.ErrRateLimited, 503, 1},
		{"a write that is not idempotent is sent once", []func(http.ResponseWriter, *http.Request){status(503), ok(`{}`)}, false,
			httpc.Options{}, identity.ErrRateLimited, 503, 1},
		{"400 is final", []func(http.ResponseWriter, *http.Request){status(400), ok(`{}`)}, true,
			httpc.Options{}, identity.ErrRateLimited, 400, 1},
		{"500 is final", []func(http.ResponseWriter, *http.Request){status(500), ok(`{}`)}, true,
			httpc.Options{}, identity.ErrRateLimited, 500, 1},
		{"Retry-After beyond MaxWait ends the retries", []func(http.ResponseWriter, *http.Request){status(429, "Retry-After", "3600"), ok(`{}`)}, true,
			httpc.Options{}, identity.ErrRateLimited, 429, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{answers: tc.answers}
			srv := serve(t, s)
			sl := &sleeps{}
			o := tc.opts
			o.Sleep = sl.sleep
			o.Origins = loopback
			c := httpc.New(&o)
			resp, err := c.Do(ctx, &httpc.Request{Method: http.MethodPost, URL: srv.URL + "/x", Body: []byte(`{"a":1}`), Idempotent: tc.idempotent})
			if tc.wantErr == nil {
				if err != nil || string(resp.Body) != `{}` || resp.StatusCode != 200 {
					t.Fatalf("got %v %v", resp, err)
				}
			} else {
				var ie *identity.Error
				if !errors.Is(err, tc.wantErr) || !errors.As(err, &ie) || ie.Status != tc.wantStatus {
					t.Fatalf("got %v, want %v with status %d", err, tc.wantErr, tc.wantStatus)
				}
			}
			if got := s.hits.Load(); got != tc.wantHits {
				t.Fatalf("%d attempts, want %d", got, tc.wantHits)
			}
			if len(sl.waits()) != int(tc.wantHits-1) {
				t.Fatalf("waits %v for %d attempts", sl.waits(), tc.wantHits)
			}
			for i, b := range s.bodies {
				if string(b) != `{"a":1}` {
					t.Fatalf("attempt %d sent %q, not the same bytes", i, b)
				}
			}
		})
	}
}

// Backoff doubles per retry, is jittered within [d/2, d] and capped at
// MaxWait; Retry-After (seconds or a date) replaces it.
func TestBackoffAndRetryAfter(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	s := &script{answers: []func(http.ResponseWriter, *http.Request){
		status(503), status(503), status(503), status(503),
		status(429, "Retry-After", "7"),
		status(503, "Retry-After", now.Add(3*time.Second).Format(http.TimeFormat)),
		status(503, "Retry-After", now.Add(-time.Hour).Format(http.TimeFormat)),
		status(503, "Retry-After", "soon"), // unparseable: the backoff applies
		ok(`{}`),
	}}
	srv := serve(t, s)
	sl := &sleeps{}
	c := httpc.New(&httpc.Options{Origins: loopback, Retries: 8, Backoff: 100 * time.Millisecond, MaxWait: 20 * time.Second,
		Sleep: sl.sleep, Now: func() time.Time { return now }})
	if _, err := c.Do(ctx, &httpc.Request{Method: http.MethodGet, URL: srv.URL, Idempotent: true}); err != nil {
		t.Fatal(err)
	}
	w := sl.waits()
	if len(w) != 8 {
		t.Fatalf("waits %v", w)
	}
	for i, base := range []time.Duration{100, 200, 400, 800} {
		d := base * time.Millisecond
		if w[i] < d/2 || w[i] > d {
			t.Errorf("wait %d = %v, want within [%v, %v]", i, w[i], d/2, d)
		}
	}
	if w[4] != 7*time.Second || w[5] != 3*time.Second || w[6] != 0 {
		t.Errorf("Retry-After waits %v, want 7s 3s 0s", w[4:7])
	}
	if d := 12800 * time.Millisecond; w[7] < d/2 || w[7] > d {
		t.Errorf("wait after an unparseable Retry-After = %v", w[7])
	}

	// The cap: a long backoff never exceeds MaxWait.
	s2 := &script{answers: []func(http.ResponseWriter, *http.Request){status(503), status(503), ok(`{}`)}}
	srv2 := serve(t, s2)
	sl2 := &sleeps{}
	c2 := httpc.New(&httpc.Options{Origins: loopback, Backoff: time.Hour, MaxWait: time.Second, Sleep: sl2.sleep})
	if _, err := c2.Do(ctx, &httpc.Request{Method: http.MethodGet, URL: srv2.URL, Idempotent: true}); err != nil {
		t.Fatal(err)
	}
	for _, d := range sl2.waits() {
		if d > time.Second || d < time.Second/2 {
			t.Errorf("capped wait %v", d)
		}
	}
}

// flakyTransport fails the first n round trips with a transport error.
type flakyTransport struct {
	n    int64
	hits atomic.Int64
	base http.RoundTripper
}

func (f *flakyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.hits.Add(1) <= f.n {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, errors.New("connection reset")
	}
	return f.base.RoundTrip(r)
}

func TestTransportErrors(t *testing.T) {
	ctx := context.Background()
	srv := serve(t, http.HandlerFunc(ok(`{"v":1}`)))
	for _, idem := range []bool{true, false} {
		ft := &flakyTransport{n: 1, base: http.DefaultTransport}
		c := httpc.New(&httpc.Options{HTTPClient: &http.Client{Transport: ft}, Origins: loopback, Sleep: (&sleeps{}).sleep})
		resp, err := c.Do(ctx, &httpc.Request{Method: http.MethodPost, URL: srv.URL, Body: []byte(`{}`), Idempotent: idem})
		if idem && (err != nil || string(resp.Body) != `{"v":1}` || ft.hits.Load() != 2) {
			t.Fatalf("idempotent: %v after %d attempts", err, ft.hits.Load())
		}
		if !idem && (err == nil || ft.hits.Load() != 1) {
			t.Fatalf("not idempotent: %v after %d attempts", err, ft.hits.Load())
		}
	}

	// The context ends the waits; the real sleep honours it.
	s := &script{answers: []func(http.ResponseWriter, *http.Request){status(503, "Retry-After", "5")}}
	srv2 := serve(t, s)
	ctx2, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := httpc.New(&httpc.Options{Origins: loopback}).Do(ctx2, &httpc.Request{Method: http.MethodGet, URL: srv2.URL, Idempotent: true})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if time.Since(start) > 4*time.Second { // a "not the whole Retry-After" guard only
		t.Fatal("waited out Retry-After despite the context")
	}
}

// Error bodies become *identity.Error values: code, message, data, status
// and the Max-Seen-Nonce header.
func TestErrorBodies(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		identity.WriteError(w, &identity.Error{Code: "room_head_mismatch", Message: "moved",
			Data: []byte(`{"head":{"seq":7}}`), MaxSeenNonce: 42})
	}))
	_, err := httpc.New(&httpc.Options{Origins: loopback}).Do(context.Background(), &httpc.Request{Method: http.MethodPost, URL: srv.URL, Body: []byte(`{}`)})
	var ie *identity.Error
	if !errors.As(err, &ie) {
		t.Fatalf("got %T %v", err, err)
	}
	if ie.Code != "room_head_mismatch" || ie.Message != "moved" || string(ie.Data) != `{"head":{"seq":7}}` ||
		ie.Status != http.StatusConflict || ie.MaxSeenNonce != 42 {
		t.Fatalf("got %+v", ie)
	}

	// A body that is not a strict error body keeps the status.
	srv2 := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"error":{"code":"x","message":"m","code":"y"}}`)
	}))
	_, err = httpc.New(&httpc.Options{Origins: loopback}).Do(context.Background(), &httpc.Request{Method: http.MethodGet, URL: srv2.URL})
	if !errors.As(err, &ie) || ie.Code != identity.CodePermissionDenied || ie.Status != 403 || !errors.Is(err, identity.ErrNoErrorBody) {
		t.Fatalf("got %v", err)
	}
}

func TestResponseSizeBound(t *testing.T) {
	body := strings.Repeat("x", 1001)
	srv := serve(t, http.HandlerFunc(ok(body)))
	c := httpc.New(&httpc.Options{MaxResponseSize: 1000, Origins: loopback})
	if _, err := c.Do(context.Background(), &httpc.Request{Method: http.MethodGet, URL: srv.URL, Idempotent: true}); !errors.Is(err, httpc.ErrResponseTooLarge) {
		t.Fatalf("got %v", err)
	}
	c = httpc.New(&httpc.Options{MaxResponseSize: 1001, Origins: loopback})
	if resp, err := c.Do(context.Background(), &httpc.Request{Method: http.MethodGet, URL: srv.URL}); err != nil || len(resp.Body) != 1001 {
		t.Fatalf("got %v", err)
	}
}

// Every attempt carries a freshly minted request JWT for the audience.
func TestFreshTokenPerAttempt(t *testing.T) {
	key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	s := &script{answers: []func(http.ResponseWriter, *http.Request){status(503), status(503), ok(`{}`)}}
	srv := serve(t, s)
	origin, err := identity.ParseOrigin(srv.URL, loopback)
	if err != nil {
		t.Fatal(err)
	}
	var tick atomic.Int64
	now := func() time.Time { return time.Unix(1779753600+tick.Add(1), 0) }
	c := httpc.New(&httpc.Options{Signer: key, Origins: loopback, Now: now, Sleep: (&sleeps{}).sleep})
	if _, err := c.Do(context.Background(), &httpc.Request{Method: http.MethodGet, URL: srv.URL + "/v1/x?y=1", Idempotent: true, Authenticate: true}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, r := range s.reqs {
		tok, err := identity.BearerToken(r)
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		cl, err := identity.VerifyRequestToken(tok, origin, &identity.TokenVerifyOptions{Now: func() time.Time { return time.Unix(1779753610, 0) }})
		if err != nil || cl.Issuer != key.AgentID() {
			t.Fatalf("attempt %d: %v", i, err)
		}
		if seen[tok] {
			t.Fatalf("attempt %d reused a token", i)
		}
		seen[tok] = true
	}
	if len(seen) != 3 {
		t.Fatalf("%d tokens", len(seen))
	}

	// An explicit audience wins over the URL's origin.
	api, _ := identity.ParseOrigin("https://api.example", nil)
	s2 := &script{answers: []func(http.ResponseWriter, *http.Request){ok(`{}`)}}
	srv2 := serve(t, s2)
	if _, err := c.Do(context.Background(), &httpc.Request{Method: http.MethodGet, URL: srv2.URL, Authenticate: true, Audience: api}); err != nil {
		t.Fatal(err)
	}
	tok, _ := identity.BearerToken(s2.reqs[0])
	if _, err := identity.VerifyRequestToken(tok, api, &identity.TokenVerifyOptions{Now: func() time.Time { return time.Unix(1779753610, 0) }}); err != nil {
		t.Fatalf("audience: %v", err)
	}

	// Authorize does the same for a request sent without Do.
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/live", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Authorize(req, identity.Origin{}); err != nil {
		t.Fatal(err)
	}
	tok, _ = identity.BearerToken(req)
	if _, err := identity.VerifyRequestToken(tok, origin, &identity.TokenVerifyOptions{Now: func() time.Time { return time.Unix(1779753610, 0) }}); err != nil {
		t.Fatalf("Authorize: %v", err)
	}

	// No signer, no request.
	if _, err := httpc.New(&httpc.Options{Origins: loopback}).Do(context.Background(), &httpc.Request{Method: http.MethodGet, URL: srv2.URL, Authenticate: true}); err == nil || s2.hits.Load() != 1 {
		t.Fatalf("sent without a signer: %v", err)
	}
}

func redirectTo(target string, code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, code)
	}
}

// Redirects that change origin or downgrade https to http
// are refused, even with the caller's own *http.Client; same-origin
// redirects are followed.
func TestRedirectPolicy(t *testing.T) {
	ctx := context.Background()
	var otherHits atomic.Int64
	other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		io.WriteString(w, `{"stolen":true}`)
	}))

	t.Run("cross-origin refused", func(t *testing.T) {
		var hits atomic.Int64
		srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			redirectTo(other.URL+"/x", http.StatusFound)(w, r)
		}))
		permissive := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
		for _, hc := range []*http.Client{nil, permissive} {
			c := httpc.New(&httpc.Options{HTTPClient: hc, Origins: loopback, Sleep: (&sleeps{}).sleep})
			_, err := c.Do(ctx, &httpc.Request{Method: http.MethodGet, URL: srv.URL, Idempotent: true})
			if !errors.Is(err, httpc.ErrRedirectRefused) {
				t.Fatalf("got %v", err)
			}
		}
		if otherHits.Load() != 0 {
			t.Fatal("the other origin was contacted")
		}
		if hits.Load() != 2 {
			t.Fatalf("%d requests: a refused redirect is not retried", hits.Load())
		}
		if permissive.CheckRedirect == nil || permissive.Transport != nil {
			t.Fatal("the caller's client was modified")
		}
	})

	t.Run("https to http refused", func(t *testing.T) {
		tlsSrv := httptest.NewTLSServer(redirectTo(other.URL+"/x", http.StatusTemporaryRedirect))
		defer tlsSrv.Close()
		// Same host and port as the TLS server, plain http.
		down := strings.Replace(tlsSrv.URL, "https://", "http://", 1)
		tlsDown := httptest.NewTLSServer(redirectTo(down+"/x", http.StatusMovedPermanently))
		defer tlsDown.Close()
		caller := tlsSrv.Client()
		before := *caller
		for _, u := range []string{tlsSrv.URL, tlsDown.URL} {
			for _, o := range []*identity.OriginOptions{nil, loopback} {
				c := httpc.New(&httpc.Options{HTTPClient: caller, Origins: o})
				_, err := c.Do(ctx, &httpc.Request{Method: http.MethodGet, URL: u})
				if !errors.Is(err, httpc.ErrRedirectRefused) {
					t.Fatalf("%s (loopback %v): got %v", u, o != nil, err)
				}
			}
		}
		if otherHits.Load() != 0 {
			t.Fatal("the http origin was contacted")
		}
		if caller.CheckRedirect != nil || caller.Transport != before.Transport {
			t.Fatal("the caller's client was modified")
		}
	})

	t.Run("same origin followed", func(t *testing.T) {
		var called atomic.Int64
		mux := http.NewServeMux()
		mux.HandleFunc("/old", redirectTo("/new", http.StatusPermanentRedirect))
		mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Method", r.Method)
			w.Write(b)
		})
		srv := serve(t, mux)
		own := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { called.Add(1); return nil }}
		for _, hc := range []*http.Client{nil, own} {
			c := httpc.New(&httpc.Options{HTTPClient: hc, Origins: loopback})
			resp, err := c.Do(ctx, &httpc.Request{Method: http.MethodPost, URL: srv.URL + "/old", Body: []byte(`{"signed":1}`)})
			if err != nil || string(resp.Body) != `{"signed":1}` || resp.Header.Get("X-Method") != http.MethodPost {
				t.Fatalf("got %v %v", resp, err)
			}
		}
		if called.Load() != 1 {
			t.Fatalf("the caller's CheckRedirect ran %d times, want 1", called.Load())
		}
	})

	t.Run("redirect loop bounded", func(t *testing.T) {
		srv := serve(t, redirectTo("/", http.StatusFound))
		_, err := httpc.New(&httpc.Options{Origins: loopback}).Do(ctx, &httpc.Request{Method: http.MethodGet, URL: srv.URL + "/"})
		if err == nil || errors.Is(err, httpc.ErrRedirectRefused) {
			t.Fatalf("got %v", err)
		}
	})
}

// A Client is shared by concurrent calls.
func TestConcurrentUse(t *testing.T) {
	s := &script{answers: []func(http.ResponseWriter, *http.Request){ok(`{}`)}}
	srv := serve(t, s)
	c := httpc.New(&httpc.Options{Origins: loopback})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := c.Do(context.Background(), &httpc.Request{Method: http.MethodGet, URL: srv.URL, Idempotent: true}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if s.hits.Load() != 16 {
		t.Fatalf("%d requests", s.hits.Load())
	}
}

// Nothing is sent to a URL without a valid origin: plain http (unless
// loopback and allowed), userinfo-free forms identity.OriginOf refuses.
func TestURLMustHaveAnOrigin(t *testing.T) {
	var sent atomic.Int64
	hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		sent.Add(1)
		return nil, errors.New("unreachable")
	})}
	for _, tc := range []struct {
		url  string
		opts *identity.OriginOptions
	}{
		{"http://api.example/v1", nil},
		{"http://api.example/v1", loopback},
		{"http://127.0.0.1:8787/v1", nil},
		{"ftp://api.example/v1", nil},
		{"https://0x7f.1/v1", nil},
		{"/v1/relative", nil},
	} {
		c := httpc.New(&httpc.Options{HTTPClient: hc, Origins: tc.opts})
		if _, err := c.Do(context.Background(), &httpc.Request{Method: http.MethodGet, URL: tc.url}); !errors.Is(err, httpc.ErrURL) {
			t.Errorf("%s: got %v", tc.url, err)
		}
	}
	if sent.Load() != 0 {
		t.Fatalf("%d requests sent", sent.Load())
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAttemptTimeout: Options.AttemptTimeout bounds one attempt, headers
// and body included. A stalled attempt of an idempotent request is retried
// and the next answer returned; a request that may not be retried fails
// with ErrAttemptTimeout, long before the caller's deadline.
func TestAttemptTimeout(t *testing.T) {
	stall := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"partial":`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	s := &script{answers: []func(http.ResponseWriter, *http.Request){stall, ok(`{}`)}}
	srv := serve(t, s)
	defer srv.CloseClientConnections()
	c := httpc.New(&httpc.Options{Origins: loopback, AttemptTimeout: 100 * time.Millisecond, Backoff: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Do(ctx, &httpc.Request{Method: http.MethodGet, URL: srv.URL, Idempotent: true})
	if err != nil || string(resp.Body) != `{}` || s.hits.Load() != 2 {
		t.Fatalf("retried read: %v after %d attempts", err, s.hits.Load())
	}
	s.hits.Store(0)
	start := time.Now()
	_, err = c.Do(ctx, &httpc.Request{Method: http.MethodPost, URL: srv.URL, Body: []byte(`{}`)})
	if !errors.Is(err, httpc.ErrAttemptTimeout) || time.Since(start) > 5*time.Second {
		t.Fatalf("write: %v after %v", err, time.Since(start))
	}
}

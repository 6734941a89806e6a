package profile_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/profile"
)

// flaky answers the first n requests matching match with status (or a
// transport error when status is 0), then passes requests through.
type flaky struct {
	base       http.RoundTripper
	match      func(*http.Request) bool
	n          int64
	status     int
	retryAfter string
	hits       atomic.Int64
	seen       atomic.Int64
}

func (f *flaky) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.match(r) {
		f.seen.Add(1)
		if f.hits.Add(1) <= f.n {
			if f.status == 0 {
				return nil, errors.New("connection reset")
			}
			h := http.Header{}
			if f.retryAfter != "" {
				h.Set("Retry-After", f.retryAfter)
			}
			return jsonResponse(f.status, `{"error":{"code":"rate_limited","message":"slow down"}}`, h), nil
		}
	}
	return f.base.RoundTrip(r)
}

func TestClientRetries(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	srv, seed := startServer(t, clk, nil)
	k := key(t, 1)
	if _, err := seed.Update(ctx, author(k, clk), minimal("Retry")); err != nil {
		t.Fatal(err)
	}
	isGetDoc := func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, k.AgentID().String())
	}
	isPost := func(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == "/v1/profiles" }
	isBatch := func(r *http.Request) bool { return r.URL.Path == "/v1/profiles/batch" }

	cases := []struct {
		name     string
		f        *flaky
		opts     profile.ClientOptions
		call     func(*profile.Client) error
		wantErr  error
		wantSeen int64
	}{
		{"503 then success", &flaky{match: isGetDoc, n: 2, status: 503}, profile.ClientOptions{},
			getCall(k.AgentID()), nil, 3},
		{"429 with Retry-After 0", &flaky{match: isGetDoc, n: 1, status: 429, retryAfter: "0"}, profile.ClientOptions{},
			getCall(k.AgentID()), nil, 2},
		{"502 and 504 on batch", &flaky{match: isBatch, n: 2, status: 502}, profile.ClientOptions{},
			func(c *profile.Client) error {
				_, err := c.BatchUnverifiedUnsafe(ctx, []identity.AgentID{k.AgentID()})
				return err
			}, nil, 3},
		{"transport error", &flaky{match: isGetDoc, n: 1}, profile.ClientOptions{},
			getCall(k.AgentID()), nil, 2},
		{"retries exhausted", &flaky{match: isGetDoc, n: 10, status: 503}, profile.ClientOptions{Retries: 1},
			getCall(k.AgentID()), identity.ErrRateLimited, 2},
		{"retries disabled", &flaky{match: isGetDoc, n: 10, status: 503}, profile.ClientOptions{Retries: -1},
			getCall(k.AgentID()), identity.ErrRateLimited, 1},
		{"Retry-After beyond MaxRetryWait", &flaky{match: isGetDoc, n: 10, status: 429, retryAfter: "3600"}, profile.ClientOptions{},
			getCall(k.AgentID()), identity.ErrRateLimited, 1},
		{"writes are not retried", &flaky{match: isPost, n: 1, status: 503}, profile.ClientOptions{},
			func(c *profile.Client) error {
				_, err := c.Update(ctx, author(k, clk), minimal("Once"))
				return err
			}, identity.ErrRateLimited, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.base = srv.Client().Transport
			o := tc.opts
			o.HTTPClient = &http.Client{Transport: tc.f}
			o.RetryBackoff = time.Millisecond
			c := srv.NewClient(&o)
			err := tc.call(c)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if got := tc.f.seen.Load(); got != tc.wantSeen {
				t.Fatalf("%d attempts, want %d", got, tc.wantSeen)
			}
		})
	}

	t.Run("context cancels the backoff", func(t *testing.T) {
		f := &flaky{base: srv.Client().Transport, match: isGetDoc, n: 10, status: 503, retryAfter: "5"}
		c := srv.NewClient(&profile.ClientOptions{HTTPClient: &http.Client{Transport: f}})
		ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		if _, err := c.Get(ctx, k.AgentID()); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
		if time.Since(start) > 2*time.Second {
			t.Fatal("waited out Retry-After despite the context")
		}
	})
}

func getCall(id identity.AgentID) func(*profile.Client) error {
	return func(c *profile.Client) error {
		_, err := c.Get(context.Background(), id)
		return err
	}
}

// rewriting edits response bodies of matching requests.
type rewriting struct {
	base  http.RoundTripper
	match func(*http.Request) bool
	edit  func([]byte) []byte
}

func (rw *rewriting) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := rw.base.RoundTrip(r)
	if err != nil || !rw.match(r) {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	b = rw.edit(b)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// A service that alters what was signed is caught.
func TestClientDetectsTampering(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	srv, seed := startServer(t, clk, nil)
	k, k2 := key(t, 1), key(t, 2)
	a := author(k, clk)
	first, err := seed.Update(ctx, a, minimal("Original"))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if _, err := seed.Update(ctx, a, minimal("Current")); err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Update(ctx, author(k2, clk), minimal("Other")); err != nil {
		t.Fatal(err)
	}
	staleDoc := mustJSON(t, first.Document)
	id := k.AgentID().String()
	isDoc := func(r *http.Request) bool { return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, id) }
	isEvents := func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/events") }
	isDiscovery := func(r *http.Request) bool { return r.URL.Path == profile.DiscoveryPath }
	isBatch := func(r *http.Request) bool { return r.URL.Path == "/v1/profiles/batch" }
	replace := func(old, new string) func([]byte) []byte {
		return func(b []byte) []byte { return bytes.Replace(b, []byte(old), []byte(new), 1) }
	}

	cases := []struct {
		name  string
		match func(*http.Request) bool
		edit  func([]byte) []byte
		call  func(*profile.Client) error
	}{
		// A renamed, extended or stale document fails only a strict client:
		// by default Get returns the signed update's materialization and
		// reports the difference (TestClientReportsDiscrepancies).
		{"renamed document", isDoc, replace(`"Current"`, `"Forged"`), getCall(k.AgentID())},
		{"added member", isDoc, replace(`"name":"Current"`, `"name":"Current","provider":"evil"`), getCall(k.AgentID())},
		{"stale document", isDoc, func([]byte) []byte { return staleDoc }, getCall(k.AgentID())},
		{"document of another agent", isDoc, replace(id, k2.AgentID().String()), getCall(k.AgentID())},
		{"history of another agent", isEvents, func([]byte) []byte {
			return readAll(t, get(t, srv, "/v1/profiles/"+k2.AgentID().String()+"/events"))
		}, getCall(k.AgentID())},
		{"tampered history", isEvents, replace(`"Current"`, `"Forged"`), getCall(k.AgentID())},
		{"empty history", isEvents, func([]byte) []byte { return []byte(`{"result":[]}`) }, getCall(k.AgentID())},
		{"history out of order", isEvents, nil, func(c *profile.Client) error {
			for _, err := range c.AllEvents(ctx, k.AgentID(), 1) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
		{"batch with next_cursor", isBatch, replace(`{"result":`, `{"next_cursor":"x","result":`), func(c *profile.Client) error {
			_, err := c.BatchUnverifiedUnsafe(ctx, []identity.AgentID{k.AgentID()})
			return err
		}},
		{"discovery names another service", isDiscovery, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"service":"`+srv.URL), []byte(`"service":"https://elsewhere.example`), 1)
		}, getCall(k.AgentID())},
		{"document with duplicate member", isDoc, replace(`"name":"Current"`, `"name":"Current","name":"Current"`), func(c *profile.Client) error {
			_, err := c.GetUnverifiedUnsafe(ctx, k.AgentID())
			return err
		}},
	}
	discrepancyOnly := map[string]bool{"renamed document": true, "added member": true, "stale document": true}
	t.Run("batch document forged", func(t *testing.T) {
		// The forged entry fails verification; Batch re-fetches it as Get
		// does, so only verified data comes back.
		rw := &rewriting{base: srv.Client().Transport, match: isBatch, edit: replace(`"Current"`, `"Forged"`)}
		c := srv.NewClient(&profile.ClientOptions{HTTPClient: &http.Client{Transport: rw}})
		vs, err := c.Batch(ctx, []identity.AgentID{k2.AgentID(), k.AgentID()})
		if err != nil || len(vs) != 2 || vs[0].Document.Name != "Other" || vs[1].Document.Name != "Current" {
			t.Fatalf("batch: %v", err)
		}
		if vs[0].Discrepancy != nil || vs[1].Discrepancy == nil || !slices.Equal(vs[1].Discrepancy.Members, []string{"name"}) {
			t.Fatalf("discrepancies %v, %v", vs[0].Discrepancy, vs[1].Discrepancy)
		}
		docs, err := c.BatchUnverifiedUnsafe(ctx, []identity.AgentID{k.AgentID()})
		if err != nil || docs[0].Name != "Forged" {
			t.Fatalf("the unverified batch shows what the service sent: %v", err)
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var rw http.RoundTripper = &rewriting{base: srv.Client().Transport, match: tc.match, edit: tc.edit}
			if tc.name == "history out of order" {
				rw = &replayFirstPage{base: srv.Client().Transport}
			}
			for _, strict := range []bool{false, true} {
				if !strict && discrepancyOnly[tc.name] {
					continue
				}
				c := srv.NewClient(&profile.ClientOptions{HTTPClient: &http.Client{Transport: rw}, StrictDocuments: strict})
				err := tc.call(c)
				if !errors.Is(err, profile.ErrInvalidResponse) {
					t.Fatalf("strict %v: got %v, want invalid_response", strict, err)
				}
			}
		})
	}
}

// replayFirstPage answers every history request with the newest update, so
// a client paging through history sees a nonce that does not decrease.
type replayFirstPage struct{ base http.RoundTripper }

func (p *replayFirstPage) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/events") {
		q := r.URL.Query()
		q.Del("cursor")
		r = r.Clone(r.Context())
		r.URL.RawQuery = q.Encode()
	}
	return p.base.RoundTrip(r)
}

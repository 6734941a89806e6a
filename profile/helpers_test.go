package profile_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/profile"
	"github.com/agentprotocols/go-sdk/profile/profiletest"
)

// t0 is the created_at of the vector updates.
var t0 = time.UnixMilli(1779753600000)

// clock is a settable clock shared by a server and its authors.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func key(t testing.TB, b byte) *identity.PrivateKey {
	t.Helper()
	k, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// author returns an Author with its own in-memory NonceSource on clk.
func author(k identity.Signer, clk *clock) *envelope.Author {
	return &envelope.Author{
		Signer: k,
		Nonces: identity.NewNonceSource(&identity.NonceOptions{Now: clk.Now}),
		Now:    clk.Now,
	}
}

// startServer starts a profiletest server on clk and a client for it.
func startServer(t testing.TB, clk *clock, opts *profiletest.Options) (*profiletest.Server, *profile.Client) {
	t.Helper()
	var o profiletest.Options
	if opts != nil {
		o = *opts
	}
	o.Now = clk.Now
	srv := profiletest.NewServer(&o)
	t.Cleanup(srv.Close)
	return srv, srv.NewClient(&profile.ClientOptions{RetryBackoff: time.Millisecond})
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// failingClient fails the test on any request.
func failingClient(t testing.TB) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
		return nil, io.ErrUnexpectedEOF
	})}
}

// countingClient wraps base, counting responses by status.
type countingClient struct {
	base   http.RoundTripper
	mu     sync.Mutex
	status map[int]int
	total  atomic.Int64
}

func (c *countingClient) RoundTrip(r *http.Request) (*http.Response, error) {
	c.total.Add(1)
	resp, err := c.base.RoundTrip(r)
	if err == nil {
		c.mu.Lock()
		if c.status == nil {
			c.status = map[int]int{}
		}
		c.status[resp.StatusCode]++
		c.mu.Unlock()
	}
	return resp, err
}

func (c *countingClient) count(status int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status[status]
}

// post sends a raw body to the server and returns the response.
func post(t testing.TB, srv *profiletest.Server, path string, body []byte) *http.Response {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func get(t testing.TB, srv *profiletest.Server, path string) *http.Response {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// wantHTTPError checks a response's status and error code.
func wantHTTPError(t testing.TB, resp *http.Response, status int, code identity.Code) *identity.Error {
	t.Helper()
	err := identity.ReadError(resp)
	ie, ok := err.(*identity.Error)
	if !ok {
		t.Fatalf("status %d: no error (%v)", resp.StatusCode, err)
	}
	if resp.StatusCode != status || ie.Code != code {
		t.Fatalf("got %d %s (%s), want %d %s", resp.StatusCode, ie.Code, ie.Message, status, code)
	}
	return ie
}

// signRaw signs an arbitrary profile event payload, bypassing the
// builder's validation.
func signRaw(t testing.TB, a *envelope.Author, payload string) *envelope.Envelope {
	t.Helper()
	env, err := a.Sign(context.Background(), profile.Protocol, profile.TypeUpdate, jsontext.Value(payload), nil)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func minimal(name string) profile.Payload { return profile.Payload{Name: name} }

// fullPayload uses every optional field.
func fullPayload() profile.Payload {
	return profile.Payload{
		Name:         "ResearchAgent-v3",
		Description:  new("Focused on multimodal reasoning and alignment research."),
		AvatarURL:    new("https://example.com/avatar.png"),
		Provider:     new("self-hosted"),
		Capabilities: []string{"research", "debate"},
		ServiceEndpoints: []profile.ServiceEndpoint{
			{Type: "agent-api", URL: "https://agent.example.com/api", Protocols: []string{"agent-discourse/1.0"}},
		},
		Links: []profile.Link{
			{Name: "Homepage", URL: "https://example.com", Rel: profile.RelHomepage},
			{Name: "Mirror", URL: "http://mirror.example.com", Rel: "podcast"},
		},
		Delegations: []profile.Delegation{{
			ID:           new("del_01J8ZM7A3G2T9B4Q6X8R0N1P2Q"),
			Principal:    profile.Principal{ID: "https://api.al.ink/d9c6", Type: new("person"), Name: new("Yan"), Other: jsontext.Value(`{"display":"kept"}`)},
			Relationship: new("primary_delegate"),
			Scopes:       []string{},
		}},
		Extra: jsontext.Value(`{"domain":"research","n":[1,2.5,null]}`),
	}
}

func readAll(t testing.TB, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

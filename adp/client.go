package adp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/packs"
)

// ClientOptions configures a Client. A nil *ClientOptions is not enough:
// Signer is required.
type ClientOptions struct {
	// Signer is the agent's key: it signs events and request JWTs.
	Signer identity.Signer
	// Nonces issues the agent's nonces; nil means an in-memory source.
	// Long-lived agents pass a source with a durable store.
	Nonces *identity.NonceSource
	// HTTPClient sends the requests; nil means a client with the default
	// transport. The Client never follows redirects.
	HTTPClient *http.Client
	// Now is the clock for created_at, nonces and JWT iat/exp; nil means
	// time.Now.
	Now func() time.Time
	// AllowLoopbackHTTP accepts an http://127.0.0.1, [::1] or localhost
	// host origin, for development hosts and tests.
	AllowLoopbackHTTP bool
	// Retries is how many times a request is retried after a transport
	// error or a 429, 502, 503 or 504 answer; 0 means 3, negative none.
	// A retried write re-sends the same envelope, which the host's
	// exact-resubmission rule makes idempotent.
	Retries int
	// RetryBackoff is the first retry's wait, doubled per retry and
	// jittered; 0 means 100 ms. A Retry-After header replaces it.
	RetryBackoff time.Duration
	// MaxRetryWait caps one wait; a Retry-After beyond it ends the
	// retries. 0 means 5 s.
	MaxRetryWait time.Duration
	// MaxResponseSize bounds one response body; 0 means 32 MiB.
	MaxResponseSize int64
	// PageSize is the history page size; 0 means 500 (hosts cap it at
	// 1000).
	PageSize int
	// Packs configures the type registries of the rooms the client
	// verifies (an external pack fetcher); nil refuses external packs.
	Packs *packs.Options
}

// Client talks to one ADP host (seed draft) as one agent. Every record it
// returns has been verified — the envelope's hash and signature, the
// record hash, the chain link and every room rule — against a replica of
// the room that the client builds from the host's own history; a record
// the host forged, reordered or took from another room is an error, never
// data. Room resources, summaries, join requests and agent statuses are
// the host's unsigned assertions and are returned as such.
//
// A Client is safe for concurrent use. Writes to one room from one Client
// are not serialized: two concurrent writes on the same head race like
// any two agents, and one gets a *HeadMismatchError.
type Client struct {
	origin   identity.Origin
	api      string
	hc       *http.Client
	signer   identity.Signer
	author   *envelope.Author
	now      func() time.Time
	retries  int
	backoff  time.Duration
	maxWait  time.Duration
	maxResp  int64
	pageSize int
	packs    *packs.Options
	oopts    *identity.OriginOptions

	mu    sync.Mutex
	rooms map[string]*replica
}

// replica is the client's verified copy of one room.
type replica struct {
	id    string
	mu    sync.Mutex // serializes syncing and applying
	room  *Room
	index *MemoryIndex
}

// NewClient returns a client for the host whose API origin is host (such
// as "https://api.al.ink"): the audience of every request JWT, and the
// origin of the /v1 API.
func NewClient(host string, opts *ClientOptions) (*Client, error) {
	if opts == nil || opts.Signer == nil {
		return nil, errors.New("adp: ClientOptions.Signer is required")
	}
	oopts := &identity.OriginOptions{AllowLoopbackHTTP: opts.AllowLoopbackHTTP}
	origin, err := identity.ParseOrigin(host, oopts)
	if err != nil {
		return nil, err
	}
	c := &Client{
		origin: origin, api: origin.String() + "/v1", signer: opts.Signer, now: opts.Now,
		retries: opts.Retries, backoff: opts.RetryBackoff, maxWait: opts.MaxRetryWait,
		maxResp: opts.MaxResponseSize, pageSize: opts.PageSize, packs: opts.Packs, oopts: oopts,
		rooms: map[string]*replica{},
	}
	if c.now == nil {
		c.now = time.Now
	}
	switch {
	case c.retries == 0:
		c.retries = 3
	case c.retries < 0:
		c.retries = 0
	}
	if c.backoff <= 0 {
		c.backoff = 100 * time.Millisecond
	}
	if c.maxWait <= 0 {
		c.maxWait = 5 * time.Second
	}
	if c.maxResp <= 0 {
		c.maxResp = 32 << 20
	}
	if c.pageSize <= 0 {
		c.pageSize = 500
	}
	hc := http.Client{}
	if opts.HTTPClient != nil {
		hc = *opts.HTTPClient
	}
	// Never follow a redirect: a JWT minted for this origin must not be
	// replayed elsewhere, and ADP defines no redirects.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.hc = &hc
	nonces := opts.Nonces
	if nonces == nil {
		nonces = identity.NewNonceSource(&identity.NonceOptions{Now: c.now})
	}
	c.author = &envelope.Author{Signer: opts.Signer, Nonces: nonces, Now: c.now}
	return c, nil
}

// Origin returns the host API origin.
func (c *Client) Origin() identity.Origin { return c.origin }

// AgentID returns the client's agent.
func (c *Client) AgentID() identity.AgentID { return c.signer.AgentID() }

// Author returns the client's Author, to sign events by hand for Submit.
func (c *Client) Author() *envelope.Author { return c.author }

// HeadMismatchError is a room_head_mismatch answer (§16): the write named
// a base that is no longer the room head. Data carries the host's current
// head and the events URL to catch up from. errors.Is(err,
// ErrRoomHeadMismatch) holds.
type HeadMismatchError struct {
	Err  *identity.Error
	Data HeadMismatch
}

// Error implements error.
func (e *HeadMismatchError) Error() string { return e.Err.Error() }

// Unwrap returns the wire error.
func (e *HeadMismatchError) Unwrap() error { return e.Err }

// request is one HTTP exchange.
type request struct {
	method string
	path   string // absolute path, or a full URL on the host's origin
	body   []byte
	auth   bool // send a fresh request JWT
}

// do sends req, retrying transport errors and 429/502/503/504 with
// bounded, jittered exponential backoff. Every attempt sends the same body
// and a freshly minted JWT. It returns the body of a 2xx answer; other
// answers are *identity.Error values (*HeadMismatchError for
// room_head_mismatch).
func (c *Client) do(ctx context.Context, req request) ([]byte, int, error) {
	u := req.path
	if len(u) > 0 && u[0] == '/' {
		u = c.origin.String() + u
	} else if err := c.sameOrigin(u); err != nil {
		return nil, 0, err
	}
	for attempt := 0; ; attempt++ {
		var rd io.Reader
		if req.body != nil {
			rd = bytes.NewReader(req.body)
		}
		hr, err := http.NewRequestWithContext(ctx, req.method, u, rd)
		if err != nil {
			return nil, 0, err
		}
		hr.Header.Set("Accept", "application/json")
		if req.body != nil {
			hr.Header.Set("Content-Type", "application/json")
		}
		if req.auth {
			tok, err := identity.MintRequestToken(ctx, c.signer, c.origin, &identity.MintOptions{Now: c.now})
			if err != nil {
				return nil, 0, err
			}
			hr.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := c.hc.Do(hr)
		if err != nil {
			if ctx.Err() != nil || attempt >= c.retries {
				return nil, 0, err
			}
			if err := sleep(ctx, c.backoffFor(attempt)); err != nil {
				return nil, 0, err
			}
			continue
		}
		if attempt < c.retries && retryable(resp.StatusCode) {
			wait := c.backoffFor(attempt)
			if ra, ok := retryAfter(resp.Header.Get("Retry-After"), c.now()); ok {
				wait = ra
			}
			if wait <= c.maxWait {
				io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
				resp.Body.Close()
				if err := sleep(ctx, wait); err != nil {
					return nil, 0, err
				}
				continue
			}
		}
		b, err := c.read(resp)
		return b, resp.StatusCode, err
	}
}

func (c *Client) read(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	if err := identity.ReadError(resp); err != nil {
		var e *identity.Error
		if errors.As(err, &e) && e.Code == CodeRoomHeadMismatch {
			hm := &HeadMismatchError{Err: e}
			if len(e.Data) > 0 {
				strictjson.UnmarshalOpen(e.Data, &hm.Data)
			}
			return nil, hm
		}
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxResp+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > c.maxResp {
		return nil, identity.Errorf(identity.CodeInvalidRequest, "host response larger than %d bytes", c.maxResp)
	}
	return b, nil
}

// sameOrigin refuses URLs (from host answers) outside the host's origin.
func (c *Client) sameOrigin(raw string) error {
	u, err := url.Parse(raw)
	if err == nil {
		var o identity.Origin
		if o, err = identity.OriginOf(u, c.oopts); err == nil && o != c.origin {
			err = errors.New("origin differs")
		}
	}
	if err != nil {
		return identity.Errorf(identity.CodeInvalidRequest, "URL %q is not on the host's origin: %v", clip(raw), err)
	}
	return nil
}

func retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// backoffFor is the jittered wait before retry attempt+1: between half and
// all of RetryBackoff·2^attempt, capped at MaxRetryWait.
func (c *Client) backoffFor(attempt int) time.Duration {
	d := c.backoff << min(attempt, 16)
	if d <= 0 || d > c.maxWait {
		d = c.maxWait
	}
	return d/2 + rand.N(d/2+1)
}

// retryAfter parses Retry-After: delay-seconds or an HTTP date.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	if h == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(h, 10, 32); err == nil {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// getJSON GETs path and decodes the answer strictly into v.
func (c *Client) getJSON(ctx context.Context, path string, auth bool, v any) error {
	b, _, err := c.do(ctx, request{method: http.MethodGet, path: path, auth: auth})
	if err != nil {
		return err
	}
	return decodeAnswer(b, v)
}

// decodeAnswer strictly decodes a host answer; unknown members are refused.
func decodeAnswer(b []byte, v any) error {
	if err := strictjson.Unmarshal(b, v); err != nil {
		return identity.Wrap(identity.CodeInvalidRequest, "host answer", err)
	}
	return nil
}

// roomPath returns /v1/rooms/{id} with id escaped.
func roomPath(id string) string { return "/v1/rooms/" + url.PathEscape(id) }

// Discover fetches and strictly parses the host's discovery document.
func (c *Client) Discover(ctx context.Context) (*Discovery, error) {
	b, _, err := c.do(ctx, request{method: http.MethodGet, path: DiscoveryPath})
	if err != nil {
		return nil, err
	}
	return ParseDiscovery(b, c.oopts)
}

// GetRoom fetches the room resource (§16). Its fields are the host's
// assertions; Sync verifies the history they summarize.
func (c *Client) GetRoom(ctx context.Context, roomID string) (*RoomResource, error) {
	var r RoomResource
	if err := c.getJSON(ctx, roomPath(roomID), true, &r); err != nil {
		return nil, err
	}
	if r.ID != roomID {
		return nil, identity.Errorf(identity.CodeInvalidRequest, "host answered room %q for %q", clip(r.ID), clip(roomID))
	}
	return &r, nil
}

// marshal encodes a request body deterministically.
func marshal(v any) ([]byte, error) {
	return json.Marshal(v, json.Deterministic(true))
}

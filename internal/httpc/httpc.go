// Package httpc is the SDK's one HTTP client layer for protocol services
// (Agent Profile today, ADP next). A protocol client builds its requests
// and parses its answers; everything about getting bytes there and back is
// here, once:
//
//   - a fresh request JWT per attempt ([Request].Authenticate), minted with
//     identity.MintRequestToken for the origin of the request URL or a
//     given audience;
//   - retries with bounded exponential backoff and jitter, honouring
//     Retry-After, after transport errors and 429, 502, 503 and 504
//     answers — only for requests marked [Request].Idempotent: reads, and
//     writes the protocol makes idempotent (a signed envelope re-sent byte
//     for byte is an exact resubmission, Identity §6.3);
//   - bounded response bodies ([ErrResponseTooLarge]) and, with
//     [Options].AttemptTimeout, bounded attempts ([ErrAttemptTimeout]): a
//     peer that stalls before its headers or drips its body cannot hold a
//     call;
//   - a guard for cursor loops over list pages ([Cursor]): repeated
//     cursors, empty pages that name a next one and endless lists end
//     with [ErrCursor], as do lists past a byte budget across their pages;
//   - non-2xx answers as *identity.Error values decoded strictly from the
//     error body by identity.ReadError (code, message, data, HTTP status,
//     Max-Seen-Nonce);
//   - request URLs with a valid origin only: https, or loopback http when
//     allowed for development ([ErrURL]);
//   - a redirect policy that follows only redirects to the same origin, so
//     an https request is never downgraded to http nor sent (with its
//     token) elsewhere ([NewHTTPClient], [ErrRedirectRefused]).
//
// Re-signing a write after nonce_not_greater is the protocol client's job:
// it reads MaxSeenNonce from the *identity.Error, applies it to its nonce
// source, signs again and calls [Client.Do] with the new bytes.
//
// The package sits between identity and the protocol packages: it imports
// identity, and identity never imports it.
package httpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/agentprotocols/go-sdk/identity"
)

// Defaults of [Options].
const (
	DefaultRetries         = 2
	DefaultBackoff         = 200 * time.Millisecond
	DefaultMaxWait         = 10 * time.Second
	DefaultMaxResponseSize = 32 << 20
	// maxDrain bounds what is read from a response that is discarded
	// before a retry, so the connection can be reused without reading a
	// hostile body to its end.
	maxDrain = 64 << 10
	// maxRedirects is net/http's own default limit.
	maxRedirects = 10
)

var (
	// ErrResponseTooLarge is returned when a 2xx body exceeds
	// Options.MaxResponseSize.
	ErrResponseTooLarge = errors.New("httpc: response body exceeds the size limit")
	// ErrRedirectRefused is the cause of the error returned for a redirect
	// to another origin (including https to http). It is never retried.
	ErrRedirectRefused = errors.New("httpc: redirect to another origin refused")
	// ErrAttemptTimeout is the cause of the error for an attempt that
	// outlived Options.AttemptTimeout (headers and body included) when it
	// is not retried.
	ErrAttemptTimeout = errors.New("httpc: attempt timed out")
	// ErrURL is the cause of the error Do returns, before sending
	// anything, for a URL without a valid origin: not https (or loopback
	// http with Options.Origins.AllowLoopbackHTTP), or not in the form
	// identity.OriginOf accepts.
	ErrURL = errors.New("httpc: request URL has no valid origin")
)

// Options configures a [Client]. A nil *Options means defaults; so does
// the zero value of each field.
type Options struct {
	// HTTPClient sends the requests; nil means a new http.Client with the
	// default transport. The Client uses a copy with the same-origin
	// redirect policy added (see NewHTTPClient); the caller's value is
	// never modified.
	HTTPClient *http.Client
	// Origins says how the origins of request and redirect URLs are
	// computed; set AllowLoopbackHTTP for a local development service.
	Origins *identity.OriginOptions
	// Retries is how many times an idempotent request is retried; 0 means
	// DefaultRetries, negative means none.
	Retries int
	// Backoff is the wait before the first retry, doubled for each
	// further one and jittered to between half and all of it; 0 means
	// DefaultBackoff. A Retry-After header replaces it.
	Backoff time.Duration
	// MaxWait is the longest single wait; a Retry-After asking for more
	// ends the retries and the answer is returned. 0 means DefaultMaxWait.
	MaxWait time.Duration
	// MaxResponseSize bounds the bytes read from a 2xx body; 0 means
	// DefaultMaxResponseSize. Error bodies are bounded by
	// identity.MaxErrorBodySize.
	MaxResponseSize int64
	// Signer signs the request JWTs of requests with Authenticate set.
	Signer identity.Signer
	// TokenTTL is the lifetime of request JWTs; 0 means
	// identity.DefaultTokenTTL.
	TokenTTL time.Duration
	// Now is the clock for token iat and Retry-After dates; nil means
	// time.Now.
	Now func() time.Time
	// AttemptTimeout bounds one attempt — connecting, the headers and
	// the whole body — so a peer that stalls or drips a body cannot hold a
	// call past it; an idempotent request is then retried like after a
	// transport error. 0 or negative means no bound beyond ctx.
	AttemptTimeout time.Duration
	// Sleep waits d or until ctx is done, returning ctx.Err() then; nil
	// means a timer. Tests inject one that does not sleep.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client sends requests to protocol services. It is immutable after New
// and safe for concurrent use, provided the injected Signer, Now and Sleep
// are.
type Client struct {
	hc       *http.Client
	origins  *identity.OriginOptions
	retries  int
	backoff  time.Duration
	maxWait  time.Duration
	maxResp  int64
	signer   identity.Signer
	tokenTTL time.Duration
	now      func() time.Time
	sleep    func(context.Context, time.Duration) error
	attemptT time.Duration
}

// New returns a Client with the given options. It does no I/O.
func New(opts *Options) *Client {
	var o Options
	if opts != nil {
		o = *opts
	}
	c := &Client{
		hc:       NewHTTPClient(o.HTTPClient, o.Origins),
		origins:  o.Origins,
		retries:  o.Retries,
		backoff:  o.Backoff,
		maxWait:  o.MaxWait,
		maxResp:  o.MaxResponseSize,
		signer:   o.Signer,
		tokenTTL: o.TokenTTL,
		now:      o.Now,
		sleep:    o.Sleep,
		attemptT: o.AttemptTimeout,
	}
	switch {
	case c.retries == 0:
		c.retries = DefaultRetries
	case c.retries < 0:
		c.retries = 0
	}
	if c.backoff <= 0 {
		c.backoff = DefaultBackoff
	}
	if c.maxWait <= 0 {
		c.maxWait = DefaultMaxWait
	}
	if c.maxResp <= 0 {
		c.maxResp = DefaultMaxResponseSize
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.sleep == nil {
		c.sleep = sleep
	}
	return c
}

// HTTPClient returns the *http.Client the Client sends with, redirect
// policy included, for requests Do does not fit (a streaming response).
func (c *Client) HTTPClient() *http.Client { return c.hc }

// Request is one logical call; Do may send it several times.
type Request struct {
	// Method is the HTTP method, e.g. http.MethodGet.
	Method string
	// URL is the absolute request URL.
	URL string
	// Body, when not nil, is sent as application/json: the same bytes on
	// every attempt and on a same-origin 307/308 redirect.
	Body []byte
	// Header holds extra request headers, set on every attempt.
	Header http.Header
	// Idempotent allows retries. Set it for reads, and for writes the
	// protocol makes idempotent (an exact resubmission of a signed
	// envelope); never for a write that a repeat could apply twice.
	Idempotent bool
	// Authenticate sends Authorization: Bearer with a request JWT minted
	// by Options.Signer for each attempt.
	Authenticate bool
	// Audience is the token's aud; the zero Origin means the origin of
	// URL (one audience per origin, Identity §7).
	Audience identity.Origin
}

// Response is a 2xx answer.
type Response struct {
	// StatusCode is the HTTP status, e.g. 200 or 201.
	StatusCode int
	// Header is the response header (Max-Seen-Nonce, Location, …).
	Header http.Header
	// Body is the whole body, at most Options.MaxResponseSize bytes.
	Body []byte
}

// Do sends r and returns its 2xx answer. Otherwise the error is:
//   - an *identity.Error for a non-2xx answer (identity.ReadError: Code,
//     Message, Data, Status and MaxSeenNonce), after any retries;
//   - one wrapping ErrURL, ErrRedirectRefused, ErrResponseTooLarge or
//     ctx.Err();
//   - the transport's or the token signer's error.
//
// Idempotent requests are retried after transport errors and 429, 502,
// 503 and 504 answers, at most Options.Retries times, waiting the backoff
// or the answer's Retry-After; ctx bounds the whole call, waits included.
func (c *Client) Do(ctx context.Context, r *Request) (*Response, error) {
	retries := 0
	if r.Idempotent {
		retries = c.retries
	}
	for attempt := 0; ; attempt++ {
		resp, wait, err := c.attempt(ctx, r, attempt, attempt < retries)
		if wait < 0 {
			return resp, err
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// attempt sends r once. A wait ≥ 0 asks Do to retry after it; a negative
// wait makes resp or err final.
func (c *Client) attempt(ctx context.Context, r *Request, n int, mayRetry bool) (resp *Response, wait time.Duration, err error) {
	if c.attemptT > 0 {
		actx, cancel := context.WithTimeoutCause(ctx, c.attemptT, fmt.Errorf("%w after %v", ErrAttemptTimeout, c.attemptT))
		defer cancel()
		resp, wait, err = c.attempt1(actx, r, n, mayRetry && ctx.Err() == nil)
		if wait < 0 && err != nil && ctx.Err() == nil && actx.Err() != nil {
			if mayRetry {
				return nil, c.backoffFor(n), nil
			}
			err = fmt.Errorf("%w: %w", context.Cause(actx), err)
		}
		return resp, wait, err
	}
	return c.attempt1(ctx, r, n, mayRetry)
}

// attempt1 is one attempt under ctx.
func (c *Client) attempt1(ctx context.Context, r *Request, n int, mayRetry bool) (resp *Response, wait time.Duration, err error) {
	req, err := c.newRequest(ctx, r)
	if err != nil {
		return nil, -1, err
	}
	hr, err := c.hc.Do(req)
	if err != nil {
		if !mayRetry || ctx.Err() != nil || errors.Is(err, ErrRedirectRefused) {
			return nil, -1, err
		}
		return nil, c.backoffFor(n), nil
	}
	defer hr.Body.Close()
	if mayRetry && retryable(hr.StatusCode) {
		wait := c.backoffFor(n)
		if ra, ok := retryAfter(hr.Header.Get("Retry-After"), c.now()); ok {
			wait = ra
		}
		if wait <= c.maxWait {
			io.Copy(io.Discard, io.LimitReader(hr.Body, maxDrain))
			return nil, wait, nil
		}
	}
	if err := identity.ReadError(hr); err != nil {
		var ie *identity.Error
		if ra, ok := retryAfter(hr.Header.Get("Retry-After"), c.now()); ok && errors.As(err, &ie) {
			ie.RetryAfter = ra
		}
		return nil, -1, err
	}
	body, err := io.ReadAll(io.LimitReader(hr.Body, c.maxResp+1))
	switch {
	case err != nil && mayRetry && ctx.Err() == nil:
		return nil, c.backoffFor(n), nil // the connection broke mid-body
	case err != nil:
		return nil, -1, err
	case int64(len(body)) > c.maxResp:
		return nil, -1, fmt.Errorf("%w (%d bytes)", ErrResponseTooLarge, c.maxResp)
	}
	return &Response{StatusCode: hr.StatusCode, Header: hr.Header, Body: body}, -1, nil
}

func (c *Client) newRequest(ctx context.Context, r *Request) (*http.Request, error) {
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body) // sets GetBody, so redirects can resend it
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, body)
	if err != nil {
		return nil, err
	}
	if _, err := identity.OriginOf(req.URL, c.origins); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrURL, err)
	}
	for k, vs := range r.Header {
		req.Header[k] = append([]string(nil), vs...)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if r.Body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.Authenticate {
		if err := c.Authorize(req, r.Audience); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// Authorize sets req's Authorization header to a freshly minted request
// JWT of Options.Signer for audience (the zero Origin means the origin of
// req.URL), for requests sent without Do, such as a streaming one. The
// token is minted under req's context.
func (c *Client) Authorize(req *http.Request, audience identity.Origin) error {
	if c.signer == nil {
		return errors.New("httpc: request needs a token but Options.Signer is nil")
	}
	if audience.IsZero() {
		var err error
		if audience, err = identity.OriginOf(req.URL, c.origins); err != nil {
			return err
		}
	}
	tok, err := identity.MintRequestToken(req.Context(), c.signer, audience, &identity.MintOptions{TTL: c.tokenTTL, Now: c.now})
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return nil
}

func retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// backoffFor returns the jittered wait before retry attempt+1: between
// half and all of Backoff·2^attempt, capped at MaxWait.
func (c *Client) backoffFor(attempt int) time.Duration {
	d := c.backoff << min(attempt, 16)
	if d <= 0 || d > c.maxWait {
		d = c.maxWait
	}
	return d/2 + rand.N(d/2+1)
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date.
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

// NewHTTPClient returns a shallow copy of base (nil means a new
// http.Client with the default transport) whose redirect policy follows a
// redirect only to the origin of the original request, so a request is
// never downgraded from https to http nor sent, with its token, to
// another origin. Origins are computed with identity.OriginOf under
// origins. A redirect the policy allows is then put to base's own
// CheckRedirect, or to net/http's limit of 10 redirects. base is not
// modified.
func NewHTTPClient(base *http.Client, origins *identity.OriginOptions) *http.Client {
	var hc http.Client
	if base != nil {
		hc = *base
	}
	next := hc.CheckRedirect
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := CheckSameOrigin(req, via, origins); err != nil {
			return err
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("httpc: stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return &hc
}

// CheckSameOrigin is the redirect policy of NewHTTPClient without the
// redirect limit, in the shape of http.Client.CheckRedirect: it refuses,
// with an error wrapping ErrRedirectRefused, a redirect of via[0] (the
// original request) to req.URL unless both have the same origin.
func CheckSameOrigin(req *http.Request, via []*http.Request, origins *identity.OriginOptions) error {
	if len(via) == 0 {
		return nil
	}
	first := via[0].URL
	if first.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("%w: %s downgrades %s", ErrRedirectRefused, req.URL.Redacted(), first.Redacted())
	}
	from, err := identity.OriginOf(first, origins)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRedirectRefused, err)
	}
	to, err := identity.OriginOf(req.URL, origins)
	if err != nil {
		return fmt.Errorf("%w: to %s: %w", ErrRedirectRefused, req.URL.Redacted(), err)
	}
	if to != from {
		return fmt.Errorf("%w: from %s to %s", ErrRedirectRefused, from, to)
	}
	return nil
}

package adp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/httpc"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/packs"
)

// ClientOptions configures a Client. A nil *ClientOptions is not enough:
// Signer is required.
type ClientOptions struct {
	// Signer is the agent's key: it signs events and request JWTs.
	Signer identity.Signer
	// Draft is the ADP draft the host serves, whose rules, records and
	// HTTP shapes the client speaks. The zero Draft means the host's
	// discovery document decides: the client reads it before its first
	// request that depends on the draft and recognizes the draft by its
	// shape ([Discovery].Draft); a host that answers not_found has none,
	// and is taken to serve the default draft. A Draft set here wins, and the client
	// then never needs the document; reading one that names another draft
	// (Client.Discover) is an error wrapping [ErrDraftMismatch].
	Draft Draft
	// Nonces issues the agent's nonces; nil means an in-memory source.
	// Long-lived agents pass a source with a durable store.
	Nonces *identity.NonceSource
	// HTTPClient sends the requests; nil means a client with the default
	// transport. The Client follows redirects only within the host's
	// origin.
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
	// MaxResponseSize bounds one response body; 0 means 32 MiB. A
	// history page over it is asked for again with half as many records,
	// down to one (a record is at most about 262 KB), so a room of large
	// records stays readable on a host that budgets its pages by count
	// only. The room's later reads keep the smaller size, doubling it
	// after each full page under a quarter of the bound.
	MaxResponseSize int64
	// AttemptTimeout bounds one attempt of a request — connecting, the
	// headers and the whole body — so a host that stalls or drips an
	// answer cannot hold a call; a read (or an idempotent write) is then
	// retried. 0 means DefaultAttemptTimeout, negative no bound beyond the
	// caller's context.
	AttemptTimeout time.Duration
	// PageSize is the history page size; 0 means DefaultPageSize (hosts
	// cap it at 1000).
	PageSize int
	// MaxRecords bounds the records one Sync, Events or write's
	// catch-up reads; 0 means DefaultMaxRecords. Sync keeps what it
	// verified, so calling it again resumes.
	MaxRecords int
	// MaxPages and MaxListItems bound one listing (join requests, public
	// rooms, my rooms, agent statuses): the pages it follows and the items
	// it collects; 0 means 1000 pages and 10,000 items. A repeated
	// cursor, or an empty page that names a next one, ends the listing
	// with an error too.
	MaxPages, MaxListItems int
	// MaxListBytes bounds the bytes of one listing's pages together (join
	// requests, public rooms, my rooms), so that a host answering with
	// large pages and fresh cursors costs at most that much; 0 means
	// 64 MiB (twice the default MaxResponseSize).
	MaxListBytes int64
	// Packs configures the type registries of the rooms the client
	// verifies (an external pack fetcher); nil refuses external packs.
	// NewReplica's replicas bring their own.
	Packs *packs.Options
	// NewReplica, when set, makes the replica of a room the client first
	// reads or writes (and the replacement of one whose Admitted hook
	// failed): an owner that persists verified state passes one that
	// restores the room from its store, with its Admitted hook. It is
	// called with the client's replica cache locked: it must not call the
	// Client. nil means an empty in-memory replica (NewReplica, with
	// Packs).
	NewReplica func(roomID string) (*Replica, error)
}

// Defaults of ClientOptions.
const (
	DefaultPageSize       = 500
	DefaultAttemptTimeout = 30 * time.Second
	DefaultMaxRecords     = 1 << 20
)

// Client talks to one ADP host as one agent, in the draft the host
// serves (ClientOptions.Draft, else the host's discovery document): that
// draft's endpoints, record shapes, room rules and join flow — in the
// 2026-09-24 draft, room.create bound to the host, signed join requests,
// and bases per freshness class (Room.BaseFor). Every record it
// returns has been verified — the envelope's hash and signature, the
// record hash, the chain link and every room rule — against the room's
// Replica (Client.Replica), which the client builds from the host's own
// history; a record the host forged, reordered or took from another room
// is an error, never data. Room resources, summaries, join requests and agent statuses are
// the host's unsigned assertions and are returned as such.
//
// A Client is safe for concurrent use. Writes to one room from one Client
// are not serialized: two concurrent writes on the same head race like
// any two agents, and one gets a *HeadMismatchError.
type Client struct {
	origin   identity.Origin
	hc       *httpc.Client
	signer   identity.Signer
	author   *envelope.Author
	now      func() time.Time
	pageSize int
	maxResp  int64
	maxRecs  int
	maxPages int
	maxItems int
	maxBytes int64
	packs    *packs.Options
	oopts    *identity.OriginOptions
	newRep   func(roomID string) (*Replica, error)

	// draftOpt is ClientOptions.Draft; api, once known, the draft and
	// its endpoints (set once, under apiMu).
	draftOpt Draft
	apiMu    sync.Mutex
	learned  atomic.Pointer[hostAPI]
	// discoverWithin bounds the discovery read of a call that has no
	// context (Replica).
	discoverWithin time.Duration

	mu    sync.Mutex
	rooms map[string]*Replica
}

// hostAPI is what the client speaks to its host: the draft and the URLs
// of its room collection, public room listing and the agent's rooms.
type hostAPI struct {
	draft   Draft
	rooms   string // POST creates rooms; a room URL extends it with /{room_id}
	public  string // GET lists discoverable rooms
	myRooms string // GET lists the agent's rooms
}

// ErrDraftMismatch is wrapped by the error of a client whose
// ClientOptions.Draft names another draft than the host's discovery
// document.
var ErrDraftMismatch = errors.New("adp: the host serves another ADP draft than the client's options name")

// NewClient returns a client for the host whose API origin is host (such
// as "https://api.al.ink"): the audience of every request JWT, and the
// origin of the /v1 API.
func NewClient(host string, opts *ClientOptions) (*Client, error) {
	if opts == nil || opts.Signer == nil {
		return nil, errors.New("adp: ClientOptions.Signer is required")
	}
	if !opts.Draft.Known() {
		return nil, fmt.Errorf("adp: ClientOptions.Draft %d is no ADP draft", int(opts.Draft))
	}
	oopts := &identity.OriginOptions{AllowLoopbackHTTP: opts.AllowLoopbackHTTP}
	origin, err := identity.ParseOrigin(host, oopts)
	if err != nil {
		return nil, err
	}
	c := &Client{
		origin: origin, signer: opts.Signer, now: opts.Now,
		pageSize: cmp.Or(max(opts.PageSize, 0), DefaultPageSize), maxRecs: cmp.Or(max(opts.MaxRecords, 0), DefaultMaxRecords),
		maxPages: opts.MaxPages, maxItems: opts.MaxListItems, maxBytes: opts.MaxListBytes, maxResp: cmp.Or(max(opts.MaxResponseSize, 0), httpc.DefaultMaxResponseSize),
		packs: opts.Packs, oopts: oopts, newRep: opts.NewReplica, rooms: map[string]*Replica{},
		draftOpt: opts.Draft,
	}
	if opts.Draft != 0 {
		c.learned.Store(c.defaultAPI(opts.Draft))
	}
	if c.now == nil {
		c.now = time.Now
	}
	retries := opts.Retries
	if retries == 0 {
		retries = 3
	}
	attempt := cmp.Or(opts.AttemptTimeout, DefaultAttemptTimeout)
	c.discoverWithin = attempt
	if attempt < 0 {
		c.discoverWithin = DefaultAttemptTimeout
	}
	c.hc = httpc.New(&httpc.Options{
		HTTPClient: opts.HTTPClient, Origins: oopts, Retries: retries, Backoff: cmp.Or(opts.RetryBackoff, 100*time.Millisecond),
		MaxWait: cmp.Or(opts.MaxRetryWait, 5*time.Second), MaxResponseSize: opts.MaxResponseSize, Signer: opts.Signer, Now: c.now,
		AttemptTimeout: attempt,
	})
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

// Signer returns the client's key, which signs its events and request
// JWTs (sse.Options takes it from here).
func (c *Client) Signer() identity.Signer { return c.signer }

// HTTPClient returns the *http.Client the Client sends with, its
// same-origin redirect policy included, for requests the Client does not
// make itself (a live stream).
func (c *Client) HTTPClient() *http.Client { return c.hc.HTTPClient() }

// OriginOptions returns the origin rules the client checks URLs with
// (AllowLoopbackHTTP). Treat it as read-only.
func (c *Client) OriginOptions() *identity.OriginOptions { return c.oopts }

// Clock returns the client's clock (ClientOptions.Now or time.Now).
func (c *Client) Clock() func() time.Time { return c.now }

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
	// once marks a request that must not be retried: the only one is
	// creating a join request, which is not idempotent. A write re-sends
	// the same envelope, which the host's exact-resubmission rule makes
	// idempotent.
	once bool
}

// do sends req through the SDK's HTTP layer (internal/httpc): a fresh JWT
// per attempt, bounded retries with jitter after transport errors and
// 429/502/503/504, bounded bodies, strict error bodies. It returns the body
// of a 2xx answer; other answers are *identity.Error values
// (*HeadMismatchError for room_head_mismatch).
func (c *Client) do(ctx context.Context, req request) ([]byte, int, error) {
	u := req.path
	if len(u) > 0 && u[0] == '/' {
		u = c.origin.String() + u
	} else if err := c.sameOrigin(u); err != nil {
		return nil, 0, err
	}
	resp, err := c.hc.Do(ctx, &httpc.Request{
		Method: req.method, URL: u, Body: req.body, Idempotent: !req.once,
		Authenticate: req.auth, Audience: c.origin,
	})
	if err != nil {
		return nil, 0, headMismatch(err)
	}
	return resp.Body, resp.StatusCode, nil
}

// headMismatch turns a room_head_mismatch *identity.Error into a
// *HeadMismatchError carrying its data.
func headMismatch(err error) error {
	var e *identity.Error
	if errors.As(err, &e) && e.Code == CodeRoomHeadMismatch {
		hm := &HeadMismatchError{Err: e}
		if len(e.Data) > 0 {
			strictjson.UnmarshalOpen(e.Data, &hm.Data)
		}
		return hm
	}
	return err
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

// cursor returns the guard of one listing's cursor loop.
func (c *Client) cursor() *httpc.Cursor {
	return &httpc.Cursor{MaxPages: c.maxPages, MaxItems: c.maxItems, MaxBytes: c.maxBytes}
}

// listError is the error of a listing whose cursor loop did not end.
func listError(what string, err error) error {
	return identity.Wrap(identity.CodeInvalidRequest, what, err)
}

// hostList is a list answer ({result, next_cursor}, Identity §8) decoded
// openly like every unsigned answer: members beside the two are ignored,
// and a null or absent next_cursor means the last page.
type hostList[T any] struct {
	Result     []T     `json:"result"`
	NextCursor *string `json:"next_cursor"`

	size int // the page's bytes
}

func (l *hostList[T]) cursor() string {
	if l.NextCursor == nil {
		return ""
	}
	return *l.NextCursor
}

// getList GETs one list page; "result" must be an array.
func getList[T any](ctx context.Context, c *Client, path string, auth bool) (*hostList[T], error) {
	b, _, err := c.do(ctx, request{method: http.MethodGet, path: path, auth: auth})
	if err != nil {
		return nil, err
	}
	l := hostList[T]{size: len(b)}
	if err := decodeAnswer(b, &l); err != nil {
		return nil, err
	}
	if l.Result == nil {
		return nil, identity.NewError(identity.CodeInvalidRequest, `host answer: list has no "result" array`)
	}
	return &l, nil
}

// getJSON GETs path and decodes the answer into v (decodeAnswer).
func (c *Client) getJSON(ctx context.Context, path string, auth bool, v any) error {
	b, _, err := c.do(ctx, request{method: http.MethodGet, path: path, auth: auth})
	if err != nil {
		return err
	}
	return decodeAnswer(b, v)
}

// decodeAnswer decodes a host's unsigned answer: strict JSON (duplicates,
// bad Unicode and unsafe integers refused) but an open schema, so a member
// the SDK does not know is ignored or kept in the type's Unknown field
// rather than fatal (§6; the seed-era schemas leave these documents open).
func decodeAnswer(b []byte, v any) error {
	if err := strictjson.UnmarshalOpen(b, v); err != nil {
		return identity.Wrap(identity.CodeInvalidRequest, "host answer", err)
	}
	return nil
}

// roomURL returns the URL of room id (escaped) on the host: its room
// collection followed by /{id}.
func (api *hostAPI) roomURL(id string) string { return api.rooms + "/" + url.PathEscape(id) }

// Discover fetches and strictly parses the host's discovery document. A
// client without ClientOptions.Draft learns the host's draft and endpoints
// from the first one it reads; one with it refuses a document of another
// draft (ErrDraftMismatch).
func (c *Client) Discover(ctx context.Context) (*Discovery, error) {
	b, _, err := c.do(ctx, request{method: http.MethodGet, path: DiscoveryPath})
	if err != nil {
		return nil, err
	}
	d, err := ParseDiscovery(b, c.oopts)
	if err != nil {
		return nil, err
	}
	if c.draftOpt != 0 && d.Draft != c.draftOpt.OrDefault() {
		return nil, fmt.Errorf("%w: %s's discovery document is of the %s draft; ClientOptions.Draft names the %s draft",
			ErrDraftMismatch, c.origin, d.Draft, c.draftOpt.OrDefault())
	}
	api, err := c.apiOf(d)
	if err != nil {
		return nil, err
	}
	if c.draftOpt == 0 {
		c.learned.CompareAndSwap(nil, api)
	}
	return d, nil
}

// Draft returns the draft the client speaks to its host: ClientOptions.Draft,
// or else the one the host's discovery document has (read once; a failed
// read is tried again by the next call).
func (c *Client) Draft(ctx context.Context) (Draft, error) {
	api, err := c.hostAPI(ctx)
	if err != nil {
		return 0, err
	}
	return api.draft, nil
}

// KnownDraft returns the client's draft without I/O: false until the
// client has learned it (ClientOptions.Draft sets it at once).
func (c *Client) KnownDraft() (Draft, bool) {
	if api := c.learned.Load(); api != nil {
		return api.draft, true
	}
	return 0, false
}

// hostAPI returns the draft and endpoints of the host, reading its
// discovery document the first time when ClientOptions.Draft is zero.
func (c *Client) hostAPI(ctx context.Context) (*hostAPI, error) {
	if api := c.learned.Load(); api != nil {
		return api, nil
	}
	c.apiMu.Lock()
	defer c.apiMu.Unlock()
	if api := c.learned.Load(); api != nil {
		return api, nil
	}
	if _, err := c.Discover(ctx); err != nil {
		if !errors.Is(err, identity.ErrNotFound) {
			return nil, fmt.Errorf("adp: learning the host's ADP draft from its discovery document: %w", err)
		}
		// No document (it is a SHOULD in both drafts): the default draft.
		c.learned.Store(c.defaultAPI(DefaultDraft))
	}
	return c.learned.Load(), nil
}

// defaultAPI is the draft's endpoints at their default paths (seed §16,
// 2026-09-24 §15, §17).
func (c *Client) defaultAPI(d Draft) *hostAPI {
	o := c.origin.String()
	api := &hostAPI{draft: d.OrDefault(), rooms: o + "/v1/rooms", public: o + "/v1/rooms/public", myRooms: o + "/v1/me/rooms"}
	if api.draft != Draft20260704 {
		api.public = api.rooms // §17: GET /v1/rooms
	}
	return api
}

// apiOf is the draft and endpoints a discovery document gives: the
// 2026-09-24 draft's rooms and my_rooms endpoints replace the default
// paths, and must be on the host's origin, as its service must be (the
// origin room.create names, and the audience of request tokens).
func (c *Client) apiOf(d *Discovery) (*hostAPI, error) {
	api := c.defaultAPI(d.Draft)
	if d.Draft == Draft20260704 {
		return api, nil
	}
	if d.Service != c.origin {
		return nil, identity.Errorf(identity.CodeInvalidRequest, "the discovery document's service %s is not the host origin %s", d.Service, c.origin)
	}
	if e := d.Endpoints; e != nil {
		for _, f := range []struct {
			u   string
			dst *string
		}{{e.Rooms, &api.rooms}, {e.MyRooms, &api.myRooms}} {
			if f.u == "" {
				continue
			}
			if err := c.sameOrigin(f.u); err != nil {
				return nil, err
			}
			*f.dst = strings.TrimSuffix(f.u, "/")
		}
		api.public = api.rooms
	}
	return api, nil
}

// GetRoom fetches the room resource (seed §16, 2026-09-24 §15). Its
// fields are the host's assertions; Sync verifies the history they
// summarize. In the 2026-09-24 draft the resource names the latest
// record's acceptance time accepted_at, which ReceivedAt then holds.
func (c *Client) GetRoom(ctx context.Context, roomID string) (*RoomResource, error) {
	api, err := c.hostAPI(ctx)
	if err != nil {
		return nil, err
	}
	var w struct {
		RoomResource `json:",inline"`
		// AcceptedAt is the 2026-09-24 draft's member (§15).
		AcceptedAt *int64 `json:"accepted_at"`
	}
	if err := c.getJSON(ctx, api.roomURL(roomID), true, &w); err != nil {
		return nil, err
	}
	r := &w.RoomResource
	if r.ID != roomID {
		return nil, identity.Errorf(identity.CodeInvalidRequest, "host answered room %q for %q", clip(r.ID), clip(roomID))
	}
	if api.draft != Draft20260704 && w.AcceptedAt != nil {
		r.ReceivedAt = *w.AcceptedAt
	}
	return r, nil
}

// marshal encodes a request body deterministically.
func marshal(v any) ([]byte, error) {
	return json.Marshal(v, json.Deterministic(true))
}

package profile

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/httpc"
)

// ClientOptions configures a Client. A nil *ClientOptions means defaults;
// so does the zero value of each field.
type ClientOptions struct {
	// HTTPClient sends the requests; nil means a new http.Client with the
	// default transport. The Client sends through a copy that follows
	// redirects only within the request's origin (never from https to
	// http, never elsewhere); the value given is not modified.
	HTTPClient *http.Client
	// Timeout bounds one Client call, retries and verification included;
	// 0 means 30 s, negative means no timeout beyond the caller's context.
	Timeout time.Duration
	// Retries is how many times an idempotent read (discovery, get, batch,
	// history) is retried after a transport error or a 429, 502, 503 or
	// 504 answer; 0 means 2, negative means none. Writes are never
	// retried, except the one nonce resync of Update.
	Retries int
	// RetryBackoff is the wait before the first retry, doubled for each
	// further one and jittered; 0 means 200 ms. A Retry-After header
	// replaces it.
	RetryBackoff time.Duration
	// MaxRetryWait is the longest single wait the client accepts; a
	// Retry-After asking for more ends the retries. 0 means 10 s.
	MaxRetryWait time.Duration
	// AllowLoopbackHTTP accepts http://127.0.0.1, http://[::1] and
	// http://localhost service origins and endpoint URLs, for local
	// development and tests. Never set it for production services: the
	// origin would be reached without TLS.
	AllowLoopbackHTTP bool
	// Limits are the limits Update validates a payload against before
	// signing it; nil means the recommended limits. Reads verify the
	// structural rules only, since the service's limits may be larger.
	Limits *Limits
	// MaxResponseSize bounds the bytes read from one response; 0 means
	// 32 MiB (a full batch of large profiles).
	MaxResponseSize int64
	// VerifyConcurrency is how many history requests Batch runs at once to
	// verify its documents; 0 means 8.
	VerifyConcurrency int
	// MaxHistoryPages and MaxHistoryEvents bound one AllEvents iteration:
	// the pages it follows and the updates it reads (it ends with an
	// invalid_response error after the page that passes either); 0 means
	// 1000 pages and 10,000 updates. A repeated cursor ends it too, and so
	// do pages of more than 64 MiB in all.
	MaxHistoryPages, MaxHistoryEvents int
	// StrictDocuments makes a served document that differs from the
	// materialization of its verified update an invalid_response error
	// (wrapping ErrDiscrepancy) instead of a Verified.Discrepancy.
	StrictDocuments bool
}

// Client talks to one Agent Profile service. Every document it returns as
// trusted has been checked against the latest signed update in the
// service's event history; methods returning unverified data say so in
// their name (…UnverifiedUnsafe).
//
// A Client is safe for concurrent use. It discovers the service's
// endpoints once, on first use, and serializes its own Update calls per
// Agent ID so that they never race each other's nonces.
type Client struct {
	service    identity.Origin
	originOpts *identity.OriginOptions
	http       *httpc.Client
	// maxPages and maxEvents bound one AllEvents (0: httpc's defaults).
	maxPages, maxEvents int
	timeout             time.Duration
	limits              *Limits
	conc                int
	strict              bool

	mu  sync.Mutex
	eps *endpoints // nil until resolved

	locksMu sync.Mutex
	locks   map[identity.AgentID]chan struct{}
}

// Verified is a profile checked against its signed update: Document is the
// materialization of Update, and Update is the service's latest accepted
// update of the agent with a valid signature and payload. Compare
// Update.Event().Nonce across services to prefer the freshest (§9).
//
// The signed update is the truth, so Document is always computed from it,
// never taken from the service; what the service served is only compared
// with it (see Discrepancy).
type Verified struct {
	// Document is the materialized profile.
	Document *Document
	// Update is the signed profile.update it was materialized from.
	Update *envelope.Envelope
	// Discrepancy is nil when the service served exactly Document (up to
	// RFC 8785 form), and otherwise reports what it served instead — for
	// example the [] and {} that some services add for absent members.
	// It never makes Document less trustworthy; with
	// ClientOptions.StrictDocuments it is an error instead.
	Discrepancy *Discrepancy
}

// Discrepancy is a served profile document that differs from the
// materialization of the verified update: the service's representation is
// off (empty members added, members dropped or altered) or it served an
// older or newer document than its event history's latest update.
type Discrepancy struct {
	// Served is the document as the service sent it. It parsed strictly
	// but is unverified: display or log it, never trust it.
	Served jsontext.Value
	// Members are the top-level members whose values differ or that only
	// one side has, sorted.
	Members []string
}

// String describes the discrepancy briefly.
func (d *Discrepancy) String() string {
	return "served document differs from the signed update in " + strings.Join(d.Members, ", ")
}

// ErrDiscrepancy is the cause of the invalid_response error a Client with
// ClientOptions.StrictDocuments returns for a served document that is not
// the materialization of its verified update.
var ErrDiscrepancy = errors.New("profile: served document is not the materialization of the signed update")

// EventsPage is one page of an agent's accepted updates, newest first by
// nonce, each verified (signature, payload rules, actor = the agent).
type EventsPage struct {
	// Updates are the page's accepted updates, newest first.
	Updates []*envelope.Envelope
	// NextCursor fetches the next (older) page; "" on the last page.
	NextCursor string

	size int // the page's bytes
}

// NewClient returns a client for the profile service at the serialized
// origin service, e.g. "https://profiles.example.com". It does no I/O.
func NewClient(service string, opts *ClientOptions) (*Client, error) {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	c := &Client{
		originOpts: &identity.OriginOptions{AllowLoopbackHTTP: o.AllowLoopbackHTTP},
		timeout:    o.Timeout,
		limits:     o.Limits,
		conc:       o.VerifyConcurrency,
		strict:     o.StrictDocuments,
		maxPages:   o.MaxHistoryPages,
		maxEvents:  o.MaxHistoryEvents,
		locks:      map[identity.AgentID]chan struct{}{},
	}
	origin, err := identity.ParseOrigin(service, c.originOpts)
	if err != nil {
		return nil, err
	}
	c.service = origin
	c.http = httpc.New(&httpc.Options{
		HTTPClient:      o.HTTPClient,
		Origins:         c.originOpts,
		Retries:         o.Retries,
		Backoff:         o.RetryBackoff,
		MaxWait:         o.MaxRetryWait,
		MaxResponseSize: o.MaxResponseSize,
	})
	if c.timeout == 0 {
		c.timeout = 30 * time.Second
	}
	if c.conc <= 0 {
		c.conc = 8
	}
	return c, nil
}

// Service returns the service origin.
func (c *Client) Service() identity.Origin { return c.service }

// endpoints are the resolved URLs of a service.
type endpoints struct {
	profiles *url.URL
	batch    *url.URL
	// disc is the discovery document, nil when the service has none; its
	// features are then unknown and every endpoint is tried.
	disc *identity.Discovery
}

func (e *endpoints) supports(feature string) bool {
	return e.disc == nil || e.disc.HasFeature(feature)
}

func unsupported(feature string) error {
	return fmt.Errorf("%w: %s (not in the discovery document)", ErrUnsupported, feature)
}

// Discover fetches the discovery document (GET /.well-known/agent-profile),
// checks that it is an agent-profile/1.0 document whose service is this
// client's origin, and makes its endpoints override the default paths.
// Other calls discover lazily; call Discover to refresh. A service without
// a discovery document answers not_found; the client then uses the default
// paths and tries every optional feature.
func (c *Client) Discover(ctx context.Context) (*identity.Discovery, error) {
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	eps, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.eps = eps
	c.mu.Unlock()
	if eps.disc == nil {
		return nil, identity.NewError(identity.CodeNotFound, "service has no discovery document")
	}
	return eps.disc, nil
}

// resolve returns the cached endpoints, discovering them on first use.
func (c *Client) resolve(ctx context.Context) (*endpoints, error) {
	c.mu.Lock()
	eps := c.eps
	c.mu.Unlock()
	if eps != nil {
		return eps, nil
	}
	eps, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.eps == nil {
		c.eps = eps
	}
	eps = c.eps
	c.mu.Unlock()
	return eps, nil
}

func (c *Client) discover(ctx context.Context) (*endpoints, error) {
	base := c.service.URL()
	eps := &endpoints{profiles: base.JoinPath(DefaultProfilesPath), batch: base.JoinPath(DefaultBatchPath)}
	resp, err := c.do(ctx, http.MethodGet, base.JoinPath(DiscoveryPath).String(), nil, true)
	if errors.Is(err, identity.ErrNotFound) {
		return eps, nil
	}
	if err != nil {
		return nil, err
	}
	d, err := identity.ParseDiscovery(resp, c.originOpts)
	if err != nil {
		return nil, invalidResponse("discovery document", err)
	}
	if d.Protocol != Protocol {
		return nil, invalidResponse("discovery document is for protocol "+quoteTrunc(d.Protocol), nil)
	}
	if d.Service != c.service {
		return nil, invalidResponse("discovery document names service "+quoteTrunc(d.Service.String())+", not "+c.service.String(), nil)
	}
	for name, dst := range map[string]**url.URL{EndpointProfiles: &eps.profiles, EndpointProfileBatch: &eps.batch} {
		if s, ok := d.Endpoints[name]; ok {
			u, err := url.Parse(s) // ParseDiscovery checked it is absolute
			if err != nil {
				return nil, invalidResponse("discovery endpoint "+name, err)
			}
			*dst = u
		}
	}
	eps.disc = d
	return eps, nil
}

// Get fetches the profile of id and verifies it: the client also fetches
// the latest accepted update from the event history (limit 1), verifies
// its signature and payload rules and that it is id's, and returns that
// update's materialization. The served document is compared with it: a
// document naming another event is fetched once more (an update may have
// landed in between), and one that still differs is reported in
// Verified.Discrepancy, or with ClientOptions.StrictDocuments fails with
// invalid_response. A history whose latest update does not verify always
// fails with invalid_response.
//
// A service whose discovery document does not list event-history cannot
// prove anything: Get then fails with ErrUnsupported (see
// GetUnverifiedUnsafe). An unknown profile is a not_found error.
func (c *Client) Get(ctx context.Context, id identity.AgentID) (*Verified, error) {
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	eps, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	return c.get(ctx, eps, id)
}

func (c *Client) get(ctx context.Context, eps *endpoints, id identity.AgentID) (*Verified, error) {
	if !eps.supports(FeatureEventHistory) {
		return nil, unsupported(FeatureEventHistory)
	}
	for try := 0; ; try++ {
		raw, d, err := c.fetchDocument(ctx, eps, id)
		if err != nil {
			return nil, err
		}
		v, err := c.verifyDocument(ctx, eps, id, raw)
		if err != nil {
			return nil, err
		}
		if try == 0 && v.Discrepancy != nil && d.EventID != v.Update.Hash() {
			continue // document and history straddle an update
		}
		return c.settle(v)
	}
}

// settle applies ClientOptions.StrictDocuments to a verified result.
func (c *Client) settle(v *Verified) (*Verified, error) {
	if c.strict && v.Discrepancy != nil {
		return nil, invalidResponse("profile document (latest update "+v.Update.Hash().String()+"): "+v.Discrepancy.String(), ErrDiscrepancy)
	}
	return v, nil
}

// GetUnverifiedUnsafe fetches the document of id without verifying it
// against a signed update: it is strictly parsed and follows the payload
// rules, but the service could have written any of it. Use it only for
// services without event history, and never treat the result as the
// agent's own statement.
func (c *Client) GetUnverifiedUnsafe(ctx context.Context, id identity.AgentID) (*Document, error) {
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	eps, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	_, d, err := c.fetchDocument(ctx, eps, id)
	return d, err
}

func (c *Client) fetchDocument(ctx context.Context, eps *endpoints, id identity.AgentID) ([]byte, *Document, error) {
	if id.IsZero() {
		return nil, nil, identity.NewError(identity.CodeInvalidRequest, "zero Agent ID")
	}
	raw, err := c.do(ctx, http.MethodGet, eps.profiles.JoinPath(id.String()).String(), nil, true)
	if err != nil {
		return nil, nil, err
	}
	d, err := ParseDocument(raw)
	if err != nil {
		return nil, nil, err
	}
	if d.ID != id {
		return nil, nil, invalidResponse("service answered with the profile of "+d.ID.String(), nil)
	}
	return raw, d, nil
}

// verifyDocument verifies the latest update of id and compares the served
// document raw with its materialization, reporting a difference as a
// Discrepancy (settle decides whether that is an error).
func (c *Client) verifyDocument(ctx context.Context, eps *endpoints, id identity.AgentID, raw []byte) (*Verified, error) {
	page, err := c.events(ctx, eps, id, 1, "")
	if err != nil {
		if eps.disc == nil && errors.Is(err, identity.ErrNotFound) {
			// The document exists, so a missing history is a missing feature.
			return nil, fmt.Errorf("%w: %s (%w)", ErrUnsupported, FeatureEventHistory, err)
		}
		return nil, err
	}
	if len(page.Updates) == 0 {
		return nil, invalidResponse("service serves a profile but its event history is empty", nil)
	}
	env := page.Updates[0]
	want, err := Materialize(env)
	if err != nil {
		return nil, invalidResponse("latest update", err)
	}
	disc, err := compareDocument(raw, want)
	if err != nil {
		return nil, invalidResponse("profile document", err)
	}
	return &Verified{Document: want, Update: env, Discrepancy: disc}, nil
}

// Batch fetches the profiles of up to MaxBatchIDs agents in one request
// and verifies each one as Get does (one history request per profile, a
// few at a time, each result the materialization of the verified update
// with any Discrepancy reported). Results follow the order of ids; unknown profiles are
// left out and repeated ids answered once. More than MaxBatchIDs ids is an
// invalid_request error before any request is sent. If any profile fails
// verification the call fails; use BatchUnverifiedUnsafe and Get for
// partial results.
func (c *Client) Batch(ctx context.Context, ids []identity.AgentID) ([]*Verified, error) {
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	docs, raws, eps, err := c.batch(ctx, ids)
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	if !eps.supports(FeatureEventHistory) {
		return nil, unsupported(FeatureEventHistory)
	}
	out := make([]*Verified, len(docs))
	errs := make([]error, len(docs))
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	sem := make(chan struct{}, c.conc)
	var wg sync.WaitGroup
	for i := range docs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			v, err := c.verifyDocument(ctx, eps, docs[i].ID, raws[i])
			switch {
			case err == nil && v.Discrepancy != nil && docs[i].EventID != v.Update.Hash():
				v, err = c.get(ctx, eps, docs[i].ID) // updated meanwhile: fetch afresh
			case err == nil:
				v, err = c.settle(v)
			}
			out[i], errs[i] = v, err
			if err != nil {
				stop()
			}
		})
	}
	wg.Wait()
	// Report the failure that stopped the others, not their cancellation.
	bad := -1
	for i, err := range errs {
		if err != nil && (bad < 0 || errors.Is(errs[bad], context.Canceled) && !errors.Is(err, context.Canceled)) {
			bad = i
		}
	}
	if bad >= 0 {
		return nil, fmt.Errorf("profile %s: %w", docs[bad].ID, errs[bad])
	}
	return out, nil
}

// BatchUnverifiedUnsafe is Batch without verification: one request, the
// documents strictly parsed but only as trustworthy as the service.
func (c *Client) BatchUnverifiedUnsafe(ctx context.Context, ids []identity.AgentID) ([]*Document, error) {
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	docs, _, _, err := c.batch(ctx, ids)
	return docs, err
}

func (c *Client) batch(ctx context.Context, ids []identity.AgentID) ([]*Document, [][]byte, *endpoints, error) {
	if len(ids) > MaxBatchIDs {
		return nil, nil, nil, identity.Errorf(identity.CodeInvalidRequest, "batch of %d ids exceeds %d", len(ids), MaxBatchIDs)
	}
	order := make(map[identity.AgentID]int, len(ids))
	var uniq []string
	for _, id := range ids {
		if id.IsZero() {
			return nil, nil, nil, identity.NewError(identity.CodeInvalidRequest, "zero Agent ID in batch")
		}
		if _, dup := order[id]; !dup {
			order[id] = len(uniq)
			uniq = append(uniq, id.String())
		}
	}
	if len(uniq) == 0 {
		return nil, nil, nil, nil
	}
	eps, err := c.resolve(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	if !eps.supports(FeatureBatchRead) {
		return nil, nil, nil, unsupported(FeatureBatchRead)
	}
	body, err := json.Marshal(struct {
		IDs []string `json:"ids"`
	}{uniq})
	if err != nil {
		return nil, nil, nil, err
	}
	raw, err := c.do(ctx, http.MethodPost, eps.batch.String(), body, true)
	if err != nil {
		return nil, nil, nil, err
	}
	var list identity.List[jsontext.Value]
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, nil, nil, invalidResponse("batch response", err)
	}
	if list.NextCursor != "" {
		return nil, nil, nil, invalidResponse("batch response has a next_cursor", nil)
	}
	docs := make([]*Document, len(uniq))
	raws := make([][]byte, len(uniq))
	for _, item := range list.Result {
		d, err := ParseDocument(item)
		if err != nil {
			return nil, nil, nil, err
		}
		i, ok := order[d.ID]
		switch {
		case !ok:
			return nil, nil, nil, invalidResponse("batch response has unrequested profile "+d.ID.String(), nil)
		case docs[i] != nil:
			return nil, nil, nil, invalidResponse("batch response repeats profile "+d.ID.String(), nil)
		}
		docs[i], raws[i] = d, item
	}
	// Request order, unknown ids left out.
	var outD []*Document
	var outR [][]byte
	for i := range docs {
		if docs[i] != nil {
			outD, outR = append(outD, docs[i]), append(outR, raws[i])
		}
	}
	return outD, outR, eps, nil
}

// Update signs p as a profile.update through a and publishes it. The
// payload is validated first (ClientOptions.Limits), before any request.
// p.ID is filled from the signer; p replaces the whole profile.
//
// When the service answers nonce_not_greater with a Max-Seen-Nonce header
// (another device or process of the same key got ahead), the header is
// applied to a.Nonces within the Identity bound and the update is signed
// again and sent once more. A second rejection is returned as is.
//
// The answer must be a document of the update sent; the result is that
// update's materialization, and an answer that differs from it is reported
// in Verified.Discrepancy (an error with ClientOptions.StrictDocuments).
func (c *Client) Update(ctx context.Context, a *envelope.Author, p Payload) (*Verified, error) {
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	raw, err := preparePayload(a, &p, c.limits)
	if err != nil {
		return nil, err
	}
	unlock, err := c.lock(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	eps, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	v, err := c.signAndPublish(ctx, eps, a, raw)
	var ie *identity.Error
	if !errors.As(err, &ie) || ie.Code != identity.CodeNonceNotGreater || ie.MaxSeenNonce == 0 {
		return v, err
	}
	if oerr := a.Nonces.ObserveMaxSeenNonce(ctx, ie.MaxSeenNonce); oerr != nil {
		return nil, fmt.Errorf("%w (Max-Seen-Nonce not applied: %w)", err, oerr)
	}
	return c.signAndPublish(ctx, eps, a, raw)
}

func (c *Client) signAndPublish(ctx context.Context, eps *endpoints, a *envelope.Author, raw []byte) (*Verified, error) {
	env, err := a.Sign(ctx, Protocol, TypeUpdate, raw, nil)
	if err != nil {
		return nil, err
	}
	return c.publish(ctx, eps, env, true)
}

// Publish posts an update signed elsewhere (a relay, a migration between
// services). The envelope is verified locally first (VerifyUpdate with
// NoLimits). An exact resubmission of an update the service already
// accepted is answered with the current profile, which may be a later
// update's; Publish then returns that profile verified as Get does.
func (c *Client) Publish(ctx context.Context, env *envelope.Envelope) (*Verified, error) {
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	if _, err := VerifyUpdate(env, NoLimits()); err != nil {
		return nil, err
	}
	eps, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	return c.publish(ctx, eps, env, false)
}

func (c *Client) publish(ctx context.Context, eps *endpoints, env *envelope.Envelope, fresh bool) (*Verified, error) {
	raw, err := c.do(ctx, http.MethodPost, eps.profiles.String(), env.AppendJSON(nil), false)
	if err != nil {
		return nil, err
	}
	d, err := ParseDocument(raw)
	if err != nil {
		return nil, err
	}
	if d.EventID != env.Hash() {
		if fresh || d.ID != env.Actor() {
			return nil, invalidResponse("service answered an update with the document of event "+d.EventID.String(), nil)
		}
		return c.get(ctx, eps, env.Actor())
	}
	want, err := Materialize(env)
	if err != nil {
		return nil, err
	}
	disc, err := compareDocument(raw, want)
	if err != nil {
		return nil, invalidResponse("accepted document", err)
	}
	return c.settle(&Verified{Document: want, Update: env, Discrepancy: disc})
}

// Events fetches one page of id's accepted updates, newest first by nonce:
// limit items at most (0 = the service default, 1) after cursor ("" = the
// newest). Every update is verified and must be id's, and nonces must
// strictly decrease. See AllEvents for an iterator.
func (c *Client) Events(ctx context.Context, id identity.AgentID, limit int, cursor string) (*EventsPage, error) {
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	eps, err := c.resolve(ctx)
	if err != nil {
		return nil, err
	}
	if !eps.supports(FeatureEventHistory) {
		return nil, unsupported(FeatureEventHistory)
	}
	return c.events(ctx, eps, id, limit, cursor)
}

func (c *Client) events(ctx context.Context, eps *endpoints, id identity.AgentID, limit int, cursor string) (*EventsPage, error) {
	if id.IsZero() {
		return nil, identity.NewError(identity.CodeInvalidRequest, "zero Agent ID")
	}
	u := eps.profiles.JoinPath(id.String(), "events")
	q := u.Query()
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	u.RawQuery = q.Encode()
	raw, err := c.do(ctx, http.MethodGet, u.String(), nil, true)
	if err != nil {
		return nil, err
	}
	var list identity.List[jsontext.Value]
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, invalidResponse("event history", err)
	}
	if most := max(limit, 1); len(list.Result) > most {
		return nil, invalidResponse(fmt.Sprintf("event history returned %d updates for limit %d", len(list.Result), most), nil)
	}
	page := &EventsPage{NextCursor: list.NextCursor, size: len(raw)}
	last := int64(math.MaxInt64)
	for i, item := range list.Result {
		env, err := envelope.Parse(item)
		if err == nil {
			_, err = VerifyUpdate(env, NoLimits())
		}
		if err != nil {
			return nil, invalidResponse("event history item "+strconv.Itoa(i), err)
		}
		if env.Actor() != id {
			return nil, invalidResponse("event history item "+strconv.Itoa(i)+" is an update of "+env.Actor().String(), nil)
		}
		if n := env.Event().Nonce; n >= last {
			return nil, invalidResponse("event history is not newest first by nonce", nil)
		} else {
			last = n
		}
		page.Updates = append(page.Updates, env)
	}
	return page, nil
}

// AllEvents iterates over all of id's accepted updates, newest first,
// fetching pages of pageSize (0 = the service default). It stops after
// the first error, which it yields with a nil envelope. Nonces must
// strictly decrease across pages too.
func (c *Client) AllEvents(ctx context.Context, id identity.AgentID, pageSize int) iter.Seq2[*envelope.Envelope, error] {
	return func(yield func(*envelope.Envelope, error) bool) {
		cursor := ""
		last := int64(math.MaxInt64)
		guard := &httpc.Cursor{MaxPages: c.maxPages, MaxItems: c.maxEvents}
		for {
			page, err := c.Events(ctx, id, pageSize, cursor)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, e := range page.Updates {
				n := e.Event().Nonce
				if n >= last {
					yield(nil, invalidResponse("event history is not newest first by nonce across pages", nil))
					return
				}
				last = n
				if !yield(e, nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			if len(page.Updates) == 0 {
				yield(nil, invalidResponse("event history page is empty but has a next_cursor", nil))
				return
			}
			if _, err := guard.Next(len(page.Updates), page.size, page.NextCursor); err != nil {
				yield(nil, invalidResponse("event history", err))
				return
			}
			cursor = page.NextCursor
		}
	}
}

// lock serializes this client's updates of one Agent ID.
func (c *Client) lock(ctx context.Context, id identity.AgentID) (func(), error) {
	c.locksMu.Lock()
	ch := c.locks[id]
	if ch == nil {
		ch = make(chan struct{}, 1)
		c.locks[id] = ch
	}
	c.locksMu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Client) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout > 0 {
		return context.WithTimeout(ctx, c.timeout)
	}
	return context.WithCancel(ctx)
}

// do sends one request through the shared HTTP layer (internal/httpc) and
// returns the body of a 2xx answer. Non-2xx answers are *identity.Error
// values. Idempotent requests are retried on transport errors and
// 429/502/503/504; redirects are followed only within one origin.
func (c *Client) do(ctx context.Context, method, u string, body []byte, idempotent bool) ([]byte, error) {
	resp, err := c.http.Do(ctx, &httpc.Request{Method: method, URL: u, Body: body, Idempotent: idempotent})
	switch {
	case errors.Is(err, httpc.ErrResponseTooLarge), errors.Is(err, httpc.ErrRedirectRefused):
		return nil, invalidResponse("service response", err)
	case err != nil:
		return nil, err
	}
	return resp.Body, nil
}

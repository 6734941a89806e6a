// Package profiletest runs an in-memory Agent Profile 1.0 service on an
// [httptest.Server], for tests and examples of code that reads or writes
// profiles.
//
// It implements every endpoint of §7 with the service-side rules: the
// Identity live-write order through an [envelope.Verifier] (time window,
// nonce cache, exact resubmission answered from its own store), the
// durable latest-nonce comparison of §6 (nonce_not_greater with
// Max-Seen-Nonce), full-replacement materialization, history newest first
// by nonce with opaque cursors, batch reads, request-size limits and strict
// JSON on every request body. Errors use the Identity error body.
//
// The service keeps everything in memory and is safe for concurrent use.
// [NewServer] starts one; [Server.NewClient] returns a [profile.Client]
// configured for it.
//
//	srv := profiletest.NewServer(nil)
//	defer srv.Close()
//	client := srv.NewClient(nil) // a *profile.Client for srv
package profiletest

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/profile"
)

// Options configures a Server. A nil *Options means defaults; so does the
// zero value of each field.
type Options struct {
	// Now is the service clock; nil means time.Now.
	Now func() time.Time
	// Window is the live-write window; 0 means envelope.DefaultWindow.
	Window time.Duration
	// Limits are the field limits the service enforces; nil means the
	// recommended ones.
	Limits *profile.Limits
	// MaxBodySize bounds request bodies (payload_too_large beyond); 0
	// means envelope.MaxSize (1 MiB).
	MaxBodySize int64
	// MaxEventsLimit is the largest limit a history page honours (larger
	// ones are clamped); 0 means 100.
	MaxEventsLimit int
	// PathPrefix is put in front of the /v1/… paths, and the discovery
	// document lists the resulting endpoints; clients that ignore
	// discovery then fail. The discovery document stays at
	// /.well-known/agent-profile.
	PathPrefix string
	// DisableBatch removes the batch endpoint and the batch-read feature.
	DisableBatch bool
	// DisableHistory removes the events endpoint and the event-history
	// feature, making profiles unverifiable.
	DisableHistory bool
	// NoDiscovery answers not_found for the discovery document.
	NoDiscovery bool
	// TLS serves HTTPS with httptest's certificate (trusted by Client);
	// otherwise the service is plain HTTP on 127.0.0.1 and clients need
	// ClientOptions.AllowLoopbackHTTP (NewClient sets it).
	TLS bool
}

// Server is a running profile service.
type Server struct {
	// URL is the base URL, e.g. "http://127.0.0.1:41234".
	URL string
	// Origin is the service origin, the discovery document's service.
	Origin identity.Origin

	hs       *httptest.Server
	svc      *service
	loopback bool
}

// NewServer starts a service. Call Close when done.
func NewServer(opts *Options) *Server {
	svc := newService(opts, nil)
	hs := httptest.NewUnstartedServer(svc.routes())
	if svc.opts.TLS {
		hs.StartTLS()
	} else {
		hs.Start()
	}
	origin, err := identity.ParseOrigin(hs.URL, &identity.OriginOptions{AllowLoopbackHTTP: !svc.opts.TLS})
	if err != nil {
		hs.Close()
		panic("profiletest: httptest URL is not an origin: " + err.Error())
	}
	svc.origin = origin
	return &Server{URL: hs.URL, Origin: origin, hs: hs, svc: svc, loopback: !svc.opts.TLS}
}

// newService builds the handler state without a listener, so internal
// tests can drive its handler directly (inside a synctest bubble) and
// wrap the Verifier's history lookups.
func newService(opts *Options, wrap func(envelope.History) envelope.History) *service {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxBodySize <= 0 {
		o.MaxBodySize = envelope.MaxSize
	}
	if o.MaxEventsLimit <= 0 {
		o.MaxEventsLimit = 100
	}
	o.PathPrefix = strings.TrimRight(o.PathPrefix, "/")
	svc := &service{opts: o, agents: map[identity.AgentID]*agent{}, accepted: map[envelope.Hash]bool{}}
	var history envelope.History = svc
	if wrap != nil {
		history = wrap(history)
	}
	svc.verifier = envelope.NewVerifier(&envelope.VerifierOptions{Window: o.Window, History: history, Now: o.Now})
	return svc
}

// Close shuts the server down.
func (s *Server) Close() { s.hs.Close() }

// Client returns an *http.Client that reaches the server (and trusts its
// certificate when it serves TLS).
func (s *Server) Client() *http.Client { return s.hs.Client() }

// NewClient returns a profile.Client for this server: opts (nil means
// defaults) with HTTPClient set to Client() unless given, and loopback HTTP
// allowed for a plain-HTTP server.
func (s *Server) NewClient(opts *profile.ClientOptions) *profile.Client {
	var o profile.ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.HTTPClient == nil {
		o.HTTPClient = s.Client()
	}
	o.AllowLoopbackHTTP = o.AllowLoopbackHTTP || s.loopback
	c, err := profile.NewClient(s.URL, &o)
	if err != nil {
		panic("profiletest: " + err.Error()) // unreachable: URL is a valid origin
	}
	return c
}

// Import stores an accepted update without the live-write checks (time
// window, nonce cache), as a service importing history from elsewhere
// would (Identity §6.1 allows other policies for imports). The envelope
// must verify and follow the payload rules (profile.NoLimits). The update
// with the greatest nonce stays current; importing an envelope already
// stored is a no-op; two different updates with one nonce are refused.
func (s *Server) Import(env *envelope.Envelope) error {
	if _, err := profile.VerifyUpdate(env, profile.NoLimits()); err != nil {
		return err
	}
	s.svc.mu.Lock()
	defer s.svc.mu.Unlock()
	return s.svc.store(env)
}

// Requests returns how many requests the server has received, for tests
// that assert that a client sent nothing (or retried).
func (s *Server) Requests() int64 { return s.svc.requests.Load() }

// service is the handler state.
type service struct {
	opts     Options
	origin   identity.Origin
	verifier *envelope.Verifier
	requests atomic.Int64

	mu       sync.RWMutex
	agents   map[identity.AgentID]*agent
	accepted map[envelope.Hash]bool
}

// agent is one Agent ID's durable state.
type agent struct {
	updates []*envelope.Envelope // newest first by nonce
	current []byte               // JSON of the materialized updates[0]
}

func (a *agent) latestNonce() int64 { return a.updates[0].Event().Nonce }

// Accepted implements envelope.History over the store.
func (s *service) Accepted(_ context.Context, h envelope.Hash) (bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.accepted[h], nil
}

// store inserts a verified update; the caller holds s.mu.
func (s *service) store(env *envelope.Envelope) error {
	if s.accepted[env.Hash()] {
		return nil
	}
	id, nonce := env.Actor(), env.Event().Nonce
	a := s.agents[id]
	if a == nil {
		a = &agent{}
		s.agents[id] = a
	}
	i, found := slices.BinarySearchFunc(a.updates, nonce, func(e *envelope.Envelope, n int64) int {
		return -cmpInt(e.Event().Nonce, n) // descending
	})
	if found {
		return identity.Errorf(identity.CodeNonceNotGreater, "another update of this agent has nonce %d", nonce)
	}
	a.updates = slices.Insert(a.updates, i, env)
	if i == 0 {
		doc, err := profile.Materialize(env)
		if err != nil {
			return err
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		a.current = b
	}
	s.accepted[env.Hash()] = true
	return nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *service) routes() http.Handler {
	mux := http.NewServeMux()
	p := s.opts.PathPrefix + profile.DefaultProfilesPath
	mux.HandleFunc(profile.DiscoveryPath, s.only(http.MethodGet, s.discovery))
	mux.HandleFunc(p, s.only(http.MethodPost, s.update))
	mux.HandleFunc(p+"/{agent_id}", s.only(http.MethodGet, s.get))
	notFound := func(w http.ResponseWriter, r *http.Request) {
		identity.WriteError(w, identity.NewError(identity.CodeNotFound, "no such endpoint"))
	}
	if s.opts.DisableBatch {
		mux.HandleFunc(s.opts.PathPrefix+profile.DefaultBatchPath, notFound)
	} else {
		mux.HandleFunc(s.opts.PathPrefix+profile.DefaultBatchPath, s.only(http.MethodPost, s.batch))
	}
	if !s.opts.DisableHistory {
		mux.HandleFunc(p+"/{agent_id}/events", s.only(http.MethodGet, s.events))
	}
	mux.HandleFunc("/", notFound)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		mux.ServeHTTP(w, r)
	})
}

// only restricts a handler to one method, answering others with a JSON
// error (ServeMux's own 405 has a text body).
func (s *service) only(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			identity.WriteError(w, &identity.Error{Code: identity.CodeInvalidRequest,
				Message: "method " + r.Method + " not allowed", Status: http.StatusMethodNotAllowed})
			return
		}
		h(w, r)
	}
}

func (s *service) discovery(w http.ResponseWriter, r *http.Request) {
	if s.opts.NoDiscovery {
		identity.WriteError(w, identity.NewError(identity.CodeNotFound, "no discovery document"))
		return
	}
	base := s.origin.String() + s.opts.PathPrefix
	d := identity.Discovery{
		Protocol:  profile.Protocol,
		Service:   s.origin,
		Endpoints: map[string]string{profile.EndpointProfiles: base + profile.DefaultProfilesPath},
		Features:  []string{},
	}
	if !s.opts.DisableBatch {
		d.Endpoints[profile.EndpointProfileBatch] = base + profile.DefaultBatchPath
		d.Features = append(d.Features, profile.FeatureBatchRead)
	}
	if !s.opts.DisableHistory {
		d.Features = append(d.Features, profile.FeatureEventHistory)
	}
	writeJSON(w, &d)
}

// update is POST /v1/profiles: the live-write order of Identity §6.1 with
// the profile rules as step 9 and the durable nonce rule of §6.
func (s *service) update(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		identity.WriteError(w, err)
		return
	}
	env, err := envelope.Parse(body) // strict JSON, closed event object
	if err == nil {
		err = profile.CheckUpdateShape(env) // cheap shape checks before the signature
	}
	if err != nil {
		identity.WriteError(w, err)
		return
	}
	// The callback captures the document it stored, so a later update
	// landing before we answer cannot change what this write returns.
	var doc []byte
	out, err := s.verifier.AcceptEnvelope(r.Context(), env, func(ctx context.Context, env *envelope.Envelope) error {
		var err error
		doc, err = s.accept(ctx, env)
		return err
	})
	if err != nil {
		identity.WriteError(w, err)
		return
	}
	s.mu.RLock()
	a := s.agents[env.Actor()]
	if out == envelope.Resubmission {
		doc = a.current // an exact resubmission is a lookup of the current document
	}
	latest := a.latestNonce()
	s.mu.RUnlock()
	w.Header().Set(identity.MaxSeenNonceHeader, strconv.FormatInt(latest, 10))
	writeRaw(w, doc)
}

// accept runs under the Verifier's per-actor lock after the Identity
// checks passed: payload rules, then the durable latest-nonce comparison.
func (s *service) accept(_ context.Context, env *envelope.Envelope) ([]byte, error) {
	if _, err := profile.VerifyUpdate(env, s.opts.Limits); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.agents[env.Actor()]; a != nil && env.Event().Nonce <= a.latestNonce() {
		return nil, &identity.Error{
			Code:         identity.CodeNonceNotGreater,
			Message:      "nonce is not greater than the nonce of the latest accepted profile.update",
			MaxSeenNonce: a.latestNonce(),
		}
	}
	if err := s.store(env); err != nil {
		return nil, err
	}
	return s.agents[env.Actor()].current, nil
}

func (s *service) get(w http.ResponseWriter, r *http.Request) {
	a, ok := s.lookup(w, r)
	if !ok {
		return
	}
	s.mu.RLock()
	doc := a.current
	s.mu.RUnlock()
	writeRaw(w, doc)
}

// lookup resolves the {agent_id} path value, writing the error itself.
func (s *service) lookup(w http.ResponseWriter, r *http.Request) (*agent, bool) {
	id, err := identity.ParseAgentID(r.PathValue("agent_id"))
	if err != nil {
		identity.WriteError(w, identity.Wrap(identity.CodeInvalidRequest, "agent_id", err))
		return nil, false
	}
	s.mu.RLock()
	a := s.agents[id]
	s.mu.RUnlock()
	if a == nil {
		identity.WriteError(w, identity.NewError(identity.CodeNotFound, "no profile for "+id.String()))
		return nil, false
	}
	return a, true
}

func (s *service) batch(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		identity.WriteError(w, err)
		return
	}
	var req struct {
		IDs jsontext.Value `json:"ids"`
	}
	if err := strictjson.Unmarshal(body, &req); err != nil {
		identity.WriteError(w, badRequest("batch body is not a strict {\"ids\":[…]} object", err))
		return
	}
	var ids []string
	if req.IDs.Kind() != '[' || json.Unmarshal(req.IDs, &ids) != nil {
		identity.WriteError(w, badRequest("ids is not an array of strings", nil))
		return
	}
	if len(ids) > profile.MaxBatchIDs {
		identity.WriteError(w, identity.Errorf(identity.CodeInvalidRequest, "%d ids exceed the batch limit of %d", len(ids), profile.MaxBatchIDs))
		return
	}
	var list identity.List[jsontext.Value]
	list.Result = []jsontext.Value{}
	s.mu.RLock()
	for i, raw := range ids {
		id, err := identity.ParseAgentID(raw)
		if err != nil {
			s.mu.RUnlock()
			identity.WriteError(w, badRequest("ids/"+strconv.Itoa(i), err))
			return
		}
		if a := s.agents[id]; a != nil { // unknown ids are left out
			list.Result = append(list.Result, a.current)
		}
	}
	s.mu.RUnlock()
	writeJSON(w, list)
}

// events is GET …/{agent_id}/events?limit&cursor, newest first by nonce.
// A cursor names the nonce below which the next page starts, so pages stay
// stable while new updates arrive.
func (s *service) events(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		identity.WriteError(w, badRequest("malformed query", err))
		return
	}
	limit := 1
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if len(v) != 1 || err != nil || n < 1 || v[0] != strconv.Itoa(n) {
			identity.WriteError(w, badRequest("limit is not a positive integer", nil))
			return
		}
		limit = min(n, s.opts.MaxEventsLimit)
	}
	below := int64(identity.MaxNonce) + 1
	if v, ok := q["cursor"]; ok {
		n, ok := decodeCursor(v[0])
		if len(v) != 1 || !ok {
			identity.WriteError(w, badRequest("malformed cursor", nil))
			return
		}
		below = n
	}
	a, ok := s.lookup(w, r)
	if !ok {
		return
	}
	var list identity.List[*envelope.Envelope]
	s.mu.RLock()
	for _, e := range a.updates {
		if e.Event().Nonce >= below {
			continue
		}
		if len(list.Result) == limit {
			list.NextCursor = encodeCursor(list.Result[limit-1].Event().Nonce)
			break
		}
		list.Result = append(list.Result, e)
	}
	s.mu.RUnlock()
	writeJSON(w, list)
}

const cursorPrefix = "before:"

func encodeCursor(nonce int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(nonce, 10)))
}

func decodeCursor(c string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	digits, ok := strings.CutPrefix(string(b), cursorPrefix)
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, ok && err == nil && n > 0 && digits == strconv.FormatInt(n, 10)
}

// readBody reads a request body of at most MaxBodySize bytes.
func (s *service) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodySize))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, identity.Errorf(identity.CodePayloadTooLarge, "request body exceeds %d bytes", s.opts.MaxBodySize)
	case err != nil:
		return nil, badRequest("reading the request body", err)
	}
	return b, nil
}

func badRequest(msg string, cause error) *identity.Error {
	if cause != nil {
		return identity.Wrap(identity.CodeInvalidRequest, msg, cause)
	}
	return identity.NewError(identity.CodeInvalidRequest, msg)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		identity.WriteError(w, err) // a generic 500; unreachable for our values
		return
	}
	writeRaw(w, b)
}

func writeRaw(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

package envelope

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/agentprotocols/go-sdk/identity"
)

// DefaultWindow is the recommended live-write window (Identity §6.1).
const DefaultWindow = 300 * time.Second

// History is the service's durable accepted history, consulted for the
// exact-resubmission rule (Identity §6.3).
type History interface {
	// Accepted reports whether an envelope with this hash is in accepted
	// history. After pruning it may report false; the envelope is then
	// judged as a fresh write (and usually rejected as stale).
	Accepted(ctx context.Context, hash Hash) (bool, error)
}

// VerifierOptions configures a Verifier. A nil *VerifierOptions means
// defaults.
type VerifierOptions struct {
	// Window is the accepted |now − created_at| distance; 0 means
	// DefaultWindow.
	Window time.Duration
	// CacheValidity is how long the greatest accepted nonce of an actor is
	// remembered after its latest acceptance. Values below 2 × Window (the
	// Identity minimum) are raised to it.
	CacheValidity time.Duration
	// History answers exact-resubmission lookups; nil means no accepted
	// history (every envelope is judged fresh).
	History History
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Protocols declares the event fields of protocols outside the
	// built-in table, as for [VerifyWith]; nil means the table alone.
	Protocols []Protocol
}

// Outcome says how a Verifier judged an envelope that passed.
type Outcome int

const (
	// Fresh: a new write; the accept callback ran and succeeded.
	Fresh Outcome = iota + 1
	// Resubmission: the exact envelope is already accepted. Nothing was
	// changed and the callback did not run; answer with the original
	// acceptance result.
	Resubmission
)

// Verifier runs the live-write verification order of Identity §6.1 for a
// service: shape → hash → signature → exact-resubmission lookup → time
// window → nonce above the cached per-actor maximum → protocol acceptance.
//
// Accept holds a per-actor lock from the nonce check through the protocol
// callback, so two envelopes of one actor can never both pass with the same
// nonce. It is safe for concurrent use.
type Verifier struct {
	window   time.Duration
	validity time.Duration
	history  History
	now      func() time.Time
	protos   []Protocol

	mu        sync.Mutex
	actors    map[identity.AgentID]*actorState
	lastSweep time.Time
}

type actorState struct {
	mu       sync.Mutex // serializes nonce check and acceptance for the actor
	maxNonce int64
	expires  time.Time // cache validity of maxNonce
	users    int       // goroutines holding a reference (guarded by Verifier.mu)
}

// NewVerifier returns a Verifier with the given options.
func NewVerifier(opts *VerifierOptions) *Verifier {
	v := &Verifier{window: DefaultWindow, now: time.Now, actors: map[identity.AgentID]*actorState{}}
	if opts != nil {
		if opts.Window > 0 {
			v.window = opts.Window
		}
		v.validity = opts.CacheValidity
		v.history = opts.History
		if opts.Now != nil {
			v.now = opts.Now
		}
		v.protos = cloneProtocols(opts.Protocols)
	}
	v.validity = max(v.validity, 2*v.window)
	return v
}

// Accept verifies the envelope in b and, when it is a fresh write that
// passes every Identity check, calls accept under the actor's lock.
// accept performs the protocol's own validation and durable acceptance; if
// it returns nil the actor's nonce maximum advances, otherwise nothing
// changes and its error is returned. accept may be nil.
//
// Rejections are *[identity.Error] values with the Identity codes; a
// nonce_not_greater error carries [identity.Error.MaxSeenNonce].
func (v *Verifier) Accept(ctx context.Context, b []byte, accept func(context.Context, *Envelope) error) (*Envelope, Outcome, error) {
	env, err := verify(b, v.protos)
	if err != nil {
		return nil, 0, err
	}
	out, err := v.AcceptEnvelope(ctx, env, accept)
	return env, out, err
}

// AcceptEnvelope is Accept for an envelope that was already parsed; it
// re-checks the hash and signature (steps 3–5), which cost one Ed25519
// verification, so callers cannot skip them by accident.
func (v *Verifier) AcceptEnvelope(ctx context.Context, env *Envelope, accept func(context.Context, *Envelope) error) (Outcome, error) {
	return v.AcceptEnvelopeWith(ctx, env, nil, accept)
}

// AcceptEnvelopeWith is AcceptEnvelope with this call's exact-resubmission
// lookup: history, when not nil, answers it in place of
// [VerifierOptions.History]. A service whose lookup reads more than the
// history in the same round trip (state its accept callback then uses)
// passes that lookup per call; it runs under the actor's lock, before the
// window and nonce checks.
func (v *Verifier) AcceptEnvelopeWith(ctx context.Context, env *Envelope, history History, accept func(context.Context, *Envelope) error) (Outcome, error) {
	if history == nil {
		history = v.history
	}
	if err := env.Verify(); err != nil {
		return 0, err
	}
	ev := &env.event
	now := v.now()
	// The resubmission lookup, the window and the nonce check all run under
	// the actor's lock: a copy racing its own first acceptance must find
	// it in history, not fail the nonce check.
	st := v.acquire(ev.Actor, now)
	defer v.release(ev.Actor, st)
	st.mu.Lock()
	defer st.mu.Unlock()
	if history != nil {
		seen, err := history.Accepted(ctx, env.Hash())
		if err != nil {
			return 0, err
		}
		if seen {
			return Resubmission, nil
		}
	}
	if d := now.UnixMilli() - ev.CreatedAt; d > v.window.Milliseconds() || -d > v.window.Milliseconds() {
		return 0, identity.Errorf(identity.CodeTimestampOutOfWindow,
			"created_at %d is %d ms from the service clock (window %d ms)", ev.CreatedAt, d, v.window.Milliseconds())
	}
	if now.Before(st.expires) && ev.Nonce <= st.maxNonce {
		return 0, &identity.Error{
			Code:         identity.CodeNonceNotGreater,
			Message:      "nonce is not greater than the greatest accepted nonce",
			MaxSeenNonce: st.maxNonce,
		}
	}
	if accept != nil {
		if err := accept(ctx, env); err != nil {
			return 0, err
		}
	}
	if !now.Before(st.expires) || ev.Nonce > st.maxNonce {
		st.maxNonce = ev.Nonce
	}
	st.expires = now.Add(v.validity)
	return Fresh, nil
}

// MaxSeenNonce returns the cached greatest accepted nonce of actor, or 0 if
// none is cached. Services send it as the Max-Seen-Nonce header.
func (v *Verifier) MaxSeenNonce(actor identity.AgentID) int64 {
	now := v.now()
	st := v.acquire(actor, now)
	defer v.release(actor, st)
	st.mu.Lock()
	defer st.mu.Unlock()
	if now.Before(st.expires) {
		return st.maxNonce
	}
	return 0
}

func (v *Verifier) acquire(actor identity.AgentID, now time.Time) *actorState {
	v.mu.Lock()
	defer v.mu.Unlock()
	// Sweep expired entries at most once per validity period, keeping memory
	// proportional to the actors active within it.
	if now.Sub(v.lastSweep) > v.validity {
		for id, st := range v.actors {
			if st.users == 0 && !now.Before(st.expires) {
				delete(v.actors, id)
			}
		}
		v.lastSweep = now
	}
	st := v.actors[actor]
	if st == nil {
		st = &actorState{}
		v.actors[actor] = st
	}
	st.users++
	return st
}

func (v *Verifier) release(_ identity.AgentID, st *actorState) {
	v.mu.Lock()
	st.users--
	v.mu.Unlock()
}

// cloneProtocols copies ps deeply, so a caller changing its slices later
// cannot change what a long-lived Verifier accepts.
func cloneProtocols(ps []Protocol) []Protocol {
	if ps == nil {
		return nil
	}
	out := make([]Protocol, len(ps))
	for i, p := range ps {
		out[i] = Protocol{Name: p.Name, Fields: slices.Clone(p.Fields)}
	}
	return out
}

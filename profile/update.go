package profile

import (
	"context"
	"errors"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// NewUpdate signs a profile.update carrying p through a: the Author
// supplies actor, created_at and the next nonce of its NonceSource.
//
// p.ID is set to the signer's Agent ID when it is zero; a different Agent
// ID is refused, because §6 has no delegated profile management. The
// payload is validated under lim (nil = recommended limits) before
// anything is signed, so an update a service would reject for its payload
// never consumes a nonce.
func NewUpdate(ctx context.Context, a *envelope.Author, p Payload, lim *Limits) (*envelope.Envelope, error) {
	raw, err := preparePayload(a, &p, lim)
	if err != nil {
		return nil, err
	}
	return a.Sign(ctx, Protocol, TypeUpdate, raw, nil)
}

// preparePayload fills the id, validates and marshals the payload.
func preparePayload(a *envelope.Author, p *Payload, lim *Limits) ([]byte, error) {
	if a == nil || a.Signer == nil || a.Nonces == nil {
		return nil, errors.New("profile: author needs a Signer and a NonceSource")
	}
	id := a.AgentID()
	switch {
	case p.ID.IsZero():
		p.ID = id
	case p.ID != id:
		fe := &FieldError{"/id", "is not the signer's Agent ID " + id.String()}
		return nil, fe.toError(identity.CodeInvalidEvent, "profile payload")
	}
	if err := p.Validate(id, lim); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(p)
	if err != nil { // unreachable after Validate; kept as a guard
		return nil, identity.Wrap(identity.CodeInvalidEvent, "profile payload", err)
	}
	return raw, nil
}

// VerifyUpdate checks that env is a valid profile.update: hash and strict
// signature (envelope Verify), protocol agent-profile/1.0, type
// profile.update, no top-level fields beyond the six Identity fields, and a
// payload that passes ParsePayload for the event actor under lim (nil =
// recommended limits; use NoLimits for updates another service accepted).
//
// It does not check the time window or nonces; services run it inside an
// envelope.Verifier. It returns the decoded payload.
func VerifyUpdate(env *envelope.Envelope, lim *Limits) (*Payload, error) {
	if err := CheckUpdateShape(env); err != nil {
		return nil, err
	}
	if err := env.Verify(); err != nil {
		return nil, err
	}
	ev := env.Event()
	return ParsePayload(ev.Payload, ev.Actor, lim)
}

// CheckUpdateShape checks the cheap event-level rules of §6 — protocol,
// type, closed event object — without touching the signature or the
// payload. Services may run it before signature verification.
func CheckUpdateShape(env *envelope.Envelope) error {
	ev := env.Event()
	switch {
	case ev.Protocol != Protocol:
		return identity.Errorf(identity.CodeInvalidEvent, "event protocol %s is not %s", quoteTrunc(ev.Protocol), Protocol)
	case ev.Type != TypeUpdate:
		return identity.Errorf(identity.CodeInvalidEvent, "event type %s is not %s", quoteTrunc(ev.Type), TypeUpdate)
	case len(ev.Ext) > 0:
		return identity.Errorf(identity.CodeInvalidEvent, "event field %s is not defined by %s", quoteTrunc(ev.Ext[0].Name), Protocol)
	}
	return nil
}

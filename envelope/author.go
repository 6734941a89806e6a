package envelope

import (
	"context"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/identity"
)

// Author signs events as one agent: a Signer, the agent's NonceSource and
// a clock. It fills actor, created_at and nonce, so callers never choose a
// nonce by hand. Protocol builders (profile, adp) sign through an Author.
// It is safe for concurrent use when its Signer is.
type Author struct {
	Signer identity.Signer
	// Nonces issues the agent's nonces; one source per Agent ID, shared by
	// every protocol the agent writes to.
	Nonces *identity.NonceSource
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NewAuthor returns an Author for s with an in-memory nonce source and the
// system clock. Long-lived agents should give the Author a NonceSource with
// a durable store instead.
func NewAuthor(s identity.Signer) *Author {
	return &Author{Signer: s, Nonces: identity.NewNonceSource(nil)}
}

// AgentID returns the signer's Agent ID.
func (a *Author) AgentID() identity.AgentID { return a.Signer.AgentID() }

// Sign builds the event {protocol, type, payload, ext…} with the author's
// actor, the current time as created_at and the next nonce, then signs it.
func (a *Author) Sign(ctx context.Context, protocol, typ string, payload jsontext.Value, ext Fields) (*Envelope, error) {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	t := now()
	nonce, err := a.Nonces.Next(ctx, t)
	if err != nil {
		return nil, err
	}
	return Sign(ctx, a.Signer, Event{
		Protocol:  protocol,
		Type:      typ,
		Actor:     a.Signer.AgentID(),
		CreatedAt: t.UnixMilli(),
		Nonce:     nonce,
		Payload:   payload,
		Ext:       ext,
	})
}

package identity

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
)

// Signer produces Ed25519 signatures for one Agent ID. The message is the
// raw 32-byte event hash for signed events, or the ASCII signing input for a
// request JWT. Implementations may keep the key elsewhere (a keystore, an
// agent runtime, a remote signer); ctx bounds such a call.
//
// Signers must be safe for concurrent use.
type Signer interface {
	AgentID() AgentID
	Sign(ctx context.Context, message []byte) ([]byte, error)
}

// SeedSize is the length of an Ed25519 private key seed.
const SeedSize = ed25519.SeedSize

// PrivateKey is an in-memory Ed25519 key. It implements Signer and is safe
// for concurrent use.
type PrivateKey struct {
	priv ed25519.PrivateKey
	id   AgentID
}

// GenerateKey creates a key from rand, or from crypto/rand when rand is nil.
func GenerateKey(r io.Reader) (*PrivateKey, error) {
	if r == nil {
		r = rand.Reader
	}
	seed := make([]byte, SeedSize)
	if _, err := io.ReadFull(r, seed); err != nil {
		return nil, err
	}
	return NewKeyFromSeed(seed)
}

// NewKeyFromSeed derives the key for a 32-byte RFC 8032 seed.
func NewKeyFromSeed(seed []byte) (*PrivateKey, error) {
	if len(seed) != SeedSize {
		return nil, errors.New("identity: seed must be 32 bytes")
	}
	priv := ed25519.NewKeyFromSeed(seed)
	k := &PrivateKey{priv: priv}
	copy(k.id.key[:], priv[32:])
	return k, nil
}

// AgentID returns the key's Agent ID.
func (k *PrivateKey) AgentID() AgentID { return k.id }

// Seed returns a copy of the 32-byte seed, for export to a key store.
func (k *PrivateKey) Seed() []byte { return k.priv.Seed() }

// Sign signs message with pure Ed25519. It never fails and ignores ctx.
func (k *PrivateKey) Sign(_ context.Context, message []byte) ([]byte, error) {
	return ed25519.Sign(k.priv, message), nil
}

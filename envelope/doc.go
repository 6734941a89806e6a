// Package envelope implements the signed event envelope of Agent Identity
// 1.0: strict parsing, RFC 8785 canonicalization, SHA3-256 event hashes,
// Ed25519 signatures, and the live-write verification order a service
// runs before accepting a write.
//
// # Envelopes
//
// An Envelope is {hash, event, signature}. The event is a closed object:
// protocol, type, actor, created_at, nonce, payload, plus only the
// top-level fields its protocol declares with RegisterProtocol (ADP
// declares room_id, base_seq, base_hash and mentions; profile declares
// none). The hash is SHA3-256 of the event's canonical JSON and the
// signature covers those 32 raw bytes.
//
// # Strict parsing
//
// Parse rejects duplicate member names at any depth, invalid UTF-8 and
// unpaired surrogates, numbers outside ±(2^53−1), trailing data and
// unknown members, in one pass that also canonicalizes and hashes the
// event. Payload bytes are kept as received and never normalized by a
// decode/encode round trip; AppendJSON writes the canonical form, so
// re-marshalling is stable. encoding/json is never used on signed bytes.
//
// # Signing
//
// Sign signs a complete Event; Author fills actor, created_at and a nonce
// from an identity.NonceSource first, which is how protocol builders sign.
// Sign refuses what Parse would refuse, and re-verifies what a remote
// Signer returned.
//
// # Verifying
//
// Verify (the function) is the stateless check: parse, hash, signature.
// A service accepting live writes uses a Verifier, which adds the
// exact-resubmission lookup, the time window and the per-actor nonce
// cache, and runs the protocol's own acceptance under the actor's lock.
// Every rejection is an *identity.Error with its Identity code:
//
//	env, outcome, err := verifier.Accept(ctx, body, store.Accept)
//	if errors.Is(err, identity.ErrNonceNotGreater) { … }
package envelope

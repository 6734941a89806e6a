// Package envelope implements the signed event envelope of Agent Identity
// 1.0: strict parsing, RFC 8785 canonicalization, SHA3-256 event hashes,
// Ed25519 signatures, and the live-write verification order a service
// runs before accepting a write.
//
// # Envelopes
//
// An [Envelope] is {hash, event, signature}. The event is a closed object:
// protocol, type, actor, created_at, nonce, payload, plus only the
// top-level fields its [Protocol] defines. The protocols this module
// implements are a fixed table here: [DiscourseProtocol] adds room_id,
// base_seq, base_hash and mentions, [ProfileProtocol] adds none. [Parse],
// [Verify] and [Sign] use that table alone, so no result depends on which
// packages are linked; an event of another protocol carries only the six
// common fields unless the caller passes its Protocol ([ParseWith],
// [VerifyWith], [SignWith], [VerifierOptions].Protocols). The hash is
// SHA3-256 of the event's canonical JSON and the signature covers those 32
// raw bytes.
//
// # Strict parsing
//
// [Parse] rejects duplicate member names at any depth, invalid UTF-8 and
// unpaired surrogates, numbers outside ±(2^53−1), trailing data and
// unknown members, in one pass that also canonicalizes and hashes the
// event. Payload bytes are kept as received and never normalized by a
// decode/encode round trip; [Envelope.AppendJSON] writes the canonical form, so
// re-marshalling is stable. encoding/json is never used on signed bytes.
//
// # Signing
//
// [Sign] signs a complete [Event]; [Author] fills actor, created_at and a
// nonce from an [identity.NonceSource] first, which is how protocol builders
// sign. Sign refuses what Parse would refuse, refuses events nested deeper
// than [MaxSignDepth] (256 levels, the reference TypeScript parser's limit;
// the event object is level 1), and re-verifies what a remote Signer
// returned. Parsing keeps a higher depth bound, so deeper events signed
// elsewhere still verify.
//
// # Verifying
//
// [Verify] (the function) is the stateless check: parse, hash, signature. A
// service accepting live writes uses a [Verifier], which adds the
// exact-resubmission lookup, the time window and the per-actor nonce cache,
// and runs the protocol's own acceptance under the actor's lock. Every
// rejection is an *[identity.Error] with its Identity code
// ([Verifier.Accept]):
//
//	env, outcome, err := verifier.Accept(ctx, body, store.Accept)
//	if errors.Is(err, identity.ErrNonceNotGreater) { … }
package envelope

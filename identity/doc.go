// Package identity implements Agent Identity 1.0: the identifiers, keys,
// signatures, nonces, request tokens and HTTP conventions every Agent
// protocol (Profile, Discourse, …) builds on. Signed event envelopes live in
// package envelope.
//
// The package is strict by design. Two implementations that accept
// different inputs disagree about what was signed or who is speaking, so
// every parser here accepts exactly one spelling of each value and rejects
// the rest instead of normalizing it.
//
// # Agent IDs
//
// An Agent ID is "did:agent:" followed by the unpadded base64url encoding
// of a raw 32-byte Ed25519 public key. [ParseAgentID] accepts only the
// canonical encoding (no padding, no non-zero trailing bits, the URL
// alphabet), so an [AgentID] has exactly one text form and can be compared
// with ==. An [AgentURL] adds an optional protocol resource and route hints
// to an Agent ID; actor fields never carry one.
//
// # Keys and signers
//
// Signing goes through the [Signer] interface, so a key may live in memory
// ([PrivateKey], from [NewKeyFromSeed] or [GenerateKey]), in a key store or
// behind a remote agent runtime. Services never need an agent's private key.
//
// # Strict verification
//
// [VerifySignature] is RFC 8032 Ed25519 plus the rules that make
// verification agree across implementations: canonical encodings of the
// public key and R, neither of small order, S reduced, and the cofactorless
// equation. crypto/ed25519 alone accepts small-order and non-canonical keys;
// never call it directly on protocol data. Each failure wraps one sentinel
// (ErrSmallOrderA, ErrNonCanonicalS, …) naming the rule.
//
// # Nonces
//
// Each Agent ID has one nonce sequence across all protocols and services.
// [NonceSource] issues nonces with the clock-derived rule
// max(last + 1, now in ms), persisting each through a [NonceStore] before
// handing it out so a restart never reuses one. It applies a service's
// Max-Seen-Nonce header only within two bounds ([AdvanceNonce]): one header
// moves the sequence at most 2^32 beyond max(next, now in ms) (Identity
// §6.2, [ErrNonceJump]), and no run of headers moves it more than 2^32 ms
// ahead of the clock ([ErrNonceAhead]). Without the second bound, 2^21
// hostile answers would exhaust the 2^53 sequence; with it, a hostile
// service can hold the sequence at most about 50 days ahead of the clock,
// and a refused header is an error the caller sees.
//
// # Request tokens
//
// Reads and other operations that are not signed events authenticate with
// a short-lived request token: a compact JWS with header
// {"alg":"EdDSA","typ":"JWT","kid":<Agent ID>} and claims iss = sub = the
// Agent ID, aud = the service [Origin], iat and exp. [MintRequestToken]
// writes one through a Signer; [TokenTransport] mints a fresh one per HTTP
// request. [VerifyRequestToken] is a self-contained strict verifier rather
// than a general JWT library: it refuses malleable base64, duplicate or
// case-variant JSON members, any header other than the exact three
// members, audiences that are not the exact origin string, and lifetimes
// over 300 s. Origins ([ParseOrigin], [OriginOf]) are validated by the
// same "serialize reproduces the input" rule.
//
// # HTTP conventions
//
// Services answer failures with a non-2xx status and
// {"error":{"code","message","data"?}}; [WriteError] writes that body from
// an [*Error] (and never leaks any other error), [ReadError] turns a
// response back into one. Lists are [List], discovery documents are
// [Discovery].
//
// # Errors
//
// Every protocol failure is an [*Error] carrying a protocol [Code], and
// errors.Is matches by code: a local rejection and one a service sent over
// HTTP are tested the same way,
//
//	if errors.Is(err, identity.ErrNonceNotGreater) { … }
//
// The finer reason (ErrTokenExpired, ErrOriginPort, ErrSmallOrderR, …) is
// in the error chain as well.
package identity

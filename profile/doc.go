// Package profile implements Agent Profile 1.0: signed, portable display
// and discovery metadata for one Agent ID, published as profile.update
// events and served by profile services. A profile describes an agent; it
// is not its identity and proves nothing about whom it represents.
//
// # Payloads and validation
//
// [Payload] is the whole profile. Presence is part of what was signed, so
// optional strings are pointers and optional arrays and objects are nil
// when absent and non-nil (possibly empty) when present; a parsed payload
// marshals back to the same JSON. [ParsePayload] decodes signed bytes
// strictly (closed shape, no nulls, strict I-JSON) and [Payload.Validate]
// applies every field rule: id = actor, non-empty name, HTTPS avatar,
// endpoint and principal URLs, http(s) link URLs, uniqueness of
// capabilities, endpoints, links, protocols and scopes, the delegation-ID
// grammar, an open rel vocabulary, and service [Limits] (nil = the
// recommended ones). A violation is an *identity.Error with code
// invalid_event whose message and data name the field as a JSON Pointer
// relative to the payload; [FieldPointer] extracts it from a local error or
// from an error body a service sent.
//
// # Signing
//
// [NewUpdate] signs a profile.update through an *envelope.Author, which
// supplies actor, created_at and the next nonce. It fills the payload id
// from the signer, refuses any other id (1.0 has no delegated management)
// and validates before signing, so a rejected payload never consumes a
// nonce. [VerifyUpdate] is the receiving side: signature, protocol, type,
// closed event and payload rules.
//
// # Materialization
//
// A profile's current document is the accepted update with the greatest
// nonce — not the latest created_at ([Latest]). [Materialize] turns that
// update into a [Document]: the payload members as signed plus updated_at
// (its created_at) and event_id (its hash). Every update replaces the
// whole profile; nothing is merged.
//
// # Client
//
// [Client] talks to one profile service: discovery, get, batch, update,
// publish and event history. A profile it returns as trusted ([Verified])
// is the materialization of the service's latest signed update, which must
// verify and belong to the requested agent. The document the service
// served is only compared with it: a difference (some services add [] and
// {} for absent members) is reported as a [Discrepancy], or is an error
// with ClientOptions.StrictDocuments. Services without event history cannot
// be verified, so Get fails with [ErrUnsupported]; the unverified reads are
// named GetUnverifiedUnsafe and BatchUnverifiedUnsafe. Update recovers once
// from nonce_not_greater by applying the Max-Seen-Nonce header within the
// Identity bound, so several devices sharing a key converge. Reads retry
// transport errors and 429/502/503/504 with backoff and Retry-After;
// writes do not. Redirects are followed only within one origin.
//
// Package profiletest runs an in-memory profile service for tests.
//
// # Trust
//
// A verified profile is still only what its agent says about itself:
// capability tags are self-declared, names can be confusable, and
// delegation hints must be confirmed through the Agent Delegation protocol.
// A service can also serve an old but validly signed profile; compare
// Update.Event().Nonce across sources and prefer the greatest. Avatar and
// link URLs point at third parties; proxy or sanitize them before
// rendering.
//
// # Concurrency
//
// Client is safe for concurrent use and serializes its own Updates per
// Agent ID. Payload, Document, Limits and the other data types are plain
// values without synchronization. Package-level functions are safe to call
// concurrently.
package profile

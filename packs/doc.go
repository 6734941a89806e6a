// Package packs implements the type system of the Agent Discourse Protocol
// 1.0 (draft 2026-07-04, §13): type definitions, the registered type packs
// of Appendix A, external packs, a room's type registry, and JSON Schema
// validation of event payloads, including the kernel schemas of the eleven
// built-in event types.
//
// # Drafts
//
// The package speaks both drafts of ADP 1.0 the SDK does ([Draft]): the
// 2026-07-04 draft, the default, which the section numbers in this
// documentation follow, and the 2026-09-24 draft. Package-level functions
// follow the default draft, exactly as before the second draft existed;
// the methods of the same names on [Draft] and [Options.Draft] select
// one. What differs is one row per draft in a table (kernel.go):
//
//   - the kernel schema and the built-in types (eleven; twelve with
//     room.join.request), and the registered packs document;
//   - reserved type-name prefixes (message. too in the later draft);
//   - pack digest algorithms (sha256; sha256 or sha3-256);
//   - the type schema profile of the later draft (§12.3.1): every $ref a
//     fragment, no $dynamicRef, $dynamicAnchor, $recursiveRef,
//     $recursiveAnchor or $vocabulary, every pattern and patternProperties
//     key an I-Regexp without \p{…}/\P{…} and without "." outside a
//     class, "^" and "$" only as first and last character; a schema it
//     refuses is invalid_type_schema ([ErrInvalidTypeSchema]);
//   - the conflict rules of the later draft (§12.4): a name twice in one
//     declaration list or pack import, a kind change, a subset or
//     override naming a type the pack lacks are type_conflict
//     ([ErrTypeConflict]); the seed lets a later declaration in a
//     room.create redefine an earlier one and says invalid_event for the
//     rest.
//
// # Declarations
//
// A room declares types in room.create.payload.types and in type.define
// events (§13.4). Each [Declaration] is either an inline [Definition] or an
// [Import] of a pack, by registered id ({"use":"adp:deliberation/1.0"}) or by
// HTTPS URI and digest over the document's raw bytes
// ({"pack":…,"digest":"sha256:…"}), optionally restricted to some
// [Import.Types] and adjusted by [Import.Overrides] (roles, instructions,
// status, rate_hint, max_payload_hint — never kind or schema).
// [ParseDeclaration] and [ParseDeclarations] read them strictly: strict JSON,
// closed objects, the kernel schema's typeDef/packImport shapes, and a schema
// that passes the checks below.
//
// # Registry
//
// A [Registry] is a room's type registry. [Registry.Declare] applies the
// declarations of one record atomically at that record's seq, resolving
// packs and materializing their definitions. The registry keeps the
// definitions in force, each with the seq that established it: replay
// checks every record against the registry as it stands when the record
// is reached, so no older definition is ever needed. A redefinition must
// keep the type's kind; a room holds at most [MaxDefinitions] types by
// default. [Registry.Definitions] is the Room resource's types array;
// [Registry.Documents] the external pack documents its archive must carry.
// [Registry.Clone] is cheap, for checking a write without applying it, and
// [Registry.Snapshot] and [Restore] persist a registry as JSON.
//
// # Validation
//
// [Registry.Validate] implements §13.6 steps 2 and 4 for any event type:
// built-in types go to [ValidateBuiltin] (kernel schema, invalid_event),
// others must be defined (type_not_defined), not disabled (type_disabled),
// and their payload must match the schema (payload_schema_violation).
// Role checks, quotas and cross-event rules are the caller's: the
// [Definition] supplies Kind, [Definition.AllowedRoles], Status and the hints.
//
// Payloads are parsed with the SDK's strict JSON policy, and numbers are
// validated as the IEEE 754 doubles that RFC 8785 canonicalization, and
// hence the signature, sees. [DecodeBuiltin] and [ParseTypeDefine] also
// give a built-in payload's typed value, and [ParseDeclaration] a
// declaration's, from the same single parse the kernel schema evaluates.
//
// # Schemas
//
// Type schemas are untrusted (§22). Before compiling one, the package
// requires it to be a JSON object within the host's quotas, written for
// draft 2020-12 ($schema absent or [Draft202012], everywhere in the
// schema), self-contained, and bounded in cost:
//
//   - at most [MaxSchemaBytes] in canonical form, nested at most
//     [MaxSchemaDepth] levels;
//   - every $ref resolves to the schema itself or a resource it embeds with
//     $id, a "#/…" pointer inside the resource the reference appears in;
//     file:, http(s): and relative references are refused before any
//     loader runs, and the loader refuses everything anyway;
//   - no reference cycle that stays at one payload location, and at most
//     [MaxEvaluationsPerLocation] subschema evaluations at any location;
//   - the patterns that can apply to one location compile, with Go's RE2
//     engine, to at most [MaxPatternInsts] instructions. RE2 runs in time
//     linear in the input, and this bounds the factor.
//
// So validation stays linear in payload size, with a bounded factor. The
// quotas are fields of [Options]; the defaults mirror the SDK host's, and
// an offline verifier sets those of the host whose room it replays.
// Formats are annotations, as draft 2020-12 specifies by default.
//
// A pattern RE2 cannot compile because it uses ECMA-262 syntax RE2 lacks
// (look-around, backreferences, …) is [ErrSchemaUnsupported]: the schema
// may be valid, and this implementation cannot evaluate it. That code is
// the SDK's, not the protocol's. Syntax ECMA-262 rejects too, such as an
// unbalanced parenthesis, is invalid_event.
//
// One library evaluates every schema:
// [github.com/santhosh-tekuri/jsonschema/v6], with each pattern compiled once
// by the cost check and handed to it. Compiled schemas live in a
// [SchemaCache] keyed by the SHA3-256 of their canonical JSON and the quotas
// they were admitted under. It is bounded by an estimate of the heap the
// compiled schemas hold, safe for concurrent use, and shared by default, so a
// registered pack used by many rooms compiles once.
//
// # Packs
//
// The five registered packs are embedded byte for byte
// ([RegisteredDocument]) and resolved by their use id. External packs are
// resolved through a [Fetcher]: none by default, so that replaying a room
// never touches the network unless asked; [HTTPSFetcher] for hosts (HTTPS
// only, redirects included, bounded size and time); [StaticFetcher] over
// the documents an archive carries, for offline verification, matching by
// digest. Every document
// is checked against its sha256 digest before use, and every failure to
// obtain, verify or parse one is pack_unavailable.
//
// # Errors
//
// Every rejection is an *[identity.Error], matched by code with [errors.Is]:
// [identity.ErrInvalidEvent] for malformed declarations, schemas and
// built-in payloads, and this package's [ErrTypeNotDefined],
// [ErrTypeDisabled], [ErrPayloadSchemaViolation], [ErrPackUnavailable] and
// the SDK-only [ErrSchemaUnsupported].
// Schema failures carry a *[SchemaError] (instance and keyword location) as
// Err and, as JSON, as Data, ready for an error response body.
//
// # Concurrency
//
// Package-level functions and [SchemaCache] are safe for concurrent use. A
// [Registry] is a plain value: one goroutine may mutate it
// ([Registry.Declare]), or any number may read it ([Registry.Validate],
// [Registry.Lookup], [Registry.Definitions], …) at once, but not both.
//
// # Readings of the specification
//
// Where the 2026-07-04 text is silent, the package chooses as follows.
// Schema size is measured on the canonical form. [MaxDefinitions] counts
// distinct type names, so a redefinition does not use up the budget.
// Declarations in one room.create apply in order, and a later one
// redefines an earlier one under the usual rules. An external pack
// document may hold several packs; an import takes the types of all of
// them, and their names must be unique. Name, kind, size, count and
// reference violations are invalid_event; anything about obtaining or
// verifying a pack, including digests other than sha256, is
// pack_unavailable.
package packs

package packs

import (
	"github.com/agentprotocols/go-sdk/internal/typeschema"
	"github.com/agentprotocols/go-sdk/internal/untrusted"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The ADP error codes (§20) this package produces that Agent Identity does
// not share. Malformed declarations and payloads of built-in types use the
// shared [identity.CodeInvalidEvent].
const (
	CodeTypeNotDefined         identity.Code = "type_not_defined"
	CodeTypeDisabled           identity.Code = "type_disabled"
	CodePayloadSchemaViolation identity.Code = "payload_schema_violation"
	CodePackUnavailable        identity.Code = "pack_unavailable"
	// CodeTypeConflict and CodeInvalidTypeSchema are codes of the
	// 2026-09-24 draft (§19): a declaration that duplicates a type or
	// changes its kind (§12.4), and a type schema outside the type schema
	// profile (§12.3.1). The seed draft reports both as invalid_event.
	CodeTypeConflict      identity.Code = "type_conflict"
	CodeInvalidTypeSchema identity.Code = typeschema.CodeInvalidTypeSchema
)

// CodeSchemaUnsupported is not a protocol code: the SDK reports with it a
// type schema it cannot evaluate although the schema may be valid, such as
// a pattern using ECMA-262 syntax (look-ahead, backreferences) that Go's
// RE2 engine lacks. A host refusing such a declaration should answer
// invalid_event on the wire; an archive verifier reports "this verifier
// cannot evaluate the room", not "the host broke the protocol".
const CodeSchemaUnsupported identity.Code = typeschema.CodeSchemaUnsupported

// Sentinels for errors.Is; a returned error carries the same code with a
// specific message.
var (
	ErrSchemaUnsupported      = identity.NewError(CodeSchemaUnsupported, "type schema uses a feature this implementation cannot evaluate")
	ErrTypeNotDefined         = identity.NewError(CodeTypeNotDefined, "event type is not in the room's type registry")
	ErrTypeDisabled           = identity.NewError(CodeTypeDisabled, "event type is disabled in this room")
	ErrPayloadSchemaViolation = identity.NewError(CodePayloadSchemaViolation, "payload does not satisfy the type's schema")
	ErrPackUnavailable        = identity.NewError(CodePackUnavailable, "type pack cannot be resolved or its digest does not match")
	ErrTypeConflict           = identity.NewError(CodeTypeConflict, "a declaration duplicates a type or changes an existing type's kind")
	ErrInvalidTypeSchema      = identity.NewError(CodeInvalidTypeSchema, "a type schema violates the type schema profile")
)

// schemaErr wraps a schema failure in an *identity.Error with the location
// in both Data and Err.
func schemaErr(code identity.Code, msg string, se *SchemaError) *identity.Error {
	data, err := json.Marshal(se, json.Deterministic(true))
	if err != nil {
		data = nil
	}
	return &identity.Error{Code: code, Message: msg + ": " + se.Error(), Data: jsontext.Value(data), Err: se}
}

func invalidEvent(format string, args ...any) *identity.Error {
	return identity.Errorf(identity.CodeInvalidEvent, format, args...)
}

func packUnavailable(format string, args ...any) *identity.Error {
	return identity.Errorf(CodePackUnavailable, format, args...)
}

// clip bounds text copied from untrusted input into error messages.
func clip(s string) string { return untrusted.Clip(s, 200) }

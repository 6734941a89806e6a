package typeschema

import (
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/untrusted"
)

// CodeInvalidTypeSchema is the 2026-09-24 draft's code (§19) for a type
// schema outside the type schema profile (§12.3.1); package packs
// re-exports it.
const CodeInvalidTypeSchema identity.Code = "invalid_type_schema"

// CodeSchemaUnsupported is not a protocol code: it reports a type schema
// the engine cannot evaluate although it may be valid, such as a pattern
// using ECMA-262 syntax Go's RE2 engine lacks; package packs re-exports it.
const CodeSchemaUnsupported identity.Code = "schema_unsupported"

// SchemaError locates the first failing JSON Schema keyword. It is the Err
// of payload_schema_violation errors and of invalid_event errors raised by
// schema checks, and its JSON form is their Data, so a host can return the
// location to the client unchanged.
type SchemaError struct {
	// InstanceLocation is an RFC 6901 pointer into the validated value
	// ("" is the whole payload).
	InstanceLocation string `json:"instance_location"`
	// KeywordLocation is an RFC 6901 pointer to the failing keyword inside
	// the schema, after following $ref (for example
	// "/properties/score/maximum").
	KeywordLocation string `json:"keyword_location"`
	// Message describes the failure in English.
	Message string `json:"message"`
}

// Error formats the error as "at <instance> (<keyword>): <message>".
func (e *SchemaError) Error() string {
	loc := e.InstanceLocation
	if loc == "" {
		loc = "/"
	}
	return "at " + loc + " (" + e.KeywordLocation + "): " + e.Message
}

func invalidEvent(format string, args ...any) *identity.Error {
	return identity.Errorf(identity.CodeInvalidEvent, format, args...)
}

// clip bounds text copied from untrusted input into error messages.
func clip(s string) string { return untrusted.Clip(s, 200) }

package identity

import (
	"crypto/ed25519"
	"errors"

	"github.com/agentprotocols/go-sdk/internal/b64url"
)

// AgentIDPrefix starts every Agent ID.
const AgentIDPrefix = "did:agent:"

// agentIDLen is the length of a formatted Agent ID: the prefix plus 43
// base64url characters for 32 bytes.
const agentIDLen = len(AgentIDPrefix) + 43

// Reasons an Agent ID fails to decode (Identity §3). Parse errors are
// *Error values with code invalid_actor that wrap one of these.
var (
	ErrAgentIDPrefix   = errors.New(`agent id: prefix is not "did:agent:"`)
	ErrAgentIDEncoding = errors.New("agent id: key is not canonical unpadded base64url")
	ErrAgentIDLength   = errors.New("agent id: key is not 32 bytes")
)

// AgentID is an Agent Identity 1.0 identifier: the raw 32-byte Ed25519
// public key. The zero value is not a valid identifier; see IsZero.
//
// AgentID is comparable and safe to use as a map key. It marshals to and
// from its text form "did:agent:<base64url key>".
type AgentID struct {
	key [32]byte
}

// ParseAgentID decodes s with the five checks of Identity §3: exact prefix,
// unpadded base64url, exactly 32 bytes, canonical re-encoding and raw key
// bytes. Curve-point checks happen at signature verification, not here.
func ParseAgentID(s string) (AgentID, error) {
	var id AgentID
	if err := checkAgentIDText(s); err != nil {
		return id, err
	}
	if err := b64url.DecodeFixed(id.key[:], s[len(AgentIDPrefix):]); err != nil {
		return AgentID{}, Wrap(CodeInvalidActor, "", ErrAgentIDEncoding)
	}
	return id, nil
}

// parseAgentIDBytes is ParseAgentID for the text as bytes, decoded where
// they stand.
func parseAgentIDBytes(b []byte) (AgentID, error) {
	var id AgentID
	if err := checkAgentIDText(b); err != nil {
		return id, err
	}
	if err := b64url.DecodeFixedBytes(id.key[:], b[len(AgentIDPrefix):]); err != nil {
		return AgentID{}, Wrap(CodeInvalidActor, "", ErrAgentIDEncoding)
	}
	return id, nil
}

// checkAgentIDText checks the prefix and the length, in that order.
func checkAgentIDText[S string | []byte](s S) error {
	if !hasAgentIDPrefix(s) {
		return Wrap(CodeInvalidActor, "", ErrAgentIDPrefix)
	}
	if len(s) != agentIDLen {
		return Wrap(CodeInvalidActor, "", ErrAgentIDLength)
	}
	return nil
}

func hasAgentIDPrefix[S string | []byte](s S) bool {
	if len(s) < len(AgentIDPrefix) {
		return false
	}
	for i := range len(AgentIDPrefix) {
		if s[i] != AgentIDPrefix[i] {
			return false
		}
	}
	return true
}

// MustParseAgentID is ParseAgentID for constants in tests and examples; it
// panics on error.
func MustParseAgentID(s string) AgentID {
	id, err := ParseAgentID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// AgentIDFromPublicKey returns the Agent ID of a 32-byte Ed25519 public key.
func AgentIDFromPublicKey(pub []byte) (AgentID, error) {
	var id AgentID
	if len(pub) != ed25519.PublicKeySize {
		return id, Wrap(CodeInvalidActor, "", ErrAgentIDLength)
	}
	copy(id.key[:], pub)
	return id, nil
}

// String returns the canonical text form "did:agent:<base64url key>".
func (id AgentID) String() string {
	return string(id.AppendText(make([]byte, 0, agentIDLen)))
}

// AppendText appends the text form to b.
func (id AgentID) AppendText(b []byte) []byte {
	return b64url.AppendEncode(append(b, AgentIDPrefix...), id.key[:])
}

// MarshalText implements encoding.TextMarshaler.
func (id AgentID) MarshalText() ([]byte, error) { return id.AppendText(nil), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseAgentID.
func (id *AgentID) UnmarshalText(b []byte) error {
	v, err := parseAgentIDBytes(b)
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// PublicKey returns a copy of the Ed25519 public key.
func (id AgentID) PublicKey() ed25519.PublicKey {
	k := make([]byte, 32)
	copy(k, id.key[:])
	return k
}

// Bytes returns the raw 32 key bytes.
func (id AgentID) Bytes() [32]byte { return id.key }

// IsZero reports whether id is the zero value (no identifier).
func (id AgentID) IsZero() bool { return id == AgentID{} }

// Verify checks sig over message with the strict rules of VerifySignature.
func (id AgentID) Verify(message, sig []byte) error {
	return VerifySignature(id.key[:], message, sig)
}

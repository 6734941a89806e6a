package envelope

import (
	"crypto/sha3"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/b64url"
)

// Hash is a SHA3-256 digest as the protocols use it: an event hash (the
// "event ID" of higher protocols) or a record hash. Its text form is
// canonical unpadded base64url (43 characters).
type Hash [32]byte

// Sum returns SHA3-256 of b.
func Sum(b []byte) Hash { return sha3.Sum256(b) }

// ParseHash decodes the canonical text form of a hash. Failures are *Error
// values with code invalid_event; callers that parse a claimed event hash
// may re-code them.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if err := b64url.DecodeFixed(h[:], s); err != nil {
		return Hash{}, identity.Errorf(identity.CodeInvalidEvent, "malformed hash %.64q: %w", s, err)
	}
	return h, nil
}

// String returns the canonical base64url form.
func (h Hash) String() string { return b64url.Encode(h[:]) }

// IsZero reports whether h is the zero value.
func (h Hash) IsZero() bool { return h == Hash{} }

// AppendText implements encoding.TextAppender.
func (h Hash) AppendText(b []byte) ([]byte, error) { return b64url.AppendEncode(b, h[:]), nil }

// MarshalText implements encoding.TextMarshaler.
func (h Hash) MarshalText() ([]byte, error) { return h.AppendText(nil) }

// UnmarshalText implements encoding.TextUnmarshaler with ParseHash.
func (h *Hash) UnmarshalText(b []byte) error {
	v, err := ParseHash(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

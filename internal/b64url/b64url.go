// Package b64url implements the canonical, unpadded base64url encoding that
// Agent Identity requires for Agent IDs, hashes and signatures.
//
// Canonical means that decoding and re-encoding reproduces the input exactly:
// padding, the standard alphabet, line breaks (which encoding/base64 silently
// skips) and non-zero trailing bits are all rejected.
package b64url

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
)

var enc = base64.RawURLEncoding.Strict()

// ErrNotCanonical reports input that is not canonical unpadded base64url.
var ErrNotCanonical = errors.New("not canonical unpadded base64url")

// ErrLength reports input that decodes to the wrong number of bytes.
var ErrLength = errors.New("wrong decoded length")

// Encode returns the unpadded base64url encoding of b.
func Encode(b []byte) string { return enc.EncodeToString(b) }

// AppendEncode appends the unpadded base64url encoding of b to dst.
func AppendEncode(dst, b []byte) []byte { return enc.AppendEncode(dst, b) }

// Decode decodes canonical unpadded base64url.
func Decode(s string) ([]byte, error) {
	if !alphabetOnly(s) {
		return nil, ErrNotCanonical
	}
	b, err := enc.DecodeString(s)
	if err != nil {
		return nil, ErrNotCanonical
	}
	// Strict() already rejects non-zero trailing bits; the alphabet check above
	// rejects the separators the decoder would skip. Both together make the
	// encoding a bijection, which the fuzz test pins.
	return b, nil
}

// DecodeFixed decodes canonical unpadded base64url into dst, which must be
// exactly the decoded length.
func DecodeFixed(dst []byte, s string) error {
	if enc.EncodedLen(len(dst)) != len(s) {
		return ErrLength
	}
	if !alphabetOnly(s) {
		return ErrNotCanonical
	}
	// Decoded through a stack buffer: converting s to []byte would
	// allocate for anything longer than 32 bytes (a hash is 43
	// characters, a signature 86).
	n, err := decodeString(dst, s)
	if err != nil || n != len(dst) {
		return ErrNotCanonical
	}
	return nil
}

// DecodeFixedBytes is [DecodeFixed] for the text as bytes (a JSON string's
// contents, say), decoded where it stands.
func DecodeFixedBytes(dst, src []byte) error {
	if enc.EncodedLen(len(dst)) != len(src) {
		return ErrLength
	}
	if !alphabetOnlyBytes(src) {
		return ErrNotCanonical
	}
	n, err := enc.Decode(dst, src)
	if err != nil || n != len(dst) {
		return ErrNotCanonical
	}
	return nil
}

// decodeString decodes s into dst through a stack buffer, whole quanta of
// four characters at a time, with the tail (and its trailing-bit check)
// last.
func decodeString(dst []byte, s string) (int, error) {
	var buf [128]byte
	n := 0
	for len(s) > len(buf) {
		m, err := enc.Decode(dst[n:], buf[:copy(buf[:], s[:len(buf)])])
		n += m
		if err != nil {
			return n, err
		}
		s = s[len(buf):]
	}
	m, err := enc.Decode(dst[n:], buf[:copy(buf[:], s)])
	return n + m, err
}

// alphabetOnly reports whether s, which the strict decoder accepts or
// refuses, holds only base64url characters: the decoder refuses every
// other byte except CR and LF, which it skips, so those two are the ones
// to look for (with the vectorized byte search: a record carries ~260
// such characters).
func alphabetOnly(s string) bool {
	return strings.IndexByte(s, '\n') < 0 && strings.IndexByte(s, '\r') < 0
}

// alphabetOnlyBytes is alphabetOnly for bytes.
func alphabetOnlyBytes(b []byte) bool {
	return bytes.IndexByte(b, '\n') < 0 && bytes.IndexByte(b, '\r') < 0
}

package identity

import (
	"crypto/ed25519"
	"errors"

	"github.com/agentprotocols/go-sdk/internal/opcount"
)

// Reasons a signature fails strict verification (Identity §3.1, App. B).
// VerifySignature returns an *Error with code invalid_signature that wraps
// exactly one of them.
var (
	ErrPublicKeyLength   = errors.New("ed25519: public key is not 32 bytes")
	ErrSignatureLength   = errors.New("ed25519: signature is not 64 bytes")
	ErrNonCanonicalA     = errors.New("ed25519: public key encoding is not canonical")
	ErrSmallOrderA       = errors.New("ed25519: public key is a small-order point")
	ErrNonCanonicalR     = errors.New("ed25519: R encoding is not canonical")
	ErrSmallOrderR       = errors.New("ed25519: R is a small-order point")
	ErrNonCanonicalS     = errors.New("ed25519: S is not reduced below the group order")
	ErrSignatureMismatch = errors.New("ed25519: signature does not verify")
)

// smallOrderY lists the y-coordinates (sign bit cleared, little-endian) of
// the eight small-order points: 0, 1, p−1 and the two order-8 values.
var smallOrderY = [5][32]byte{
	{},
	{1},
	{0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
	{0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
		0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05},
	{0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
		0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a},
}

// order is L = 2^252 + 27742317777372353535851937790883648493, little-endian.
var order = [32]byte{
	0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
}

// VerifySignature verifies an Ed25519 signature with the strict rules of
// Agent Identity: exact lengths (it never panics), canonical A and R, A and
// R not of small order, S < L, and the cofactorless equation [S]B = R + [k]A.
//
// The point checks work on the encodings alone (y < p and y not one of the
// five small-order y values), so they cost a few comparisons. The equation
// is computed exactly as crypto/ed25519 computes it (see equation.go),
// with decoded keys cached; these checks close that algorithm's leniencies
// (non-canonical and small-order A, small-order R). The accepted set is
// pinned by the 768 ed25519vectors in the tests.
func VerifySignature(publicKey, message, sig []byte) error {
	if len(publicKey) != ed25519.PublicKeySize {
		return sigError(ErrPublicKeyLength)
	}
	if len(sig) != ed25519.SignatureSize {
		return sigError(ErrSignatureLength)
	}
	if !canonicalPoint(publicKey) {
		return sigError(ErrNonCanonicalA)
	}
	if smallOrder(publicKey) {
		return sigError(ErrSmallOrderA)
	}
	if !canonicalPoint(sig[:32]) {
		return sigError(ErrNonCanonicalR)
	}
	if smallOrder(sig[:32]) {
		return sigError(ErrSmallOrderR)
	}
	if !lessThanOrder(sig[32:]) {
		return sigError(ErrNonCanonicalS)
	}
	opcount.Verify()
	if !equation(publicKey, message, sig) {
		return sigError(ErrSignatureMismatch)
	}
	return nil
}

func sigError(reason error) error {
	return Wrap(CodeInvalidSignature, "", reason)
}

// canonicalPoint reports whether b is the canonical encoding of its point:
// y (sign bit cleared) < p = 2^255−19, and no sign bit on a point with x = 0
// (y = 1 or y = p−1). The y values p … 2^255−1 are exactly those with bytes
// 1–30 all 0xff, the top byte 0x7f after clearing the sign bit and the low
// byte ≥ 0xed.
func canonicalPoint(b []byte) bool {
	if b[31]&0x80 != 0 && (isY(b, &smallOrderY[1]) || isY(b, &smallOrderY[2])) {
		return false
	}
	if b[31]&0x7f != 0x7f || b[0] < 0xed {
		return true
	}
	for _, c := range b[1:31] {
		if c != 0xff {
			return true
		}
	}
	return false
}

func smallOrder(b []byte) bool {
	for i := range smallOrderY {
		if isY(b, &smallOrderY[i]) {
			return true
		}
	}
	return false
}

// isY compares the y-coordinate of encoding b (sign bit cleared) with y.
func isY(b []byte, y *[32]byte) bool {
	return string(b[:31]) == string(y[:31]) && b[31]&0x7f == y[31]
}

// lessThanOrder compares a little-endian scalar with L.
func lessThanOrder(s []byte) bool {
	for i := 31; i >= 0; i-- {
		if s[i] != order[i] {
			return s[i] < order[i]
		}
	}
	return false
}

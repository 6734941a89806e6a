package identity

import (
	"crypto/sha512"
	"sync"

	"filippo.io/edwards25519"
)

// The cofactorless equation [S]B = R + [k]A, computed as crypto/ed25519
// does — R' = [k](−A) + [S]B, accepted iff R' encodes to R — with one
// difference: decoded public keys are cached. Decompressing A is about 7 %
// of a verification, and the histories this SDK verifies repeat a handful
// of keys thousands of times. TestEquationMatchesStdlib and
// FuzzEquationMatchesStdlib pin this against crypto/ed25519.Verify.

// keyCacheSize bounds the cache; when full it is emptied, which keeps the
// code trivial and the worst case (many distinct keys) no slower than no
// cache at all.
const keyCacheSize = 4096

var keyCache = struct {
	sync.RWMutex
	m map[[32]byte]*edwards25519.Point
}{m: map[[32]byte]*edwards25519.Point{}}

// negatedKey returns −A for a 32-byte public key, or nil if it is not a
// point on the curve. The result is shared and must not be modified.
func negatedKey(pub []byte) *edwards25519.Point {
	var k [32]byte
	copy(k[:], pub)
	keyCache.RLock()
	p, ok := keyCache.m[k]
	keyCache.RUnlock()
	if ok {
		return p
	}
	a, err := new(edwards25519.Point).SetBytes(pub)
	if err != nil {
		return nil
	}
	p = new(edwards25519.Point).Negate(a)
	keyCache.Lock()
	if len(keyCache.m) >= keyCacheSize {
		clear(keyCache.m)
	}
	keyCache.m[k] = p
	keyCache.Unlock()
	return p
}

// equation reports whether sig is a valid signature of message under pub,
// given 32-byte pub, 64-byte sig and S < L (checked by the caller).
func equation(pub, message, sig []byte) bool {
	minusA := negatedKey(pub)
	if minusA == nil {
		return false
	}
	h := sha512.New()
	h.Write(sig[:32])
	h.Write(pub)
	h.Write(message)
	var digest [sha512.Size]byte
	k, err := edwards25519.NewScalar().SetUniformBytes(h.Sum(digest[:0]))
	if err != nil {
		return false
	}
	s, err := edwards25519.NewScalar().SetCanonicalBytes(sig[32:])
	if err != nil {
		return false
	}
	r := new(edwards25519.Point).VarTimeDoubleScalarBaseMult(k, minusA, s)
	return string(r.Bytes()) == string(sig[:32])
}

package identity

import (
	"bytes"
	"crypto/ed25519"
	"testing"
)

// TestEquationMatchesStdlib: the cached equation agrees with
// crypto/ed25519.Verify on honest, tampered and foreign signatures, also
// when the key cache is cold, warm and just cleared.
func TestEquationMatchesStdlib(t *testing.T) {
	for i := range 300 {
		seed := bytes.Repeat([]byte{byte(i)}, 32)
		priv := ed25519.NewKeyFromSeed(seed)
		pub := priv.Public().(ed25519.PublicKey)
		msg := []byte{byte(i), 1, 2, 3}
		sig := ed25519.Sign(priv, msg)
		for j, m := range [][]byte{msg, append(msg, 0), nil} {
			for _, s := range [][]byte{sig, ed25519.Sign(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(i + 1)}, 32)), m)} {
				if got, want := equation(pub, m, s), ed25519.Verify(pub, m, s); got != want {
					t.Fatalf("key %d message %d: equation %v, stdlib %v", i, j, got, want)
				}
			}
		}
	}
	if len(keyCache.m) == 0 || len(keyCache.m) > keyCacheSize {
		t.Fatalf("cache holds %d keys", len(keyCache.m))
	}
}

// FuzzEquationMatchesStdlib compares the two on arbitrary inputs that pass
// the length and S < L preconditions of equation.
func FuzzEquationMatchesStdlib(f *testing.F) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	msg := []byte("hello")
	f.Add([]byte(priv.Public().(ed25519.PublicKey)), msg, ed25519.Sign(priv, msg))
	f.Add(make([]byte, 32), msg, make([]byte, 64))
	f.Fuzz(func(t *testing.T, pub, msg, sig []byte) {
		if len(pub) != 32 || len(sig) != 64 || !lessThanOrder(sig[32:]) {
			return
		}
		if got, want := equation(pub, msg, sig), ed25519.Verify(pub, msg, sig); got != want {
			t.Fatalf("equation %v, stdlib %v", got, want)
		}
	})
}

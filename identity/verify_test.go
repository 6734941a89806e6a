package identity_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/agentprotocols/go-sdk/identity"
)

type edVector struct {
	A, R, S, M string
	Flags      []string
}

// TestEd25519Vectors pins the exact accepted set over the 768 edge cases of
// filippo.io/mostly-harmless/ed25519vectors: the unflagged vector plus the
// ones whose only flags are mixed-order components. Everything flagged
// LowOrderA/R, NonCanonicalA/R or LowOrderResidue must be rejected.
func TestEd25519Vectors(t *testing.T) {
	data, err := os.ReadFile("testdata/ed25519vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []edVector
	if err := json.Unmarshal(data, &vectors); err != nil { // trusted test data
		t.Fatal(err)
	}
	if len(vectors) != 768 {
		t.Fatalf("got %d vectors", len(vectors))
	}
	accepted := 0
	for i, v := range vectors {
		pub, _ := hex.DecodeString(v.A)
		r, _ := hex.DecodeString(v.R)
		s, _ := hex.DecodeString(v.S)
		sig := append(r, s...)
		want := true
		for _, f := range v.Flags {
			if f != "LowOrderComponentA" && f != "LowOrderComponentR" {
				want = false
			}
		}
		err := identity.VerifySignature(pub, []byte(v.M), sig)
		if got := err == nil; got != want {
			t.Errorf("vector %d %v: accepted=%v want %v (%v)", i, v.Flags, got, want, err)
		}
		if err == nil {
			accepted++
		} else if !errors.Is(err, identity.ErrInvalidSignature) {
			t.Errorf("vector %d: error %v lacks invalid_signature", i, err)
		}
		// The reason must name the flagged defect, checked in the same order
		// the verifier applies its rules.
		if err != nil && slices.Contains(v.Flags, "NonCanonicalA") && !errors.Is(err, identity.ErrNonCanonicalA) {
			t.Errorf("vector %d: %v, want ErrNonCanonicalA", i, err)
		}
	}
	if accepted != 43 {
		t.Errorf("accepted %d vectors, want 43", accepted)
	}
}

func TestVerifySignatureLengths(t *testing.T) {
	k, _ := identity.NewKeyFromSeed(make([]byte, 32))
	pub := k.AgentID().PublicKey()
	sig := ed25519.Sign(ed25519.NewKeyFromSeed(make([]byte, 32)), []byte("m"))
	cases := []struct {
		name     string
		pub, sig []byte
		want     error
	}{
		{"short key", pub[:31], sig, identity.ErrPublicKeyLength},
		{"empty key", nil, sig, identity.ErrPublicKeyLength},
		{"short sig", pub, sig[:63], identity.ErrSignatureLength},
		{"long sig", pub, append(sig, 0), identity.ErrSignatureLength},
	}
	for _, c := range cases {
		if err := identity.VerifySignature(c.pub, []byte("m"), c.sig); !errors.Is(err, c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if err := identity.VerifySignature(pub, []byte("m"), sig); err != nil {
		t.Fatal(err)
	}
}

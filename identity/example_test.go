package identity_test

import (
	"bytes"
	"context"
	"crypto/sha3"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/agentprotocols/go-sdk/identity"
)

// A key from a seed, its Agent ID, a signature over an event hash and the
// strict verification a receiver runs.
func Example() {
	seed := bytes.Repeat([]byte{0x07}, identity.SeedSize)
	key, err := identity.NewKeyFromSeed(seed)
	if err != nil {
		log.Fatal(err)
	}
	id := key.AgentID()
	fmt.Println(id)

	// Events are signed over the raw 32-byte SHA3-256 digest.
	digest := sha3.Sum256([]byte(`{"example":true}`))
	sig, err := key.Sign(context.Background(), digest[:])
	if err != nil {
		log.Fatal(err)
	}

	// The receiver knows only the Agent ID.
	sender, err := identity.ParseAgentID(id.String())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("valid:", identity.VerifySignature(sender.PublicKey(), digest[:], sig) == nil)

	digest[0] ^= 1
	err = sender.Verify(digest[:], sig)
	fmt.Println("tampered:", errors.Is(err, identity.ErrInvalidSignature), errors.Is(err, identity.ErrSignatureMismatch))
	// Output:
	// did:agent:6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw
	// valid: true
	// tampered: true true
}

// A client mints a request token for a service origin; the service
// verifies it against its own origin. Fixed clocks make the output stable.
func ExampleMintRequestToken() {
	key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{0x07}, identity.SeedSize))
	if err != nil {
		log.Fatal(err)
	}
	service := identity.MustParseOrigin("https://api.example.com")
	minted := time.Unix(1779753600, 0)

	token, err := identity.MintRequestToken(context.Background(), key, service, &identity.MintOptions{
		Now: func() time.Time { return minted },
	})
	if err != nil {
		log.Fatal(err)
	}

	// The service, 100 s later.
	claims, err := identity.VerifyRequestToken(token, service, &identity.TokenVerifyOptions{
		Now: func() time.Time { return minted.Add(100 * time.Second) },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(claims.Issuer)
	fmt.Println(claims.Audience, claims.ExpiresAt.Sub(claims.IssuedAt))

	// Another service rejects it: one audience per origin.
	_, err = identity.VerifyRequestToken(token, identity.MustParseOrigin("https://other.example.com"), &identity.TokenVerifyOptions{
		Now: func() time.Time { return minted.Add(100 * time.Second) },
	})
	fmt.Println(errors.Is(err, identity.ErrInvalidToken), errors.Is(err, identity.ErrTokenAudience))

	// And it expires at exp.
	_, err = identity.VerifyRequestToken(token, service, &identity.TokenVerifyOptions{
		Now: func() time.Time { return minted.Add(identity.DefaultTokenTTL) },
	})
	fmt.Println(errors.Is(err, identity.ErrTokenExpired))
	// Output:
	// did:agent:6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw
	// https://api.example.com 5m0s
	// true true
	// true
}

// Parsing an Agent URL: the Agent ID, the protocol resource and route hints.
func ExampleParseAgentURL() {
	u, err := identity.ParseAgentURL("did:agent:6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw/mail/AAECAwQFBgcICQoLDA0ODw?route=https://relay.example")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(u.Protocol, u.Resource, u.Routes)
	fmt.Println(u.Stable())
	// Output:
	// mail AAECAwQFBgcICQoLDA0ODw [https://relay.example]
	// did:agent:6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw/mail/AAECAwQFBgcICQoLDA0ODw
}

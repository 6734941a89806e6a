package identity_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/identity"
)

// vectorFile mirrors the sections of identity-1.0.vectors.json this package
// owns; the envelope sections are ignored.
type vectorFile struct {
	Keys []struct {
		Name      string `json:"name"`
		Seed      string `json:"seed"`
		PublicKey string `json:"public_key"`
		AgentID   string `json:"agent_id"`
	} `json:"keys"`
	Signatures []struct {
		Name      string `json:"name"`
		PublicKey string `json:"public_key"`
		Message   string `json:"message"`
		Signature string `json:"signature"`
		Valid     bool   `json:"valid"`
	} `json:"signatures"`
	AgentIDs struct {
		Valid   []string    `json:"valid"`
		Invalid []namedText `json:"invalid"`
	} `json:"agent_ids"`
	Origins struct {
		Valid   []string `json:"valid"`
		Invalid []string `json:"invalid"`
	} `json:"origins"`
	AgentURLs struct {
		Valid []struct {
			Value  string `json:"value"`
			Parsed struct {
				AgentID  string   `json:"agent_id"`
				Protocol string   `json:"protocol"`
				Resource string   `json:"resource"`
				Routes   []string `json:"routes"`
			} `json:"parsed"`
		} `json:"valid"`
		Invalid []namedText `json:"invalid"`
	} `json:"agent_urls"`
	RequestJWTs struct {
		Audience   string `json:"audience"`
		NowSecs    int64  `json:"now_secs"`
		MaxTTLSecs int64  `json:"max_ttl_secs"`
		Valid      []struct {
			Name   string `json:"name"`
			Token  string `json:"token"`
			Claims struct {
				Iss string `json:"iss"`
				Sub string `json:"sub"`
				Aud string `json:"aud"`
				Iat int64  `json:"iat"`
				Exp int64  `json:"exp"`
			} `json:"claims"`
		} `json:"valid"`
		Invalid []struct {
			Name  string `json:"name"`
			Token string `json:"token"`
		} `json:"invalid"`
	} `json:"request_jwts"`
	MaxSeenNonce []struct {
		Name      string `json:"name"`
		NextNonce int64  `json:"next_nonce"`
		NowMs     int64  `json:"now_ms"`
		Header    string `json:"header"`
		Accepted  bool   `json:"accepted"`
		NextAfter int64  `json:"next_after"`
	} `json:"max_seen_nonce"`
}

type namedText struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

var (
	vectorsOnce sync.Once
	vectors     vectorFile
	vectorsErr  error
)

func loadVectors(tb testing.TB) *vectorFile {
	tb.Helper()
	vectorsOnce.Do(func() {
		b, err := os.ReadFile("testdata/identity-1.0.vectors.json")
		if err != nil {
			vectorsErr = err
			return
		}
		vectorsErr = json.Unmarshal(b, &vectors)
	})
	if vectorsErr != nil {
		tb.Fatal(vectorsErr)
	}
	return &vectors
}

func b64(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		tb.Fatalf("bad base64url %q in test data: %v", s, err)
	}
	return b
}

// vectorClock returns the fixed clock of the request_jwts section.
func vectorClock(v *vectorFile) func() time.Time {
	return func() time.Time { return time.Unix(v.RequestJWTs.NowSecs, 0) }
}

func vectorVerifyOptions(v *vectorFile) *identity.TokenVerifyOptions {
	return &identity.TokenVerifyOptions{
		MaxLifetime: time.Duration(v.RequestJWTs.MaxTTLSecs) * time.Second,
		Now:         vectorClock(v),
	}
}

func TestVectorKeys(t *testing.T) {
	v := loadVectors(t)
	if len(v.Keys) == 0 {
		t.Fatal("no key vectors")
	}
	for _, k := range v.Keys {
		t.Run(k.Name, func(t *testing.T) {
			seed, err := hex.DecodeString(k.Seed)
			if err != nil {
				t.Fatal(err)
			}
			key, err := identity.NewKeyFromSeed(seed)
			if err != nil {
				t.Fatal(err)
			}
			id := key.AgentID()
			if got := base64.RawURLEncoding.EncodeToString(id.PublicKey()); got != k.PublicKey {
				t.Errorf("public key %s, want %s", got, k.PublicKey)
			}
			if id.String() != k.AgentID {
				t.Errorf("agent id %s, want %s", id, k.AgentID)
			}
			parsed, err := identity.ParseAgentID(k.AgentID)
			if err != nil || parsed != id {
				t.Errorf("ParseAgentID = %v, %v", parsed, err)
			}
		})
	}
}

func TestVectorSignatures(t *testing.T) {
	v := loadVectors(t)
	if len(v.Signatures) != 6 {
		t.Fatalf("%d signature vectors, want 6", len(v.Signatures))
	}
	for _, s := range v.Signatures {
		t.Run(s.Name, func(t *testing.T) {
			err := identity.VerifySignature(b64(t, s.PublicKey), b64(t, s.Message), b64(t, s.Signature))
			if got := err == nil; got != s.Valid {
				t.Fatalf("accepted = %v, want %v (%v)", got, s.Valid, err)
			}
			if err != nil && !errors.Is(err, identity.ErrInvalidSignature) {
				t.Errorf("error %v is not invalid_signature", err)
			}
		})
	}
}

func TestVectorAgentIDs(t *testing.T) {
	v := loadVectors(t)
	for _, s := range v.AgentIDs.Valid {
		t.Run("valid/"+s, func(t *testing.T) {
			id, err := identity.ParseAgentID(s)
			if err != nil {
				t.Fatal(err)
			}
			if id.String() != s {
				t.Errorf("round trip %s", id)
			}
		})
	}
	for _, c := range v.AgentIDs.Invalid {
		t.Run("invalid/"+c.Name, func(t *testing.T) {
			if _, err := identity.ParseAgentID(c.Value); !errors.Is(err, identity.ErrInvalidActor) {
				t.Fatalf("ParseAgentID(%q) = %v, want invalid_actor", c.Value, err)
			}
		})
	}
}

func TestVectorOrigins(t *testing.T) {
	v := loadVectors(t)
	if len(v.Origins.Valid) != 6 || len(v.Origins.Invalid) != 12 {
		t.Fatalf("origin vectors %d/%d", len(v.Origins.Valid), len(v.Origins.Invalid))
	}
	for _, s := range v.Origins.Valid {
		t.Run("valid/"+s, func(t *testing.T) {
			o, err := identity.ParseOrigin(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if o.String() != s {
				t.Errorf("String() = %q", o)
			}
		})
	}
	for _, s := range v.Origins.Invalid {
		t.Run("invalid/"+s, func(t *testing.T) {
			// Invalid with and without the loopback option.
			for _, opts := range []*identity.OriginOptions{nil, {AllowLoopbackHTTP: true}} {
				if _, err := identity.ParseOrigin(s, opts); !errors.Is(err, identity.ErrInvalidRequest) {
					t.Fatalf("ParseOrigin(%q, %+v) = %v, want invalid_request", s, opts, err)
				}
			}
		})
	}
}

func TestVectorAgentURLs(t *testing.T) {
	v := loadVectors(t)
	if len(v.AgentURLs.Valid) != 5 || len(v.AgentURLs.Invalid) != 18 {
		t.Fatalf("agent url vectors %d/%d", len(v.AgentURLs.Valid), len(v.AgentURLs.Invalid))
	}
	for _, c := range v.AgentURLs.Valid {
		t.Run("valid/"+c.Value, func(t *testing.T) {
			u, err := identity.ParseAgentURL(c.Value)
			if err != nil {
				t.Fatal(err)
			}
			p := c.Parsed
			if u.ID.String() != p.AgentID || u.Protocol != p.Protocol || u.Resource != p.Resource {
				t.Errorf("parsed %s %q %q, want %s %q %q", u.ID, u.Protocol, u.Resource, p.AgentID, p.Protocol, p.Resource)
			}
			routes := []string{}
			for _, r := range u.Routes {
				routes = append(routes, r.String())
			}
			if !slices.Equal(routes, p.Routes) {
				t.Errorf("routes %q, want %q", routes, p.Routes)
			}
			if u.String() != c.Value {
				t.Errorf("String() = %q", u)
			}
			if err := u.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
	for _, c := range v.AgentURLs.Invalid {
		t.Run("invalid/"+c.Name, func(t *testing.T) {
			if u, err := identity.ParseAgentURL(c.Value); !errors.Is(err, identity.ErrInvalidRequest) {
				t.Fatalf("ParseAgentURL(%q) = %+v, %v; want invalid_request", c.Value, u, err)
			}
		})
	}
}

func TestVectorRequestJWTs(t *testing.T) {
	v := loadVectors(t)
	rj := v.RequestJWTs
	if len(rj.Valid) != 1 || len(rj.Invalid) != 11 {
		t.Fatalf("request jwt vectors %d/%d", len(rj.Valid), len(rj.Invalid))
	}
	aud, err := identity.ParseOrigin(rj.Audience, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rj.Valid {
		t.Run("valid/"+c.Name, func(t *testing.T) {
			claims, err := identity.VerifyRequestToken(c.Token, aud, vectorVerifyOptions(v))
			if err != nil {
				t.Fatal(err)
			}
			w := c.Claims
			if claims.Issuer.String() != w.Iss || w.Sub != w.Iss || claims.Audience.String() != w.Aud ||
				claims.IssuedAt.Unix() != w.Iat || claims.ExpiresAt.Unix() != w.Exp {
				t.Errorf("claims %+v, want %+v", claims, w)
			}
		})
	}
	// The reason each invalid vector must be rejected for.
	reasons := map[string]error{
		"algorithm other than EdDSA":     identity.ErrTokenAlgorithm,
		"kid differs from iss":           identity.ErrTokenIssuer,
		"sub differs from iss":           identity.ErrTokenIssuer,
		"audience with a path":           identity.ErrTokenAudience,
		"audience of another origin":     identity.ErrTokenAudience,
		"expired":                        identity.ErrTokenExpired,
		"exp not after iat":              identity.ErrTokenLifetime,
		"lifetime above the maximum":     identity.ErrTokenLifetime,
		"signed by a key other than kid": identity.ErrTokenSignature,
		"tampered signature":             identity.ErrTokenSignature,
		"two compact parts":              identity.ErrTokenMalformed,
	}
	for _, c := range rj.Invalid {
		t.Run("invalid/"+c.Name, func(t *testing.T) {
			claims, err := identity.VerifyRequestToken(c.Token, aud, vectorVerifyOptions(v))
			if !errors.Is(err, identity.ErrInvalidToken) {
				t.Fatalf("VerifyRequestToken = %+v, %v; want invalid_token", claims, err)
			}
			if want, ok := reasons[c.Name]; !ok {
				t.Errorf("no expected reason for vector %q (got %v)", c.Name, err)
			} else if !errors.Is(err, want) {
				t.Errorf("error %v does not wrap %v", err, want)
			}
		})
	}
}

func TestVectorMaxSeenNonce(t *testing.T) {
	v := loadVectors(t)
	if len(v.MaxSeenNonce) != 5 {
		t.Fatalf("%d max_seen_nonce vectors", len(v.MaxSeenNonce))
	}
	for _, c := range v.MaxSeenNonce {
		t.Run(c.Name, func(t *testing.T) {
			// The pure rule.
			seen, err := identity.ParseMaxSeenNonce(c.Header)
			if err != nil {
				t.Fatal(err)
			}
			next, err := identity.AdvanceNonce(c.NextNonce, c.NowMs, seen)
			if accepted := err == nil; accepted != c.Accepted {
				t.Fatalf("AdvanceNonce accepted = %v, want %v", accepted, c.Accepted)
			}
			if c.Accepted && next != c.NextAfter {
				t.Errorf("next = %d, want %d", next, c.NextAfter)
			}

			// The same through a NonceSource with a fake clock.
			ctx := context.Background()
			store := &identity.MemoryNonceStore{}
			store.Save(ctx, c.NextNonce-1)
			src := identity.NewNonceSource(&identity.NonceOptions{
				Store: store,
				Now:   func() time.Time { return time.UnixMilli(c.NowMs) },
			})
			err = src.ObserveMaxSeen(ctx, c.Header)
			if accepted := err == nil; accepted != c.Accepted {
				t.Fatalf("ObserveMaxSeen accepted = %v, want %v (%v)", accepted, c.Accepted, err)
			}
			want := c.NextNonce
			if c.Accepted {
				want = c.NextAfter
			} else if !errors.Is(err, identity.ErrNonceJump) {
				t.Errorf("error %v, want ErrNonceJump", err)
			}
			if got, _ := src.Peek(ctx); got != want {
				t.Errorf("Peek = %d, want %d", got, want)
			}
			if n, _ := src.Next(ctx, time.UnixMilli(0)); n != want {
				t.Errorf("Next = %d, want %d", n, want)
			}
		})
	}
}

package identity_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentprotocols/go-sdk/identity"
)

func FuzzParseAgentID(f *testing.F) {
	v := loadVectors(f)
	for _, s := range v.AgentIDs.Valid {
		f.Add(s)
	}
	for _, c := range v.AgentIDs.Invalid {
		f.Add(c.Value)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := identity.ParseAgentID(s)
		// UnmarshalText decodes the bytes where they stand: the same
		// verdict, reason and identifier.
		var fromText identity.AgentID
		terr := fromText.UnmarshalText([]byte(s))
		if (err == nil) != (terr == nil) || err != nil && err.Error() != terr.Error() || fromText != id {
			t.Fatalf("ParseAgentID %v (%v), UnmarshalText %v (%v)", id, err, fromText, terr)
		}
		if err != nil {
			if !errors.Is(err, identity.ErrInvalidActor) {
				t.Fatalf("error %v is not invalid_actor", err)
			}
			return
		}
		if id.String() != s {
			t.Fatalf("ParseAgentID(%q).String() = %q", s, id)
		}
	})
}

func FuzzParseOrigin(f *testing.F) {
	v := loadVectors(f)
	for _, s := range append(v.Origins.Valid, v.Origins.Invalid...) {
		f.Add(s, false)
	}
	f.Add("http://127.0.0.1:8080", true)
	f.Add("https://[2001:db8::1]:8443", false)
	f.Add("https://xn--mnchen-3ya.de", false)
	f.Fuzz(func(t *testing.T, s string, loopback bool) {
		o, err := identity.ParseOrigin(s, &identity.OriginOptions{AllowLoopbackHTTP: loopback})
		if err != nil {
			if !errors.Is(err, identity.ErrInvalidRequest) {
				t.Fatalf("error %v is not invalid_request", err)
			}
			return
		}
		if o.String() != s {
			t.Fatalf("ParseOrigin(%q).String() = %q", s, o)
		}
		// The origin of the origin's own URL is itself.
		o2, err := identity.OriginOf(o.URL(), &identity.OriginOptions{AllowLoopbackHTTP: loopback})
		if err != nil || o2 != o {
			t.Fatalf("OriginOf(%q) = %q, %v", s, o2, err)
		}
	})
}

func FuzzParseAgentURL(f *testing.F) {
	v := loadVectors(f)
	for _, c := range v.AgentURLs.Valid {
		f.Add(c.Value)
	}
	for _, c := range v.AgentURLs.Invalid {
		f.Add(c.Value)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := identity.ParseAgentURL(s)
		if err != nil {
			if !errors.Is(err, identity.ErrInvalidRequest) {
				t.Fatalf("error %v is not invalid_request", err)
			}
			return
		}
		if u.String() != s {
			t.Fatalf("ParseAgentURL(%q).String() = %q", s, u)
		}
		if err := u.Validate(); err != nil {
			t.Fatalf("parsed %q does not validate: %v", s, err)
		}
		if q := strings.IndexByte(s, '?'); q >= 0 && u.Stable() != s[:q] || q < 0 && u.Stable() != s {
			t.Fatalf("Stable() = %q for %q", u.Stable(), s)
		}
	})
}

func FuzzVerifyRequestToken(f *testing.F) {
	v := loadVectors(f)
	for _, c := range v.RequestJWTs.Valid {
		f.Add(c.Token, v.RequestJWTs.NowSecs)
	}
	for _, c := range v.RequestJWTs.Invalid {
		f.Add(c.Token, v.RequestJWTs.NowSecs)
	}
	aud := identity.MustParseOrigin(v.RequestJWTs.Audience)
	f.Fuzz(func(t *testing.T, token string, now int64) {
		opts := &identity.TokenVerifyOptions{Now: fixedClock(now)}
		claims, err := identity.VerifyRequestToken(token, aud, opts)
		if err != nil {
			if !errors.Is(err, identity.ErrInvalidToken) {
				t.Fatalf("error %v is not invalid_token", err)
			}
			return
		}
		again, err := identity.VerifyRequestToken(token, aud, opts)
		if err != nil || *again != *claims {
			t.Fatalf("re-verification: %+v, %v", again, err)
		}
		if claims.Audience != aud || claims.Issuer.IsZero() || !claims.ExpiresAt.After(claims.IssuedAt) {
			t.Fatalf("accepted claims %+v", claims)
		}
	})
}

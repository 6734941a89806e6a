package identity_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/identity"
)

const (
	testNow = 1779753700 // the vectors' now_secs
	testAud = "https://api.example.com"
)

func seedKey(tb testing.TB, b byte) *identity.PrivateKey {
	tb.Helper()
	k, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func fixedClock(secs int64) func() time.Time {
	return func() time.Time { return time.Unix(secs, 0) }
}

var enc = base64.RawURLEncoding

// forge signs arbitrary header and claims text with k.
func forge(k *identity.PrivateKey, header, claims string) string {
	input := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims))
	sig, _ := k.Sign(context.Background(), []byte(input))
	return input + "." + enc.EncodeToString(sig)
}

// stdHeader and stdClaims build the usual members for key k.
func stdHeader(k *identity.PrivateKey) string {
	return `{"alg":"EdDSA","typ":"JWT","kid":"` + k.AgentID().String() + `"}`
}

func stdClaims(k *identity.PrivateKey, iat, exp int64) string {
	id := k.AgentID().String()
	return fmt.Sprintf(`{"iss":"%s","sub":"%s","aud":"%s","iat":%d,"exp":%d}`, id, id, testAud, iat, exp)
}

func verifyAt(token string, now int64) (*identity.TokenClaims, error) {
	return identity.VerifyRequestToken(token, identity.MustParseOrigin(testAud), &identity.TokenVerifyOptions{Now: fixedClock(now)})
}

func TestMintVerifyRoundTrip(t *testing.T) {
	k := seedKey(t, 7)
	aud := identity.MustParseOrigin(testAud)
	tok, err := identity.MintRequestToken(context.Background(), k, aud, &identity.MintOptions{Now: fixedClock(1779753600)})
	if err != nil {
		t.Fatal(err)
	}
	// Ed25519 is deterministic and the member order is fixed, so the token
	// is the vector's valid token byte for byte.
	v := loadVectors(t)
	if tok != v.RequestJWTs.Valid[0].Token {
		t.Errorf("minted token differs from the vector:\n%s\n%s", tok, v.RequestJWTs.Valid[0].Token)
	}
	parts := strings.Split(tok, ".")
	h, _ := enc.DecodeString(parts[0])
	c, _ := enc.DecodeString(parts[1])
	if string(h) != stdHeader(k) {
		t.Errorf("header %s", h)
	}
	if string(c) != stdClaims(k, 1779753600, 1779753900) {
		t.Errorf("claims %s", c)
	}
	claims, err := verifyAt(tok, 1779753700)
	if err != nil {
		t.Fatal(err)
	}
	if claims.Issuer != k.AgentID() || claims.Audience != aud || claims.IssuedAt.Unix() != 1779753600 || claims.ExpiresAt.Unix() != 1779753900 {
		t.Errorf("claims %+v", claims)
	}

	// A custom TTL, truncated to seconds.
	tok, err = identity.MintRequestToken(context.Background(), k, aud, &identity.MintOptions{TTL: 90*time.Second + 500*time.Millisecond, Now: fixedClock(testNow)})
	if err != nil {
		t.Fatal(err)
	}
	if claims, err := verifyAt(tok, testNow); err != nil || claims.ExpiresAt.Unix() != testNow+90 {
		t.Errorf("TTL 90 s: %+v, %v", claims, err)
	}
}

// remoteSigner stands in for a key held elsewhere; it records the
// messages it signs.
type remoteSigner struct {
	key  *identity.PrivateKey
	mu   sync.Mutex
	seen [][]byte
	err  error
}

func (r *remoteSigner) AgentID() identity.AgentID { return r.key.AgentID() }

func (r *remoteSigner) Sign(ctx context.Context, m []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.err != nil {
		return nil, r.err
	}
	r.mu.Lock()
	r.seen = append(r.seen, bytes.Clone(m))
	r.mu.Unlock()
	return r.key.Sign(ctx, m)
}

func TestMintThroughSigner(t *testing.T) {
	rs := &remoteSigner{key: seedKey(t, 9)}
	aud := identity.MustParseOrigin(testAud)
	tok, err := identity.MintRequestToken(context.Background(), rs, aud, &identity.MintOptions{Now: fixedClock(testNow)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.seen) != 1 || string(rs.seen[0]) != tok[:strings.LastIndexByte(tok, '.')] {
		t.Errorf("signer saw %q", rs.seen)
	}
	if _, err := verifyAt(tok, testNow); err != nil {
		t.Error(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := identity.MintRequestToken(ctx, rs, aud, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	boom := errors.New("hsm offline")
	if _, err := identity.MintRequestToken(context.Background(), &remoteSigner{key: rs.key, err: boom}, aud, nil); !errors.Is(err, boom) {
		t.Errorf("signer error: %v", err)
	}
	if _, err := identity.MintRequestToken(context.Background(), rs, identity.Origin{}, nil); err == nil {
		t.Error("zero audience accepted")
	}
	if _, err := identity.MintRequestToken(context.Background(), rs, aud, &identity.MintOptions{TTL: time.Millisecond}); err == nil {
		t.Error("sub-second TTL accepted")
	}
	if _, err := identity.MintRequestToken(context.Background(), nil, aud, nil); err == nil {
		t.Error("nil signer accepted")
	}
}

// TestVerifyRequestTokenRules covers each rejection rule with a token that
// is otherwise valid and correctly signed.
func TestVerifyRequestTokenRules(t *testing.T) {
	k := seedKey(t, 7)
	id := k.AgentID().String()
	other := seedKey(t, 8).AgentID().String()
	iat, exp := int64(testNow-100), int64(testNow+200)
	good := forge(k, stdHeader(k), stdClaims(k, iat, exp))
	if _, err := verifyAt(good, testNow); err != nil {
		t.Fatalf("baseline token rejected: %v", err)
	}
	claimsWith := func(members string) string {
		return fmt.Sprintf(`{"iss":"%s","sub":"%s",%s}`, id, id, members)
	}
	timesAud := fmt.Sprintf(`"aud":"%s","iat":%d,"exp":%d`, testAud, iat, exp)

	// flipSigTail re-encodes the last signature character with non-zero
	// trailing bits: the same bytes to a lenient decoder.
	flipSigTail := func(tok string) string {
		last := tok[len(tok)-1]
		idx := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", last)
		return tok[:len(tok)-1] + string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[idx|1])
	}

	cases := []struct {
		name   string
		token  string
		reason error
	}{
		// Encoding.
		{"empty", "", identity.ErrTokenMalformed},
		{"two segments", good[:strings.LastIndexByte(good, '.')], identity.ErrTokenMalformed},
		{"four segments", good + ".", identity.ErrTokenMalformed},
		{"malleable signature encoding", flipSigTail(good), identity.ErrTokenMalformed},
		{"padded signature", good + "==", identity.ErrTokenMalformed},
		{"standard alphabet", strings.NewReplacer("-", "+", "_", "/").Replace(good), identity.ErrTokenMalformed},
		{"whitespace in segment", strings.Replace(good, ".", ". ", 1), identity.ErrTokenMalformed},
		{"oversized", good + strings.Repeat("A", identity.MaxTokenSize), identity.ErrTokenMalformed},

		// Header.
		{"extra header member", forge(k, `{"alg":"EdDSA","typ":"JWT","kid":"`+id+`","crit":["exp"]}`, stdClaims(k, iat, exp)), identity.ErrTokenHeader},
		{"embedded jwk", forge(k, `{"alg":"EdDSA","typ":"JWT","kid":"`+id+`","jwk":{}}`, stdClaims(k, iat, exp)), identity.ErrTokenHeader},
		{"missing typ", forge(k, `{"alg":"EdDSA","kid":"`+id+`"}`, stdClaims(k, iat, exp)), identity.ErrTokenHeader},
		{"missing kid", forge(k, `{"alg":"EdDSA","typ":"JWT"}`, stdClaims(k, iat, exp)), identity.ErrTokenHeader},
		{"lower-case typ", forge(k, `{"alg":"EdDSA","typ":"jwt","kid":"`+id+`"}`, stdClaims(k, iat, exp)), identity.ErrTokenHeader},
		{"capitalised header names", forge(k, `{"ALG":"EdDSA","TYP":"JWT","KID":"`+id+`"}`, stdClaims(k, iat, exp)), identity.ErrTokenHeader},
		{"duplicate alg", forge(k, `{"alg":"none","alg":"EdDSA","typ":"JWT","kid":"`+id+`"}`, stdClaims(k, iat, exp)), identity.ErrTokenMalformed},
		{"alg none", forge(k, `{"alg":"none","typ":"JWT","kid":"`+id+`"}`, stdClaims(k, iat, exp)), identity.ErrTokenAlgorithm},
		{"alg Ed25519", forge(k, `{"alg":"Ed25519","typ":"JWT","kid":"`+id+`"}`, stdClaims(k, iat, exp)), identity.ErrTokenAlgorithm},
		{"alg not a string", forge(k, `{"alg":1,"typ":"JWT","kid":"`+id+`"}`, stdClaims(k, iat, exp)), identity.ErrTokenHeader},
		{"header array", forge(k, `[]`, stdClaims(k, iat, exp)), identity.ErrTokenMalformed},
		{"header null", forge(k, `null`, stdClaims(k, iat, exp)), identity.ErrTokenMalformed},
		{"header lone surrogate", forge(k, `{"alg":"EdDSA","typ":"JWT","kid":"`+id+`\ud800"}`, stdClaims(k, iat, exp)), identity.ErrTokenMalformed},
		{"header trailing data", forge(k, stdHeader(k)+"{}", stdClaims(k, iat, exp)), identity.ErrTokenMalformed},

		// Claims.
		{"duplicate aud member", forge(k, stdHeader(k), claimsWith(`"aud":"https://evil.example",`+timesAud)), identity.ErrTokenMalformed},
		{"capitalised claim names", forge(k, stdHeader(k), fmt.Sprintf(`{"ISS":"%s","SUB":"%s","AUD":"%s","IAT":%d,"EXP":%d}`, id, id, testAud, iat, exp)), identity.ErrTokenClaims},
		{"capitalised AUD beside iss", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"AUD":"%s","iat":%d,"exp":%d`, testAud, iat, exp))), identity.ErrTokenClaims},
		{"aud array", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":["%s"],"iat":%d,"exp":%d`, testAud, iat, exp))), identity.ErrTokenClaims},
		{"exp exponent before iat", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":%d,"exp":1.7e9`, testAud, iat))), identity.ErrTokenLifetime},
		{"iat negative zero", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":-0,"exp":%d`, testAud, exp))), identity.ErrTokenClaims},
		{"iat negative zero fraction", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":-0.0,"exp":%d`, testAud, exp))), identity.ErrTokenClaims},
		{"iat negative fraction", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":-0.5,"exp":%d`, testAud, exp))), identity.ErrTokenClaims},
		{"exp just above 2^53-1", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":%d,"exp":9007199254740991.25`, testAud, iat))), identity.ErrTokenClaims},
		{"exp unsafe fraction", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":%d,"exp":9007199254740993.5`, testAud, iat))), identity.ErrTokenMalformed},
		{"exp unsafe exponent", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":%d,"exp":1e16`, testAud, iat))), identity.ErrTokenMalformed},
		{"exp huge exponent", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":%d,"exp":1e-99999999999999`, testAud, iat))), identity.ErrTokenClaims},
		{"nbf fraction in the future", forge(k, stdHeader(k), claimsWith(timesAud+fmt.Sprintf(`,"nbf":%d.000001`, testNow+60))), identity.ErrTokenNotBefore},
		{"iat fraction in the future", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":%d.5,"exp":%d`, testAud, testNow+60, testNow+100))), identity.ErrTokenIssuedAt},
		{"lifetime over 300 s by 1e-10 s", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":%d.25,"exp":%d.2500000001`, testAud, testNow-10, testNow+290))), identity.ErrTokenLifetime},
		{"iat string", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":"%d","exp":%d`, testAud, iat, exp))), identity.ErrTokenClaims},
		{"iat negative", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":-1,"exp":%d`, testAud, exp))), identity.ErrTokenClaims},
		{"exp unsafe integer", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":%d,"exp":9007199254740993`, testAud, iat))), identity.ErrTokenMalformed},
		{"missing exp", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":%d`, testAud, iat))), identity.ErrTokenClaims},
		{"iss null", forge(k, stdHeader(k), fmt.Sprintf(`{"iss":null,"sub":"%s",%s}`, id, timesAud)), identity.ErrTokenClaims},
		{"claims array", forge(k, stdHeader(k), `[]`), identity.ErrTokenMalformed},
		{"invalid UTF-8 in a claim", forge(k, stdHeader(k), claimsWith(timesAud+",\"x\":\"\xff\"")), identity.ErrTokenMalformed},
		{"nbf in the future", forge(k, stdHeader(k), claimsWith(timesAud+fmt.Sprintf(`,"nbf":%d`, testNow+61))), identity.ErrTokenNotBefore},
		{"nbf not an integer", forge(k, stdHeader(k), claimsWith(timesAud+`,"nbf":"soon"`)), identity.ErrTokenClaims},

		// Identity.
		{"sub differs", forge(k, stdHeader(k), fmt.Sprintf(`{"iss":"%s","sub":"%s",%s}`, id, other, timesAud)), identity.ErrTokenIssuer},
		{"kid differs", forge(k, `{"alg":"EdDSA","typ":"JWT","kid":"`+other+`"}`, stdClaims(k, iat, exp)), identity.ErrTokenIssuer},
		{"kid not an agent id", forge(k, `{"alg":"EdDSA","typ":"JWT","kid":"did:agent:x"}`, fmt.Sprintf(`{"iss":"did:agent:x","sub":"did:agent:x",%s}`, timesAud)), identity.ErrTokenIssuer},
		{"signed by another key", forge(seedKey(t, 8), stdHeader(k), stdClaims(k, iat, exp)), identity.ErrTokenSignature},

		// Audience.
		{"audience with trailing slash", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s/","iat":%d,"exp":%d`, testAud, iat, exp))), identity.ErrTokenAudience},
		{"audience with :443", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s:443","iat":%d,"exp":%d`, testAud, iat, exp))), identity.ErrTokenAudience},
		{"audience upper case", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":%d,"exp":%d`, strings.ToUpper(testAud), iat, exp))), identity.ErrTokenAudience},

		// Times.
		{"lifetime too long", forge(k, stdHeader(k), stdClaims(k, testNow-10, testNow-10+301)), identity.ErrTokenLifetime},
		{"exp before iat", forge(k, stdHeader(k), stdClaims(k, testNow, testNow-1)), identity.ErrTokenLifetime},
		{"iat too far in the future", forge(k, stdHeader(k), stdClaims(k, testNow+61, testNow+61+300)), identity.ErrTokenIssuedAt},
		{"expired at exp", forge(k, stdHeader(k), stdClaims(k, testNow-300, testNow)), identity.ErrTokenExpired},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			claims, err := verifyAt(c.token, testNow)
			if !errors.Is(err, identity.ErrInvalidToken) {
				t.Fatalf("VerifyRequestToken = %+v, %v; want invalid_token", claims, err)
			}
			if !errors.Is(err, c.reason) {
				t.Errorf("error %v, want reason %v", err, c.reason)
			}
			var e *identity.Error
			if !errors.As(err, &e) || e.HTTPStatus() != http.StatusUnauthorized {
				t.Errorf("not an *Error with status 401: %#v", err)
			}
		})
	}

	// Small-order keys are refused by the strict signature rules.
	small := "did:agent:AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	tok := enc.EncodeToString([]byte(`{"alg":"EdDSA","typ":"JWT","kid":"`+small+`"}`)) + "." +
		enc.EncodeToString([]byte(fmt.Sprintf(`{"iss":"%s","sub":"%s",%s}`, small, small, timesAud))) + "." +
		enc.EncodeToString(append([]byte{1}, make([]byte, 63)...))
	if _, err := verifyAt(tok, testNow); !errors.Is(err, identity.ErrTokenSignature) || !errors.Is(err, identity.ErrSmallOrderA) {
		t.Errorf("small-order key: %v", err)
	}
}

func TestVerifyRequestTokenBoundaries(t *testing.T) {
	k := seedKey(t, 7)
	id := k.AgentID().String()
	claimsWith := func(members string) string {
		return fmt.Sprintf(`{"iss":"%s","sub":"%s",%s}`, id, id, members)
	}
	accept := []struct {
		name  string
		token string
	}{
		{"lifetime exactly 300 s", forge(k, stdHeader(k), stdClaims(k, testNow-10, testNow+290))},
		{"iat exactly 60 s ahead", forge(k, stdHeader(k), stdClaims(k, testNow+60, testNow+360))},
		{"one second before exp", forge(k, stdHeader(k), stdClaims(k, testNow-299, testNow+1))},
		{"unknown claims are ignored", forge(k, stdHeader(k), fmt.Sprintf(`{"jti":"x","iss":"%s","sub":"%s","aud":"%s","iat":%d,"exp":%d,"AUD":"https://evil.example"}`, id, id, testAud, testNow, testNow+10))},
		{"nbf within skew", forge(k, stdHeader(k), fmt.Sprintf(`{"iss":"%s","sub":"%s","aud":"%s","iat":%d,"exp":%d,"nbf":%d}`, id, id, testAud, testNow, testNow+10, testNow+60))},
		{"insignificant whitespace", forge(k, " "+stdHeader(k)+"\n", " "+stdClaims(k, testNow, testNow+10)+" ")},
		{"iat fraction", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":%d.0,"exp":%d`, testAud, testNow-100, testNow+200)))},
		{"NumericDates with fractions", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":%d.25,"exp":%d.25,"nbf":%d.999`, testAud, testNow-10, testNow+290, testNow+59)))},
		{"NumericDates with exponents", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":1.7797536e9,"exp":17797539E2`, testAud)))},
		{"lifetime exactly 300 s with fractions", forge(k, stdHeader(k), claimsWith(fmt.Sprintf(`"aud":"%s","iat":%d.25,"exp":%d.250000000000`, testAud, testNow-10, testNow+290)))},
	}
	for _, c := range accept {
		t.Run(c.name, func(t *testing.T) {
			if _, err := verifyAt(c.token, testNow); err != nil {
				t.Fatal(err)
			}
		})
	}

	aud := identity.MustParseOrigin(testAud)
	long := forge(k, stdHeader(k), stdClaims(k, testNow-100, testNow+500))
	if _, err := identity.VerifyRequestToken(long, aud, &identity.TokenVerifyOptions{MaxLifetime: 600 * time.Second, Now: fixedClock(testNow)}); err != nil {
		t.Errorf("MaxLifetime 600 s: %v", err)
	}
	ahead := forge(k, stdHeader(k), stdClaims(k, testNow+1, testNow+100))
	if _, err := identity.VerifyRequestToken(ahead, aud, &identity.TokenVerifyOptions{Skew: -1, Now: fixedClock(testNow)}); !errors.Is(err, identity.ErrTokenIssuedAt) {
		t.Errorf("no skew: %v", err)
	}
	if _, err := identity.VerifyRequestToken(ahead, aud, &identity.TokenVerifyOptions{Skew: 0, Now: fixedClock(testNow)}); err != nil {
		t.Errorf("default skew: %v", err)
	}
	if _, err := identity.VerifyRequestToken(ahead, identity.Origin{}, &identity.TokenVerifyOptions{Now: fixedClock(testNow)}); !errors.Is(err, identity.ErrTokenAudience) {
		t.Errorf("zero audience: %v", err)
	}
	// Real clock: a freshly minted token verifies with nil options.
	tok, err := identity.MintRequestToken(context.Background(), k, aud, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := identity.VerifyRequestToken(tok, aud, nil); err != nil {
		t.Error(err)
	}
}

func TestBearerToken(t *testing.T) {
	cases := []struct {
		headers []string
		want    string
	}{
		{[]string{"Bearer abc.def.ghi"}, "abc.def.ghi"},
		{[]string{"bearer abc"}, "abc"},
		{[]string{"BEARER  abc"}, "abc"},
		{nil, ""},
		{[]string{"Basic abc"}, ""},
		{[]string{"Bearer"}, ""},
		{[]string{"Bearer "}, ""},
		{[]string{"Bearer a b"}, ""},
		{[]string{"Bearer a", "Bearer b"}, ""},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "https://api.example.com/", nil)
		for _, h := range c.headers {
			r.Header.Add("Authorization", h)
		}
		got, err := identity.BearerToken(r)
		if got != c.want || (c.want == "") != (err != nil) {
			t.Errorf("%q: %q, %v", c.headers, got, err)
		}
		if err != nil && (!errors.Is(err, identity.ErrInvalidToken) || !errors.Is(err, identity.ErrTokenMalformed)) {
			t.Errorf("%q: error %v", c.headers, err)
		}
	}
}

// closeRecorder records whether a request body was closed.
type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeRecorder) Close() error { c.closed.Store(true); return nil }

func TestTokenTransport(t *testing.T) {
	k := seedKey(t, 7)
	loop := &identity.OriginOptions{AllowLoopbackHTTP: true}
	var tokens sync.Map
	var srvOrigin identity.Origin
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claims, err := identity.VerifyRequest(r, srvOrigin, nil)
		if err != nil {
			identity.WriteError(w, err)
			return
		}
		tok, _ := identity.BearerToken(r)
		if _, dup := tokens.LoadOrStore(tok, true); dup {
			identity.WriteError(w, identity.NewError(identity.CodeInvalidToken, "token reused"))
			return
		}
		fmt.Fprint(w, claims.Issuer)
	}))
	defer srv.Close()
	var err error
	if srvOrigin, err = identity.ParseOrigin(srv.URL, loop); err != nil {
		t.Fatal(err)
	}

	var tick atomic.Int64
	tick.Store(time.Now().Unix())
	client := &http.Client{Transport: &identity.TokenTransport{
		Signer:  k,
		Mint:    &identity.MintOptions{Now: func() time.Time { return time.Unix(tick.Add(1), 0) }},
		Origins: loop,
	}}
	for _, path := range []string{"/a", "/b/c?x=1"} {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := identity.ReadError(resp); err != nil || string(body) != k.AgentID().String() {
			t.Fatalf("%s: %v %s", path, err, body)
		}
		if req.Header.Get("Authorization") != "" {
			t.Error("RoundTrip modified the caller's request")
		}
	}

	// Without the loopback option a plain-HTTP URL has no valid origin; the
	// request body is still closed.
	strict := &http.Client{Transport: &identity.TokenTransport{Signer: k}}
	body := &closeRecorder{Reader: strings.NewReader("x")}
	req, _ := http.NewRequest("POST", srv.URL+"/a", body)
	if _, err := strict.Do(req); !errors.Is(err, identity.ErrOriginScheme) {
		t.Errorf("strict transport: %v", err)
	}
	if !body.closed.Load() {
		t.Error("request body not closed on error")
	}
	if _, err := (&identity.TokenTransport{}).RoundTrip(httptest.NewRequest("GET", "https://a.example/", nil)); err == nil {
		t.Error("transport without signer succeeded")
	}
}

// NumericDates (RFC 7519) may have a fraction, and the verifier compares
// them exactly: no float rounding moves a boundary (RFC 7519 §2, Identity §7).
func TestVerifyRequestTokenFractionalDates(t *testing.T) {
	k := seedKey(t, 7)
	id := k.AgentID().String()
	aud := identity.MustParseOrigin(testAud)
	token := func(iat, exp string) string {
		return forge(k, stdHeader(k), fmt.Sprintf(`{"iss":"%s","sub":"%s","aud":"%s","iat":%s,"exp":%s}`, id, id, testAud, iat, exp))
	}
	at := func(tok string, sec, nsec int64) error {
		_, err := identity.VerifyRequestToken(tok, aud, &identity.TokenVerifyOptions{Now: func() time.Time { return time.Unix(sec, nsec) }})
		return err
	}
	iat := fmt.Sprint(testNow - 100)

	// exp = now + 0.5 s: valid until exactly that instant.
	half := token(iat, fmt.Sprintf("%d.5", testNow))
	for _, c := range []struct {
		nsec    int64
		expired bool
	}{{0, false}, {499_999_999, false}, {500_000_000, true}, {500_000_001, true}} {
		err := at(half, testNow, c.nsec)
		if c.expired != errors.Is(err, identity.ErrTokenExpired) || !c.expired && err != nil {
			t.Errorf("exp now+0.5 s at now+%d ns: %v", c.nsec, err)
		}
	}
	claims, err := identity.VerifyRequestToken(half, aud, &identity.TokenVerifyOptions{Now: fixedClock(testNow)})
	if err != nil || !claims.ExpiresAt.Equal(time.Unix(testNow, 500_000_000)) {
		t.Errorf("claims %+v, %v", claims, err)
	}

	// A fraction below float64 resolution at this magnitude: as a float,
	// exp would equal now and the token would be expired.
	tiny := token(iat, fmt.Sprintf("%d.0000000001", testNow))
	if err := at(tiny, testNow, 0); err != nil {
		t.Errorf("exp 1e-10 s after now: %v", err)
	}
	if err := at(tiny, testNow, 1); !errors.Is(err, identity.ErrTokenExpired) {
		t.Errorf("exp 1e-10 s after now, 1 ns later: %v", err)
	}
	// The same exp in exponent form.
	if err := at(token(iat, fmt.Sprintf("%d0000000001e-10", testNow)), testNow, 0); err != nil {
		t.Errorf("exponent form: %v", err)
	}

	// iat at exactly now + 60 s skew is accepted, 1 ns beyond is not.
	skewed := token(fmt.Sprintf("%d.000000001", testNow+60), fmt.Sprint(testNow+100))
	if err := at(skewed, testNow, 1); err != nil {
		t.Errorf("iat = now + 60 s: %v", err)
	}
	if err := at(skewed, testNow, 0); !errors.Is(err, identity.ErrTokenIssuedAt) {
		t.Errorf("iat = now + 60 s + 1 ns: %v", err)
	}

	// exp − iat compared exactly against the 300 s maximum.
	if err := at(token("1779753600.1", "1779753900.1"), testNow, 0); err != nil {
		t.Errorf("lifetime 300 s: %v", err)
	}
	if err := at(token("1779753600.1", "1779753900.10000000000000000001"), testNow, 0); !errors.Is(err, identity.ErrTokenLifetime) {
		t.Errorf("lifetime 300 s + 1e-20 s: %v", err)
	}
	// exp must be strictly after iat, however small the difference.
	if err := at(token("1779753650.5", "1779753650.5000"), testNow, 0); !errors.Is(err, identity.ErrTokenLifetime) {
		t.Errorf("exp = iat: %v", err)
	}
	if err := at(token("1779753650.5", "17797536505000000000000001e-16"), 1779753650, 0); err != nil {
		t.Errorf("exp = iat + 1e-16 s: %v", err)
	}
}

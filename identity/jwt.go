package identity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/internal/b64url"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// Request token defaults (Identity §7).
const (
	// DefaultTokenTTL is the lifetime MintRequestToken gives a token and the
	// longest lifetime (exp − iat) VerifyRequestToken accepts by default.
	DefaultTokenTTL = 300 * time.Second
	// DefaultTokenSkew is how far in the future VerifyRequestToken lets iat
	// be, to tolerate clocks that run ahead.
	DefaultTokenSkew = 60 * time.Second
	// MaxTokenSize bounds the compact token VerifyRequestToken will parse.
	MaxTokenSize = 8 << 10
)

// Reasons a request token is rejected. VerifyRequestToken returns an *Error
// with code invalid_token that wraps exactly one of them (and, for
// ErrTokenSignature, also the invalid_signature error with the strict
// verification reason).
var (
	ErrTokenMalformed = errors.New("token: not three canonical base64url segments of strict JSON objects")
	ErrTokenHeader    = errors.New(`token: header is not exactly {"alg","typ":"JWT","kid"}`)
	ErrTokenAlgorithm = errors.New("token: alg is not EdDSA")
	ErrTokenClaims    = errors.New("token: a required claim is missing or has the wrong type")
	ErrTokenIssuer    = errors.New("token: kid, iss and sub are not one Agent ID")
	ErrTokenSignature = errors.New("token: signature does not verify")
	ErrTokenAudience  = errors.New("token: aud is not this service's origin")
	ErrTokenLifetime  = errors.New("token: exp is not after iat, or the lifetime exceeds the maximum")
	ErrTokenIssuedAt  = errors.New("token: iat is too far in the future")
	ErrTokenNotBefore = errors.New("token: nbf is in the future")
	ErrTokenExpired   = errors.New("token: expired")
)

// TokenClaims are the verified claims of a request token.
type TokenClaims struct {
	// Issuer is the Agent ID in kid, iss and sub; the key that signed.
	Issuer AgentID
	// Audience is the service origin the token was minted for.
	Audience Origin
	// IssuedAt and ExpiresAt are iat and exp, to the nanosecond (a finer
	// fraction is truncated here; verification compared the exact values).
	IssuedAt, ExpiresAt time.Time
}

// MintOptions configures MintRequestToken. A nil *MintOptions means defaults.
type MintOptions struct {
	// TTL is the token lifetime, truncated to whole seconds; 0 means
	// DefaultTokenTTL. Services reject lifetimes above their maximum
	// (300 s by default), so longer values are rarely useful.
	TTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// MintRequestToken returns a compact request token for audience:
//
//	header {"alg":"EdDSA","typ":"JWT","kid":<Agent ID>}
//	claims {"iss":<Agent ID>,"sub":<Agent ID>,"aud":<origin>,"iat":<s>,"exp":<s>}
//
// signed by signer over the ASCII signing input. The token authorizes one
// request to one origin; mint a fresh one per request (see TokenTransport).
func MintRequestToken(ctx context.Context, signer Signer, audience Origin, opts *MintOptions) (string, error) {
	ttl, now := DefaultTokenTTL, time.Now
	if opts != nil {
		if opts.TTL != 0 {
			ttl = opts.TTL
		}
		if opts.Now != nil {
			now = opts.Now
		}
	}
	secs := int64(ttl / time.Second)
	if secs < 1 {
		return "", fmt.Errorf("identity: token TTL %v is under one second", ttl)
	}
	if signer == nil {
		return "", errors.New("identity: nil Signer")
	}
	if audience.IsZero() {
		return "", errors.New("identity: token audience is the zero Origin")
	}
	iat := now().Unix()
	if iat < 0 || iat+secs > strictjson.MaxSafeInteger {
		return "", fmt.Errorf("identity: clock value %d out of range", iat)
	}
	id := signer.AgentID().String()
	header := `{"alg":"EdDSA","typ":"JWT","kid":"` + id + `"}`
	claims, err := jsontext.AppendQuote([]byte(`{"iss":"`+id+`","sub":"`+id+`","aud":`), audience.String())
	if err != nil {
		return "", err
	}
	claims = fmt.Appendf(claims, `,"iat":%d,"exp":%d}`, iat, iat+secs)

	input := b64url.AppendEncode(nil, []byte(header))
	input = append(input, '.')
	input = b64url.AppendEncode(input, claims)
	sig, err := signer.Sign(ctx, input)
	if err != nil {
		return "", fmt.Errorf("identity: signing request token: %w", err)
	}
	if len(sig) != 64 {
		return "", fmt.Errorf("identity: signer returned a %d-byte signature", len(sig))
	}
	input = append(input, '.')
	return string(b64url.AppendEncode(input, sig)), nil
}

// TokenVerifyOptions configures the verification of request tokens
// (VerifyRequestToken, VerifyRequest). A nil *TokenVerifyOptions means
// defaults.
type TokenVerifyOptions struct {
	// MaxLifetime caps exp − iat; 0 means DefaultTokenTTL (300 s).
	MaxLifetime time.Duration
	// Skew is how far iat may lie in the future; 0 means DefaultTokenSkew
	// (60 s) and a negative value allows none.
	Skew time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// tokenHeader and tokenClaims hold raw members so presence and JSON kind
// can be checked exactly; decoding is case-sensitive.
type tokenHeader struct {
	Alg jsontext.Value `json:"alg"`
	Typ jsontext.Value `json:"typ"`
	Kid jsontext.Value `json:"kid"`
}

type tokenClaims struct {
	Iss jsontext.Value `json:"iss"`
	Sub jsontext.Value `json:"sub"`
	Aud jsontext.Value `json:"aud"`
	Iat jsontext.Value `json:"iat"`
	Exp jsontext.Value `json:"exp"`
	Nbf jsontext.Value `json:"nbf"`
}

// VerifyRequestToken verifies a compact request token for the service at
// audience and returns its claims. It implements Identity §7 itself rather
// than through a general JWT library, so that nothing lenient is in the
// path:
//
//   - exactly three segments, each canonical unpadded base64url, at most
//     MaxTokenSize bytes in all;
//   - header and claims are strict JSON objects (no duplicate members,
//     valid Unicode, safe integers; names match case-sensitively);
//   - the header is exactly {"alg":"EdDSA","typ":"JWT","kid":…};
//   - kid, iss and sub are the same valid Agent ID;
//   - the signature verifies with the strict rules of VerifySignature over
//     the ASCII signing input;
//   - aud is a string equal to audience;
//   - iat and exp are RFC 7519 NumericDates: JSON numbers, which may have
//     a fraction or an exponent, from 0 to 2^53−1 (a minus sign, even on
//     zero, is refused); exp > iat, exp − iat ≤ MaxLifetime, and
//     iat ≤ now + Skew. Every comparison is exact: the claims are compared
//     as decimals, not floats, with the clock read to the nanosecond and
//     MaxLifetime and Skew in whole seconds;
//   - now < exp: exp is the first second at which the token is expired, as
//     in RFC 7519; no skew is applied to exp (iat's skew already covers a
//     fast client clock, and a slow one only shortens the token's life);
//   - now − iat ≤ MaxLifetime + Skew (implied by the two rules above; kept
//     as a guard);
//   - an nbf claim, which the protocol does not use, is honoured like iat
//     if present. Other claims are ignored: the protocol fixes the header
//     but not the claim set.
//
// Every failure is an *Error with code invalid_token wrapping one of the
// ErrToken… reasons, so callers can tell why with errors.Is.
func VerifyRequestToken(token string, audience Origin, opts *TokenVerifyOptions) (*TokenClaims, error) {
	maxLife, skew, now := DefaultTokenTTL, DefaultTokenSkew, time.Now
	if opts != nil {
		if opts.MaxLifetime > 0 {
			maxLife = opts.MaxLifetime
		}
		if opts.Skew > 0 {
			skew = opts.Skew
		} else if opts.Skew < 0 {
			skew = 0
		}
		if opts.Now != nil {
			now = opts.Now
		}
	}
	if len(token) > MaxTokenSize {
		return nil, tokenError("token too large", ErrTokenMalformed)
	}
	h64, rest, ok1 := strings.Cut(token, ".")
	c64, s64, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s64, ".") {
		return nil, tokenError("token is not three segments", ErrTokenMalformed)
	}
	hb, err1 := b64url.Decode(h64)
	cb, err2 := b64url.Decode(c64)
	var sig [64]byte
	err3 := b64url.DecodeFixed(sig[:], s64)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, tokenError("token segment is not canonical base64url", ErrTokenMalformed)
	}

	var h tokenHeader
	if !isObject(hb) || strictjson.Validate(hb) != nil {
		return nil, tokenError("token header is not a strict JSON object", ErrTokenMalformed)
	}
	if strictjson.Unmarshal(hb, &h) != nil {
		return nil, tokenError("token header has a member other than alg, typ and kid", ErrTokenHeader)
	}
	alg, okA := jsonString(h.Alg)
	typ, okT := jsonString(h.Typ)
	kid, okK := jsonString(h.Kid)
	if !okA || !okT || !okK || typ != "JWT" {
		return nil, tokenError("token header is not exactly alg, typ JWT and kid", ErrTokenHeader)
	}
	if alg != "EdDSA" {
		return nil, tokenError("token alg is not EdDSA", ErrTokenAlgorithm)
	}

	var c tokenClaims
	if !isObject(cb) || strictjson.UnmarshalOpen(cb, &c) != nil {
		return nil, tokenError("token claims are not a strict JSON object", ErrTokenMalformed)
	}
	iss, okI := jsonString(c.Iss)
	sub, okS := jsonString(c.Sub)
	aud, okU := jsonString(c.Aud)
	iat, okT1 := jsonDate(c.Iat)
	exp, okT2 := jsonDate(c.Exp)
	if !okI || !okS || !okU || !okT1 || !okT2 {
		return nil, tokenError("token claims need string iss, sub, aud and NumericDate iat, exp", ErrTokenClaims)
	}
	nbf, hasNbf := numericDate{}, len(c.Nbf) > 0
	if hasNbf {
		var ok bool
		if nbf, ok = jsonDate(c.Nbf); !ok {
			return nil, tokenError("token nbf is not a NumericDate", ErrTokenClaims)
		}
	}
	if kid != iss || sub != iss {
		return nil, tokenError("token kid, iss and sub differ", ErrTokenIssuer)
	}
	id, err := ParseAgentID(kid)
	if err != nil {
		return nil, &Error{Code: CodeInvalidToken, Message: "token kid is not an Agent ID: " + causeText(err), Err: fmt.Errorf("%w: %w", ErrTokenIssuer, err)}
	}

	if err := VerifySignature(id.key[:], []byte(token[:len(h64)+1+len(c64)]), sig[:]); err != nil {
		return nil, &Error{Code: CodeInvalidToken, Message: "token signature does not verify: " + causeText(err), Err: fmt.Errorf("%w: %w", ErrTokenSignature, err)}
	}

	if audience.IsZero() || aud != audience.String() {
		return nil, tokenError("token aud is not this service's origin", ErrTokenAudience)
	}
	// Exact comparisons: the claims as decimals, the clock to the
	// nanosecond, the bounds in whole seconds.
	life := int64(maxLife / time.Second)
	sk := int64(skew / time.Second)
	t := dateOf(now())
	switch {
	case exp.cmp(iat) <= 0:
		return nil, tokenError("token exp is not after iat", ErrTokenLifetime)
	case exp.cmp(iat.add(life)) > 0:
		return nil, tokenError(fmt.Sprintf("token lifetime exceeds %d s", life), ErrTokenLifetime)
	case iat.cmp(t.add(sk)) > 0:
		return nil, tokenError("token iat is in the future", ErrTokenIssuedAt)
	case hasNbf && nbf.cmp(t.add(sk)) > 0:
		return nil, tokenError("token nbf is in the future", ErrTokenNotBefore)
	case t.cmp(exp) >= 0:
		return nil, tokenError("token expired", ErrTokenExpired)
	case t.cmp(iat.add(life+sk)) > 0:
		return nil, tokenError("token iat is too old", ErrTokenExpired)
	}
	return &TokenClaims{
		Issuer:    id,
		Audience:  audience,
		IssuedAt:  iat.time(),
		ExpiresAt: exp.time(),
	}, nil
}

// causeText is the message of err's *Error, without its code.
func causeText(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return err.Error()
}

// isObject reports whether the JSON text b starts with an object.
func isObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

func tokenError(msg string, reason error) error {
	return &Error{Code: CodeInvalidToken, Message: msg, Err: reason}
}

// jsonString decodes a raw JSON string; ok is false when v is absent or not
// a string.
func jsonString(v jsontext.Value) (string, bool) {
	s, err := strictjson.String(v)
	return s, err == nil
}

// jsonDate decodes a raw JSON number as a NumericDate in 0 … 2^53−1
// (see parseNumericDate); ok is false when v is absent or not a number.
func jsonDate(v jsontext.Value) (numericDate, bool) {
	if v.Kind() != '0' {
		return numericDate{}, false
	}
	return parseNumericDate(v)
}

// BearerToken returns the token of an "Authorization: Bearer <token>"
// request header (the scheme is matched case-insensitively). A missing or
// malformed header is an *Error with code invalid_token wrapping
// ErrTokenMalformed.
func BearerToken(r *http.Request) (string, error) {
	vals := r.Header.Values("Authorization")
	if len(vals) != 1 {
		return "", tokenError("request needs exactly one Authorization header", ErrTokenMalformed)
	}
	scheme, tok, ok := strings.Cut(vals[0], " ")
	tok = strings.TrimLeft(tok, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" || strings.ContainsAny(tok, " \t") {
		return "", tokenError("Authorization is not a Bearer token", ErrTokenMalformed)
	}
	return tok, nil
}

// VerifyRequest verifies the bearer token of an incoming request for the
// service at audience: BearerToken, then VerifyRequestToken.
func VerifyRequest(r *http.Request, audience Origin, opts *TokenVerifyOptions) (*TokenClaims, error) {
	tok, err := BearerToken(r)
	if err != nil {
		return nil, err
	}
	return VerifyRequestToken(tok, audience, opts)
}

// TokenTransport is an http.RoundTripper that authenticates every request
// with a freshly minted request token for the origin of the request URL:
// one audience per origin, never per endpoint. It suits clients that
// reconnect (an SSE stream gets a new token on every attempt).
type TokenTransport struct {
	// Signer signs the tokens; required.
	Signer Signer
	// Base performs the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Mint configures the tokens; nil means defaults.
	Mint *MintOptions
	// Origins configures how the request URL's origin is computed; set
	// AllowLoopbackHTTP to talk to a local development service.
	Origins *OriginOptions
}

// RoundTrip implements http.RoundTripper. It does not modify req.
func (t *TokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	fail := func(err error) (*http.Response, error) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	if t.Signer == nil {
		return fail(errors.New("identity: TokenTransport has no Signer"))
	}
	aud, err := OriginOf(req.URL, t.Origins)
	if err != nil {
		return fail(err)
	}
	tok, err := MintRequestToken(req.Context(), t.Signer, aud, t.Mint)
	if err != nil {
		return fail(err)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

package envelope_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gowebpki/jcs"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

var testKey, _ = identity.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))

const t0 = 1779753600000

func testEvent(nonce int64, payload string) envelope.Event {
	return envelope.Event{
		Protocol: "agent-profile/1.0", Type: "profile.update", Actor: testKey.AgentID(),
		CreatedAt: t0, Nonce: nonce, Payload: jsontext.Value(payload),
	}
}

func mustSign(t testing.TB, ev envelope.Event) *envelope.Envelope {
	t.Helper()
	env, err := envelope.Sign(context.Background(), testKey, ev)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// wire returns the envelope as JSON with the event text replaced by
// mutate(event text); the hash and signature stay those of the original.
func wire(env *envelope.Envelope, mutate func(string) string) []byte {
	b := string(env.AppendJSON(nil))
	ev := string(env.Canonical())
	return []byte(strings.Replace(b, ev, mutate(ev), 1))
}

// TestParseRejects has one row per envelope-level MUST, each with the
// Identity error code a receiver must answer.
func TestParseRejects(t *testing.T) {
	env := mustSign(t, testEvent(5, `{"id":"x","name":"n"}`))
	good := string(env.AppendJSON(nil))
	rep := func(old, new string) []byte { return []byte(strings.Replace(good, old, new, 1)) }
	evRep := func(old, new string) []byte {
		return wire(env, func(s string) string { return strings.Replace(s, old, new, 1) })
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"§5 unknown envelope member", rep(`{"event"`, `{"x":1,"event"`), identity.ErrInvalidEvent},
		{"§5 missing signature", []byte(strings.Split(good, `,"signature"`)[0] + "}"), identity.ErrInvalidEvent},
		{"§4 duplicate envelope member", rep(`,"hash"`, `,"hash":"x","hash"`), identity.ErrInvalidEvent},
		{"§4 trailing data", append([]byte(good), " {}"...), identity.ErrInvalidEvent},
		{"§4 not an object", []byte(`[]`), identity.ErrInvalidEvent},
		{"§4 non-canonical hash encoding", rep(`"hash":"`, `"hash":"=`), identity.ErrInvalidEventHash},
		{"§4 signature wrong length", rep(`"signature":"`, `"signature":"AA`), identity.ErrInvalidSignature},
		{"§5 closed event: unknown field", evRep(`"actor"`, `"audience":"x","actor"`), identity.ErrInvalidEvent},
		{"§5 closed event: ADP field on a profile event", evRep(`"actor"`, `"room_id":"r","actor"`), identity.ErrInvalidEvent},
		{"§5 missing nonce", evRep(`"nonce":5,`, ``), identity.ErrInvalidEvent},
		{"§6.2 nonce zero", evRep(`"nonce":5`, `"nonce":0`), identity.ErrInvalidEvent},
		{"§6.2 nonce negative", evRep(`"nonce":5`, `"nonce":-5`), identity.ErrInvalidEvent},
		{"§6.2 nonce as float literal", evRep(`"nonce":5`, `"nonce":5.0`), identity.ErrInvalidEvent},
		{"§6.2 nonce as string", evRep(`"nonce":5`, `"nonce":"5"`), identity.ErrInvalidEvent},
		{"§4 nonce above 2^53-1", evRep(`"nonce":5`, `"nonce":9007199254740992`), identity.ErrInvalidEvent},
		{"§4 created_at negative", evRep(`"created_at":1779753600000`, `"created_at":-1`), identity.ErrInvalidEvent},
		{"§4 created_at negative zero", evRep(`"created_at":1779753600000`, `"created_at":-0`), identity.ErrInvalidEvent},
		{"§6.2 nonce negative zero", evRep(`"nonce":5`, `"nonce":-0`), identity.ErrInvalidEvent},
		{"§4 unsafe integer in payload", evRep(`"name":"n"`, `"name":"n","x":-9007199254740992`), identity.ErrInvalidEvent},
		{"§4 duplicate name in payload", evRep(`"name":"n"`, `"name":"n","name":"m"`), identity.ErrInvalidEvent},
		{"§4 unpaired surrogate in payload", evRep(`"name":"n"`, `"name":"\ud800"`), identity.ErrInvalidEvent},
		{"§5 type not dot-separated", evRep(`"profile.update"`, `"profile"`), identity.ErrInvalidEvent},
		{"§3 actor with padding", evRep(`iw"`, `iw="`), identity.ErrInvalidActor},
		{"§3 actor wrong prefix", evRep(`"did:agent:`, `"did:key:`), identity.ErrInvalidActor},
		{"§5 protocol empty", evRep(`"agent-profile/1.0"`, `""`), identity.ErrInvalidEvent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := envelope.Parse(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := envelope.Parse(make([]byte, envelope.MaxSize+1)); !errors.Is(err, identity.ErrPayloadTooLarge) {
		t.Errorf("oversized envelope: %v", err)
	}
}

func TestVerifyRejects(t *testing.T) {
	env := mustSign(t, testEvent(5, `{"id":"x","name":"n"}`))
	// Changing the event changes its hash.
	b := wire(env, func(s string) string { return strings.Replace(s, `"name":"n"`, `"name":"m"`, 1) })
	if _, err := envelope.Verify(b); !errors.Is(err, identity.ErrInvalidEventHash) {
		t.Errorf("tampered event: %v", err)
	}
	// A signature from another key over the right hash.
	other, _ := identity.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32))
	h := env.Hash()
	sig, _ := other.Sign(context.Background(), h[:])
	good := env.AppendJSON(nil)
	s := env.Signature()
	forged := bytes.Replace(good, []byte(b64(s[:])), []byte(b64(sig)), 1)
	_, err := envelope.Verify(forged)
	if !errors.Is(err, identity.ErrInvalidSignature) || !errors.Is(err, identity.ErrSignatureMismatch) {
		t.Errorf("foreign signature: %v", err)
	}
	if _, err := envelope.Verify(good); err != nil {
		t.Fatal(err)
	}
}

func TestSign(t *testing.T) {
	ctx := context.Background()
	ev := testEvent(5, `{"b":[],"a":{}, "c" : 1.50}`)
	env := mustSign(t, ev)
	want := `"payload":{"a":{},"b":[],"c":1.5}`
	if !strings.Contains(string(env.Canonical()), want) {
		t.Errorf("explicit empties not preserved: %s", env.Canonical())
	}
	other, _ := identity.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32))
	if _, err := envelope.Sign(ctx, other, ev); !errors.Is(err, identity.ErrInvalidActor) {
		t.Errorf("foreign actor: %v", err)
	}
	bad := ev
	bad.Payload = jsontext.Value(`{"a":1,"a":2}`)
	if _, err := envelope.Sign(ctx, testKey, bad); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Errorf("duplicate payload member: %v", err)
	}
	bad = ev
	bad.Ext = envelope.Fields{{Name: "room_id", Value: jsontext.Value(`"r"`)}}
	if _, err := envelope.Sign(ctx, testKey, bad); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Errorf("undeclared field: %v", err)
	}
	bad = ev
	bad.Nonce = 0
	if _, err := envelope.Sign(ctx, testKey, bad); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Errorf("zero nonce: %v", err)
	}
}

func TestAuthor(t *testing.T) {
	now := time.UnixMilli(t0)
	a := &envelope.Author{Signer: testKey, Nonces: identity.NewNonceSource(nil), Now: func() time.Time { return now }}
	var last int64
	for i := 0; i < 3; i++ {
		env, err := a.Sign(context.Background(), "agent-profile/1.0", "profile.update", jsontext.Value(`{}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		ev := env.Event()
		if ev.CreatedAt != t0 || ev.Nonce <= last || ev.Nonce < t0 {
			t.Fatalf("created_at %d nonce %d after %d", ev.CreatedAt, ev.Nonce, last)
		}
		last = ev.Nonce
	}
}

func TestVerifierWindowAndCache(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(t0)
	v := envelope.NewVerifier(&envelope.VerifierOptions{Now: func() time.Time { return now }})
	accept := func(n int64, createdAt int64) error {
		ev := testEvent(n, `{}`)
		ev.CreatedAt = createdAt
		_, _, err := v.Accept(ctx, mustSign(t, ev).AppendJSON(nil), nil)
		return err
	}
	if err := accept(10, t0-300_000); err != nil {
		t.Fatalf("edge of the past window: %v", err)
	}
	if err := accept(11, t0-300_001); !errors.Is(err, identity.ErrTimestampOutOfWindow) {
		t.Errorf("stale: %v", err)
	}
	if err := accept(12, t0+300_001); !errors.Is(err, identity.ErrTimestampOutOfWindow) {
		t.Errorf("future: %v", err)
	}
	err := accept(10, t0)
	var e *identity.Error
	if !errors.As(err, &e) || e.Code != identity.CodeNonceNotGreater || e.MaxSeenNonce != 10 {
		t.Errorf("reused nonce: %v", err)
	}
	if v.MaxSeenNonce(testKey.AgentID()) != 10 {
		t.Error("MaxSeenNonce")
	}
	// The cache is valid for two windows after the latest acceptance.
	now = now.Add(599 * time.Second)
	if err := accept(9, now.UnixMilli()); !errors.Is(err, identity.ErrNonceNotGreater) {
		t.Errorf("within cache validity: %v", err)
	}
	now = now.Add(2 * time.Second)
	if err := accept(9, now.UnixMilli()); err != nil {
		t.Errorf("after cache validity the window alone protects: %v", err)
	}
}

func TestVerifierAcceptCallback(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(t0)
	v := envelope.NewVerifier(&envelope.VerifierOptions{Now: func() time.Time { return now }})
	b := mustSign(t, testEvent(20, `{}`)).AppendJSON(nil)
	boom := errors.New("protocol says no")
	if _, _, err := v.Accept(ctx, b, func(context.Context, *envelope.Envelope) error { return boom }); err != boom {
		t.Fatalf("got %v", err)
	}
	if v.MaxSeenNonce(testKey.AgentID()) != 0 {
		t.Fatal("a rejected write advanced the nonce")
	}
	if _, out, err := v.Accept(ctx, b, nil); err != nil || out != envelope.Fresh {
		t.Fatalf("%v %v", out, err)
	}
}

// historyFunc is a History from a function.
type historyFunc func(context.Context, envelope.Hash) (bool, error)

func (f historyFunc) Accepted(ctx context.Context, h envelope.Hash) (bool, error) { return f(ctx, h) }

// TestVerifierPerCallHistory: AcceptEnvelopeWith's history answers the
// exact-resubmission lookup (Identity §6.3) in place of the Verifier's,
// and nil falls back to the Verifier's.
func TestVerifierPerCallHistory(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(t0)
	var optionLookups int
	v := envelope.NewVerifier(&envelope.VerifierOptions{Now: func() time.Time { return now },
		History: historyFunc(func(context.Context, envelope.Hash) (bool, error) { optionLookups++; return false, nil })})
	env := mustSign(t, testEvent(30, `{}`))
	var asked envelope.Hash
	seen := historyFunc(func(_ context.Context, h envelope.Hash) (bool, error) { asked = h; return true, nil })
	out, err := v.AcceptEnvelopeWith(ctx, env, seen, func(context.Context, *envelope.Envelope) error {
		t.Fatal("the callback ran for a resubmission")
		return nil
	})
	if err != nil || out != envelope.Resubmission || asked != env.Hash() || optionLookups != 0 {
		t.Fatalf("per-call history: %v %v, asked %v, option lookups %d", out, err, asked, optionLookups)
	}
	failed := errors.New("store down")
	if _, err := v.AcceptEnvelopeWith(ctx, env, historyFunc(func(context.Context, envelope.Hash) (bool, error) { return false, failed }), nil); err != failed {
		t.Fatalf("a failing lookup: %v", err)
	}
	if out, err := v.AcceptEnvelopeWith(ctx, env, nil, nil); err != nil || out != envelope.Fresh || optionLookups != 1 {
		t.Fatalf("nil history: %v %v, option lookups %d", out, err, optionLookups)
	}
}

// TestVerifierConcurrentSameNonce: of many different envelopes that share a
// nonce, submitted at once, exactly one is accepted.
func TestVerifierConcurrentSameNonce(t *testing.T) {
	ctx := context.Background()
	v := envelope.NewVerifier(&envelope.VerifierOptions{Now: func() time.Time { return time.UnixMilli(t0) }})
	var envs [][]byte
	for i := range 16 {
		envs = append(envs, mustSign(t, testEvent(30, `{"i":`+strconv.Itoa(i)+`}`)).AppendJSON(nil))
	}
	var ok atomic.Int32
	var wg, started sync.WaitGroup
	started.Add(len(envs))
	for _, b := range envs {
		wg.Go(func() {
			started.Done()
			if _, _, err := v.Accept(ctx, b, func(context.Context, *envelope.Envelope) error {
				started.Wait() // every other submission is under way: they race this acceptance
				return nil
			}); err == nil {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 {
		t.Fatalf("%d accepted", ok.Load())
	}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// FuzzParse: whatever Parse accepts re-marshals to an envelope that parses
// to the same canonical event, and that canonical event is what
// gowebpki/jcs produces.
func FuzzParse(f *testing.F) {
	var v identityVectors
	loadJSON(f, "../identity/testdata/identity-1.0.vectors.json", &v)
	for _, e := range v.Events {
		f.Add(envelopeJSON(e.Hash, e.Event, e.Signature))
	}
	for _, raw := range v.Submissions.Envelopes {
		f.Add([]byte(raw))
	}
	f.Add(mustSign(f, testEvent(5, `{"b":[],"a":{"x":1.5e-7}}`)).AppendJSON(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := envelope.Parse(b)
		// ParsePrefix accepts what Parse accepts, and reports its
		// length; with bytes after it, it stops at the envelope's end.
		if penv, n, perr := envelope.ParsePrefix(append(bytes.Clone(b), `,"x":1}`...)); err == nil {
			if perr != nil || penv.Hash() != env.Hash() || !bytes.Equal(penv.Canonical(), env.Canonical()) || n != len(bytes.TrimRight(b, " \t\r\n")) {
				t.Fatalf("ParsePrefix: %v, length %d of %d", perr, n, len(b))
			}
		}
		if err != nil {
			var e *identity.Error
			if !errors.As(err, &e) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// The canonical payload found in the canonical event is the
		// payload canonicalized on its own.
		if want, err := strictjson.Canonicalize(env.Event().Payload); err != nil || !bytes.Equal(env.CanonicalPayload(), want) {
			t.Fatalf("CanonicalPayload %q, want %q (%v)", env.CanonicalPayload(), want, err)
		}
		// ParsedCanonical claims only what is true: the text read is
		// AppendJSON's output. And AppendJSON's output of an event that
		// IsCanonical recognizes is recognized in turn.
		out := env.AppendJSON(nil)
		if env.ParsedCanonical() && !bytes.Equal(bytes.TrimRight(b, " \t\r\n"), out) {
			t.Fatalf("ParsedCanonical for %q, AppendJSON writes %q", b, out)
		}
		again, err := envelope.Parse(out)
		if err != nil {
			t.Fatalf("re-marshalled envelope rejected: %v", err)
		}
		if strictjson.IsCanonical(env.Canonical()) && !again.ParsedCanonical() {
			t.Fatalf("AppendJSON's own output %q is not ParsedCanonical", out)
		}
		if !bytes.Equal(again.Canonical(), env.Canonical()) || again.Hash() != env.Hash() {
			t.Fatal("re-marshalling changed the event")
		}
		want, err := jcs.Transform(env.Canonical())
		if err != nil || !bytes.Equal(want, env.Canonical()) {
			t.Fatalf("canonical form disagrees with gowebpki/jcs: %v", err)
		}
	})
}

// FuzzVerify: Verify never panics and accepts only what re-verifies.
func FuzzVerify(f *testing.F) {
	var v identityVectors
	loadJSON(f, "../identity/testdata/identity-1.0.vectors.json", &v)
	for _, e := range v.Events {
		f.Add(envelopeJSON(e.Hash, e.Event, e.Signature))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := envelope.Verify(b)
		if err != nil {
			return
		}
		if _, err := envelope.Verify(env.AppendJSON(nil)); err != nil {
			t.Fatalf("verified envelope does not re-verify: %v", err)
		}
	})
}

func TestValidType(t *testing.T) {
	for _, s := range []string{"profile.update", "room.join.review", "x.example.custom_event", "poll2.vote-cast", "a.b"} {
		if !envelope.ValidType(s) {
			t.Errorf("%q rejected", s)
		}
	}
	for _, s := range []string{"", "single", "a..b", ".a.b", "a.b.", "-a.b", "a._b", "Review.finding", "a.b c", "a.é"} {
		if envelope.ValidType(s) {
			t.Errorf("%q accepted", s)
		}
	}
}

// "-0" is not a non-negative integer literal, even where its canonical form
// (0) carries a valid hash and signature: a receiver that reads IEEE -0
// would see another value than the one signed (Identity §4, RFC 8785 §3.2.2.3).
func TestNegativeZeroCreatedAt(t *testing.T) {
	ev := testEvent(5, `{}`)
	ev.CreatedAt = 0
	env := mustSign(t, ev)
	if _, err := envelope.Verify(env.AppendJSON(nil)); err != nil {
		t.Fatal(err)
	}
	b := wire(env, func(s string) string { return strings.Replace(s, `"created_at":0`, `"created_at":-0`, 1) })
	if _, err := envelope.Verify(b); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Fatalf("created_at -0 with the hash of 0: %v", err)
	}
}

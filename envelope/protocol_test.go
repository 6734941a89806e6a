package envelope_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// adpJoin is a seed-draft ADP room.join event: this package's tests never
// import adp, so closure must come from envelope's own table.
func adpJoin(extra ...envelope.Field) envelope.Event {
	ext := envelope.Fields{
		{Name: "room_id", Value: jsontext.Value(`"room_1"`)},
		{Name: "base_seq", Value: jsontext.Value(`3`)},
		{Name: "base_hash", Value: jsontext.Value(`"` + strings.Repeat("A", 43) + `"`)},
	}
	return envelope.Event{
		Protocol: "agent-discourse/1.0", Type: "room.join", Actor: testKey.AgentID(),
		CreatedAt: t0, Nonce: 9, Payload: jsontext.Value(`{"role":"participant"}`),
		Ext: append(ext, extra...),
	}
}

// A valid ADP room.join verifies whether or not package adp is linked
// (§6): closure is a static table, not an init registration.
func TestVerifyADPWithoutRegistration(t *testing.T) {
	env, err := envelope.Sign(context.Background(), testKey, adpJoin())
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	if _, err := envelope.Verify(env.AppendJSON(nil)); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	v := envelope.NewVerifier(&envelope.VerifierOptions{Now: fixedNow(t0)})
	if _, _, err := v.Accept(context.Background(), env.AppendJSON(nil), nil); err != nil {
		t.Fatalf("Verifier.Accept: %v", err)
	}
}

func fixedNow(ms int64) func() time.Time {
	return func() time.Time { return time.UnixMilli(ms) }
}

func TestProtocolClosure(t *testing.T) {
	ctx := context.Background()
	// An ADP event with a field ADP does not define: refused to sign, and
	// refused to parse when a peer signed it anyway.
	foreign := adpJoin(envelope.Field{Name: "audience", Value: jsontext.Value(`"x"`)})
	if _, err := envelope.Sign(ctx, testKey, foreign); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Errorf("Sign with a foreign field: %v", err)
	}
	signed := mustSign(t, adpJoin())
	b := wire(signed, func(s string) string { return strings.Replace(s, `"actor"`, `"audience":"x","actor"`, 1) })
	if _, err := envelope.Parse(b); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Errorf("Parse ADP event with a foreign field: %v", err)
	}
	// A profile event defines no extra field.
	prof := testEvent(5, `{}`)
	prof.Ext = envelope.Fields{{Name: "room_id", Value: jsontext.Value(`"r"`)}}
	if _, err := envelope.Sign(ctx, testKey, prof); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Errorf("Sign profile event with room_id: %v", err)
	}

	// Another protocol: the six common fields only, unless its Protocol
	// is passed.
	other := envelope.Protocol{Name: "agent-example/1.0", Fields: []string{"thread"}}
	ev := envelope.Event{
		Protocol: other.Name, Type: "note.create", Actor: testKey.AgentID(),
		CreatedAt: t0, Nonce: 4, Payload: jsontext.Value(`{}`),
		Ext: envelope.Fields{{Name: "thread", Value: jsontext.Value(`"t1"`)}},
	}
	if _, err := envelope.Sign(ctx, testKey, ev); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Errorf("Sign unknown protocol with an extra field: %v", err)
	}
	env, err := envelope.SignWith(ctx, testKey, ev, other)
	if err != nil {
		t.Fatalf("SignWith: %v", err)
	}
	raw := env.AppendJSON(nil)
	if _, err := envelope.Verify(raw); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Errorf("Verify unknown protocol with an extra field: %v", err)
	}
	if _, err := envelope.Parse(raw); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Errorf("Parse unknown protocol with an extra field: %v", err)
	}
	if _, err := envelope.VerifyWith(raw, other); err != nil {
		t.Errorf("VerifyWith its Protocol: %v", err)
	}
	if _, err := envelope.VerifyWith(raw, envelope.Protocol{Name: "agent-else/1.0", Fields: []string{"thread"}}); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Errorf("VerifyWith another protocol's declaration: %v", err)
	}
	v := envelope.NewVerifier(&envelope.VerifierOptions{Now: fixedNow(t0), Protocols: []envelope.Protocol{other}})
	if _, _, err := v.Accept(ctx, raw, nil); err != nil {
		t.Errorf("Verifier with Protocols: %v", err)
	}
	// Passing a protocol never loosens the built-in ones.
	if _, err := envelope.ParseWith(b, other); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Errorf("ParseWith(other) of an ADP event with a foreign field: %v", err)
	}

	// The exported table is read-only in effect: changing the variable
	// does not change what Parse accepts.
	saved := envelope.DiscourseProtocol
	envelope.DiscourseProtocol.Fields[0] = "audience"
	envelope.DiscourseProtocol = envelope.Protocol{Name: saved.Name, Fields: []string{"audience"}}
	_, err = envelope.Parse(b)
	envelope.DiscourseProtocol = saved
	envelope.DiscourseProtocol.Fields[0] = "base_hash"
	if !errors.Is(err, identity.ErrInvalidEvent) {
		t.Errorf("changing DiscourseProtocol changed Parse: %v", err)
	}
	if p, ok := envelope.LookupProtocol("agent-discourse/1.0"); !ok || len(p.Fields) != 4 {
		t.Errorf("LookupProtocol = %v, %v", p, ok)
	}
}

// nested returns a payload whose deepest array sits at event level depth:
// the event object is level 1 and the payload object level 2.
func nested(depth int) jsontext.Value {
	inner := depth - 2 // arrays inside the payload object
	return jsontext.Value(`{"a":` + strings.Repeat("[", inner) + `"x"` + strings.Repeat("]", inner) + `}`)
}

// Sign refuses what the reference TypeScript parser cannot read: events
// deeper than 256 levels. Parsing keeps a higher bound.
func TestSignDepthLimit(t *testing.T) {
	ctx := context.Background()
	ok := testEvent(5, string(nested(envelope.MaxSignDepth)))
	env, err := envelope.Sign(ctx, testKey, ok)
	if err != nil {
		t.Fatalf("depth %d: %v", envelope.MaxSignDepth, err)
	}
	if _, err := envelope.Verify(env.AppendJSON(nil)); err != nil {
		t.Fatalf("depth %d does not verify: %v", envelope.MaxSignDepth, err)
	}
	deep := testEvent(6, string(nested(envelope.MaxSignDepth+1)))
	if _, err := envelope.Sign(ctx, testKey, deep); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Fatalf("depth %d: %v", envelope.MaxSignDepth+1, err)
	}
	// An Author (every builder) signs through Sign.
	a := envelope.NewAuthor(testKey)
	if _, err := a.Sign(ctx, "agent-profile/1.0", "profile.update", nested(envelope.MaxSignDepth+1), nil); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Errorf("Author.Sign at depth %d: %v", envelope.MaxSignDepth+1, err)
	}
	// An ADP mentions array is level 2, like the payload.
	j := adpJoin(envelope.Field{Name: "mentions", Value: jsontext.Value(strings.Repeat("[", envelope.MaxSignDepth) + strings.Repeat("]", envelope.MaxSignDepth))})
	if _, err := envelope.Sign(ctx, testKey, j); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Errorf("mentions at depth %d: %v", envelope.MaxSignDepth+1, err)
	}

	// Verification accepts a deeper event another implementation signed:
	// build one at depth 257 by hand.
	deepEnv := signRaw(t, deep)
	if _, err := envelope.Verify(deepEnv); err != nil {
		t.Errorf("Verify at depth %d: %v", envelope.MaxSignDepth+1, err)
	}
}

// signRaw signs ev without Sign's depth limit, as a peer might.
func signRaw(t *testing.T, ev envelope.Event) []byte {
	t.Helper()
	canon, err := ev.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	sum := envelope.Sum(canon)
	sig, err := testKey.Sign(context.Background(), sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return []byte(`{"event":` + string(canon) + `,"hash":"` + base64.RawURLEncoding.EncodeToString(sum[:]) +
		`","signature":"` + base64.RawURLEncoding.EncodeToString(sig) + `"}`)
}

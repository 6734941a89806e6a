package envelope_test

import (
	"context"
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gowebpki/jcs"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// benchEnvelope returns a signed envelope whose event is about 1 KiB of
// canonical JSON: a message with markdown content, references and extras.
func benchEnvelope(tb testing.TB) (*envelope.Envelope, []byte) {
	tb.Helper()
	key, _ := identity.NewKeyFromSeed(make([]byte, 32))
	content := strings.Repeat("Review the retry loop; it can starve the writer queue. ", 11)
	payload := `{"content_type":"text/markdown","content":"` + content + `",` +
		`"references":["GDt8oHZQfQ3jl5ZUfyNxKZu07yAJdDYuaw_jf_JjLYs","cJg9aS9kgYX-vm1vpgdjCuaGSffm_EW5RoAJbAbk-ts"],` +
		`"extra":{"priority":2,"score":0.75,"labels":["retry","queue"]}}`
	ev := envelope.Event{
		Protocol: "agent-profile/1.0", Type: "bench.message", Actor: key.AgentID(),
		CreatedAt: 1779753700000, Nonce: 1779753700001, Payload: jsontext.Value(payload),
	}
	env, err := envelope.Sign(context.Background(), key, ev)
	if err != nil {
		tb.Fatal(err)
	}
	if n := len(env.Canonical()); n < 900 || n > 1200 {
		tb.Fatalf("event is %d bytes, want about 1 KiB", n)
	}
	return env, env.AppendJSON(nil)
}

// BenchmarkEd25519VerifyRaw is the floor: crypto/ed25519.Verify alone.
func BenchmarkEd25519VerifyRaw(b *testing.B) {
	env, _ := benchEnvelope(b)
	h, sig, pub := env.Hash(), env.Signature(), env.Actor().PublicKey()
	for b.Loop() {
		if !ed25519.Verify(pub, h[:], sig[:]) {
			b.Fatal("verify failed")
		}
	}
}

// BenchmarkEd25519VerifyStrict is identity.VerifySignature on the same input.
func BenchmarkEd25519VerifyStrict(b *testing.B) {
	env, _ := benchEnvelope(b)
	h, sig, pub := env.Hash(), env.Signature(), env.Actor().PublicKey()
	for b.Loop() {
		if err := identity.VerifySignature(pub, h[:], sig[:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJCS compares the fast path (jsontext) with the oracle on 1 KiB.
func BenchmarkJCS(b *testing.B) {
	env, _ := benchEnvelope(b)
	// Re-indent so canonicalization has real work to do.
	in := jsontext.Value(append([]byte(nil), env.Canonical()...))
	_ = in.Indent()
	b.Run("jsontext", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			v := jsontext.Value(append([]byte(nil), in...))
			if err := v.Canonicalize(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gowebpki", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			if _, err := jcs.Transform(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEnvelopeVerify is the full path: strict parse, canonicalize,
// SHA3-256, strict signature check, from wire bytes.
func BenchmarkEnvelopeVerify(b *testing.B) {
	_, wire := benchEnvelope(b)
	b.SetBytes(int64(len(wire)))
	for b.Loop() {
		if _, err := envelope.Verify(wire); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnvelopeParse is the part of the full path before the signature.
func BenchmarkEnvelopeParse(b *testing.B) {
	_, wire := benchEnvelope(b)
	b.SetBytes(int64(len(wire)))
	for b.Loop() {
		if _, err := envelope.Parse(wire); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEd25519VerifyStrictColdKey verifies under 5,000 keys in turn,
// more than the decoded-key cache holds, so every call decodes its key:
// the worst case for a verifier that sees each key once.
func BenchmarkEd25519VerifyStrictColdKey(b *testing.B) {
	type triple struct{ pub, msg, sig []byte }
	ts := make([]triple, 5000)
	for i := range ts {
		seed := make([]byte, 32)
		seed[0], seed[1] = byte(i), byte(i>>8)
		priv := ed25519.NewKeyFromSeed(seed)
		msg := []byte{byte(i)}
		ts[i] = triple{priv.Public().(ed25519.PublicKey), msg, ed25519.Sign(priv, msg)}
	}
	i := 0
	for b.Loop() {
		t := ts[i%len(ts)]
		if err := identity.VerifySignature(t.pub, t.msg, t.sig); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

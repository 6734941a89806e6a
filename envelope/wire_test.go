package envelope_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/agentprotocols/go-sdk/envelope"
)

// FuzzParseWire is the differential test of the path that reads
// AppendJSON's own text with the canonical checker alone, against the
// general parse on the strict jsontext decoder: on any input, as a whole
// or as a prefix, whatever that path accepts the general parse accepts,
// with the same envelope and length; and Parse and ParsePrefix give the
// general parse's verdict, error text included.
func FuzzParseWire(f *testing.F) {
	var v identityVectors
	loadJSON(f, "../identity/testdata/identity-1.0.vectors.json", &v)
	for _, e := range v.Events {
		f.Add(envelopeJSON(e.Hash, e.Event, e.Signature), false)
		if env, err := envelope.Parse(envelopeJSON(e.Hash, e.Event, e.Signature)); err == nil {
			f.Add(env.AppendJSON(nil), false)
			f.Add(append(env.AppendJSON(nil), `,"seq":1}`...), true)
		}
	}
	for _, raw := range v.Submissions.Envelopes {
		f.Add([]byte(raw), false)
	}
	for _, p := range []string{`{}`, `{"b":[],"a":{"x":1.5e-7}}`, `{"s":"\u001f\"é"}`, `{"n":9007199254740991}`} {
		out := mustSign(f, testEvent(5, p)).AppendJSON(nil)
		f.Add(out, false)
		f.Add(append(out, ' '), false)
		f.Add(append(out, `]`...), true)
		f.Add(bytes.Replace(out, []byte(`"nonce":5`), []byte(`"nonce":-0`), 1), false)
		f.Add(bytes.Replace(out, []byte(`"actor"`), []byte(`"actor":1,"actor"`), 1), false)
	}
	f.Fuzz(func(t *testing.T, b []byte, prefix bool) {
		want, wn, werr := envelope.ParseGeneral(b, prefix)
		if env, n, ok := envelope.ParseWire(b, prefix); ok {
			if werr != nil {
				t.Fatalf("wire path accepted %q (prefix %v), the general parse refuses it: %v", b, prefix, werr)
			}
			if diff := envelopeDiff(env, want); diff != "" || n != wn {
				t.Fatalf("wire path read %q (prefix %v) otherwise: %s; length %d, want %d", b, prefix, diff, n, wn)
			}
			if !env.ParsedCanonical() {
				t.Fatalf("wire path accepted %q, which is not AppendJSON's text", b)
			}
		}
		var got *envelope.Envelope
		var n int
		var err error
		if prefix {
			got, n, err = envelope.ParsePrefix(b)
		} else {
			got, err = envelope.Parse(b)
			n = wn
		}
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("%q (prefix %v): %v, the general parse %v", b, prefix, err, werr)
		}
		if err == nil {
			if diff := envelopeDiff(got, want); diff != "" || n != wn {
				t.Fatalf("%q (prefix %v): %s; length %d, want %d", b, prefix, diff, n, wn)
			}
		}
	})
}

// envelopeDiff names what differs between two parsed envelopes, "" when
// nothing does.
func envelopeDiff(a, b *envelope.Envelope) string {
	ea, eb := a.Event(), b.Event()
	var diffs []string
	check := func(what string, same bool) {
		if !same {
			diffs = append(diffs, what)
		}
	}
	check("hash", a.Hash() == b.Hash())
	check("signature", a.Signature() == b.Signature())
	check("protocol", ea.Protocol == eb.Protocol)
	check("type", ea.Type == eb.Type)
	check("actor", ea.Actor == eb.Actor)
	check("created_at", ea.CreatedAt == eb.CreatedAt)
	check("nonce", ea.Nonce == eb.Nonce)
	check("payload", bytes.Equal(ea.Payload, eb.Payload) && cap(ea.Payload) == len(ea.Payload) && cap(eb.Payload) == len(eb.Payload))
	check("fields", slices.EqualFunc(ea.Ext, eb.Ext, func(x, y envelope.Field) bool {
		return x.Name == y.Name && bytes.Equal(x.Value, y.Value)
	}))
	check("canonical", bytes.Equal(a.Canonical(), b.Canonical()))
	check("canonical payload", bytes.Equal(a.CanonicalPayload(), b.CanonicalPayload()))
	check("parsed canonical", a.ParsedCanonical() == b.ParsedCanonical())
	check("JSON", bytes.Equal(a.AppendJSON(nil), b.AppendJSON(nil)))
	return strings.Join(diffs, ", ")
}

// TestParseWireTakesAppendJSON: the envelopes signers and hosts send,
// AppendJSON's text, are read by the wire path, and text that differs
// from it by a byte of white space or member order is left to the
// general parse, which reads it to the same envelope.
func TestParseWireTakesAppendJSON(t *testing.T) {
	out := mustSign(t, testEvent(5, `{"b":[1,"x"],"a":{"y":1.5e-7}}`)).AppendJSON(nil)
	env, n, ok := envelope.ParseWire(out, false)
	if !ok || n != len(out) || !env.ParsedCanonical() {
		t.Fatalf("AppendJSON's text not read by the wire path: %v, %d of %d", ok, n, len(out))
	}
	if _, n, ok := envelope.ParseWire(append(bytes.Clone(out), `,"seq":2}`...), true); !ok || n != len(out) {
		t.Fatalf("as a prefix: %v, length %d of %d", ok, n, len(out))
	}
	if _, n, ok := envelope.ParseWire(append(bytes.Clone(out), " \r\n"...), false); !ok || n != len(out) {
		t.Fatalf("with white space after it: %v, length %d of %d", ok, n, len(out))
	}
	for _, other := range [][]byte{
		append([]byte{' '}, out...),
		bytes.Replace(out, []byte(`{"event":`), []byte(`{"event" :`), 1),
		bytes.Replace(out, []byte(`"created_at"`), []byte(`"created\u005fat"`), 1),
	} {
		if _, _, ok := envelope.ParseWire(other, false); ok {
			t.Errorf("%q read by the wire path", other)
		}
		got, err := envelope.Parse(other)
		if err != nil {
			t.Fatalf("%q: %v", other, err)
		}
		if diff := envelopeDiff(got, env); diff != "parsed canonical" {
			t.Errorf("%q: differs in %q", other, diff)
		}
	}
}

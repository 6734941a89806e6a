package adp_test

import (
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/packs"
)

// builtinPayloads returns the type and payload of every built-in event in
// the vectors.
func builtinPayloads(tb testing.TB) (types []string, payloads [][]byte) {
	tb.Helper()
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		tb.Fatal(err)
	}
	var vf vectorFile
	if err := json.Unmarshal(raw, &vf, json.RejectUnknownMembers(true)); err != nil {
		tb.Fatal(err)
	}
	for _, vr := range vf.Rooms {
		for _, v := range vr.Records {
			rec, err := adp.ParseRecord(v.Record)
			if err != nil {
				continue
			}
			if ev := rec.Envelope.Event(); adp.IsBuiltin(ev.Type) {
				types, payloads = append(types, ev.Type), append(payloads, ev.Payload)
			}
		}
	}
	if len(types) == 0 {
		tb.Fatal("no built-in payloads in the vectors")
	}
	return types, payloads
}

// sameDecode fails unless the one-pass decode (ParsePayload) and the
// two-pass reference agree on p as a payload of typ: both accept with
// deeply equal values, or both refuse with the same code and the same
// answer to errors.Is for the sentinel a declaration's pattern can give.
func sameDecode(t *testing.T, typ string, p []byte) {
	t.Helper()
	got, gerr := adp.ParsePayload(typ, p)
	want, werr := adp.CheckBuiltinPayloadReference(typ, p)
	if g, w := verdict(gerr), verdict(werr); g != w {
		t.Fatalf("%s %q: one pass %s (%v), reference %s (%v)", typ, p, g, gerr, w, werr)
	}
	if g, w := errors.Is(gerr, packs.ErrSchemaUnsupported), errors.Is(werr, packs.ErrSchemaUnsupported); g != w {
		t.Fatalf("%s %q: schema_unsupported in the chain: one pass %v, reference %v", typ, p, g, w)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s %q: one pass %#v, reference %#v", typ, p, got, want)
	}
}

// TestDecodeMatchesReference runs the differential corpus's payload
// mutations of every built-in vector payload through both decodes, and
// each unmutated payload as every built-in type.
func TestDecodeMatchesReference(t *testing.T) {
	types, payloads := builtinPayloads(t)
	n := 0
	for i, p := range payloads {
		for _, m := range payloadMutations(p) {
			sameDecode(t, types[i], m)
			n++
		}
		for _, typ := range packs.BuiltinTypes() {
			sameDecode(t, typ, p)
			n++
		}
	}
	sameDecode(t, "not.builtin", []byte(`{}`))
	t.Logf("%d payloads compared", n)
}

// FuzzBuiltinDecode compares the one-pass decode with the two-pass
// reference on arbitrary payloads of every built-in type, seeded from the
// vectors and the differential corpus's mutations.
func FuzzBuiltinDecode(f *testing.F) {
	types, payloads := builtinPayloads(f)
	index := map[string]uint8{}
	for i, typ := range packs.BuiltinTypes() {
		index[typ] = uint8(i)
	}
	// Every eighth mutation: TestDecodeMatchesReference runs them all, and
	// a smaller corpus leaves CI's 10 s of fuzzing time to mutate it.
	for i, p := range payloads {
		for j, m := range payloadMutations(p) {
			if j%8 == 0 {
				f.Add(index[types[i]], m)
			}
		}
	}
	builtins := packs.BuiltinTypes()
	f.Fuzz(func(t *testing.T, ti uint8, p []byte) {
		sameDecode(t, builtins[int(ti)%len(builtins)], p)
	})
}

package profile_test

import (
	"errors"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/profile"
)

// FuzzParse feeds arbitrary bytes to ParsePayload and ParseDocument. They
// must never panic, must reject with a coded error that names a field,
// and whatever they accept must marshal back to the same JSON (RFC 8785
// form) — the typed values lose nothing that was signed.
func FuzzParse(f *testing.F) {
	v := loadVectors(f)
	for _, c := range append(v.Payloads.Valid, v.Payloads.Invalid...) {
		f.Add([]byte(c.Payload))
	}
	f.Add([]byte(v.ExplicitEmpty.Document))
	f.Add([]byte(v.History.Latest))
	f.Add([]byte(withFields(`"extra":{"a":[null,1.5e3,"\u2028"]},"delegations":[{"principal":{"id":"https://p.example","k":{}}}]`)))
	actor := identity.MustParseAgentID(vecActor)

	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := profile.ParsePayload(data, actor, profile.NoLimits())
		checkParsed(t, data, p, err, identity.ErrInvalidEvent)
		if err == nil {
			if err := p.Validate(actor, profile.NoLimits()); err != nil {
				t.Fatalf("accepted payload fails Validate: %v", err)
			}
		}
		d, err := profile.ParseDocument(data)
		checkParsed(t, data, d, err, profile.ErrInvalidResponse)
	})
}

func checkParsed(t *testing.T, data []byte, v any, err error, code *identity.Error) {
	if err != nil {
		var ie *identity.Error
		if !errors.As(err, &ie) || !errors.Is(err, code) {
			t.Fatalf("error without code %s: %v", code.Code, err)
		}
		if _, ok := profile.FieldPointer(err); !ok {
			t.Fatalf("error names no field: %v", err)
		}
		return
	}
	b, merr := json.Marshal(v)
	if merr != nil {
		t.Fatalf("accepted value does not marshal: %v", merr)
	}
	got, err1 := strictjson.Canonicalize(b)
	want, err2 := strictjson.Canonicalize(data)
	if err1 != nil || err2 != nil || string(got) != string(want) {
		t.Fatalf("round trip changed the JSON\n  in: %s\n out: %s", want, got)
	}
}

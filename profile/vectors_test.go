package profile_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/profile"
)

// vectorFile mirrors testdata/1.0.vectors.json (Appendix A). Payloads,
// envelopes and documents stay raw so the tests see the exact bytes.
type vectorFile struct {
	Protocol    string `json:"protocol"`
	Description string `json:"description"`
	Payloads    struct {
		Valid   []payloadCase `json:"valid"`
		Invalid []payloadCase `json:"invalid"`
	} `json:"payloads"`
	History struct {
		Envelopes []jsontext.Value `json:"envelopes"`
		Latest    jsontext.Value   `json:"latest"`
	} `json:"history"`
	ExplicitEmpty struct {
		Envelope jsontext.Value `json:"envelope"`
		Document jsontext.Value `json:"document"`
	} `json:"explicit_empty"`
}

type payloadCase struct {
	Name    string         `json:"name"`
	Actor   string         `json:"actor"`
	Payload jsontext.Value `json:"payload"`
}

func loadVectors(t testing.TB) *vectorFile {
	t.Helper()
	b, err := os.ReadFile("testdata/1.0.vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectorFile
	if err := strictjson.Unmarshal(b, &v); err != nil {
		t.Fatalf("vectors: %v", err)
	}
	if v.Protocol != profile.Protocol {
		t.Fatalf("vectors are for %q", v.Protocol)
	}
	return &v
}

// wantPointer is the field each invalid vector must be rejected for.
var wantPointer = map[string]string{
	"payload id differs from actor": "/id",
	"missing id":                    "/id",
	"missing name":                  "/name",
	"empty name":                    "/name",
	"undefined top-level field":     "/username",
	"service-derived updated_at inside the payload": "/updated_at",
	"service-derived event_id inside the payload":   "/event_id",
	"non-HTTPS avatar":                           "/avatar_url",
	"non-HTTPS service endpoint":                 "/service_endpoints/0/url",
	"duplicate service endpoints":                "/service_endpoints/1",
	"link with a script scheme":                  "/links/0/url",
	"duplicate links by url and rel":             "/links/1",
	"undefined link field":                       "/links/0/icon",
	"duplicate capabilities":                     "/capabilities/1",
	"empty capability":                           "/capabilities/0",
	"delegation hint with an invalid id":         "/delegations/0/id",
	"delegation hint without a principal":        "/delegations/0/principal",
	"delegation hint with a non-HTTPS principal": "/delegations/0/principal/id",
}

func TestVectorsPayloads(t *testing.T) {
	v := loadVectors(t)
	t.Run("valid", func(t *testing.T) {
		for _, c := range v.Payloads.Valid {
			t.Run(c.Name, func(t *testing.T) {
				actor := identity.MustParseAgentID(c.Actor)
				p, err := profile.ParsePayload(c.Payload, actor, nil)
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				assertSameJSON(t, p, c.Payload)
				// Another actor must not be able to sign it.
				other := identity.MustParseAgentID("did:agent:Q6cucUQBdi32a2jCbfvfJoKq7J8kdOykYT5CSg-6_Tw")
				if _, err := profile.ParsePayload(c.Payload, other, nil); !errors.Is(err, identity.ErrInvalidEvent) {
					t.Fatalf("accepted for another actor: %v", err)
				}
			})
		}
	})
	t.Run("invalid", func(t *testing.T) {
		if len(v.Payloads.Invalid) != len(wantPointer) {
			t.Fatalf("%d invalid vectors, %d expected pointers", len(v.Payloads.Invalid), len(wantPointer))
		}
		for _, c := range v.Payloads.Invalid {
			t.Run(c.Name, func(t *testing.T) {
				want, ok := wantPointer[c.Name]
				if !ok {
					t.Fatalf("no expected pointer for this vector")
				}
				_, err := profile.ParsePayload(c.Payload, identity.MustParseAgentID(c.Actor), nil)
				assertFieldError(t, err, identity.ErrInvalidEvent, want)
			})
		}
	})
}

// assertFieldError checks the code, the pointer (locally and in the error
// body data) and that the message names the field.
func assertFieldError(t *testing.T, err error, code *identity.Error, pointer string) {
	t.Helper()
	if !errors.Is(err, code) {
		t.Fatalf("error %v, want code %s", err, code.Code)
	}
	got, ok := profile.FieldPointer(err)
	if !ok || got != pointer {
		t.Fatalf("pointer %q (ok=%v), want %q; error: %v", got, ok, pointer, err)
	}
	if !strings.Contains(err.Error(), pointer) {
		t.Fatalf("message %q does not name %s", err.Error(), pointer)
	}
	var ie *identity.Error
	if errors.As(err, &ie) && !strings.Contains(string(ie.Data), `"pointer":"`+pointer+`"`) {
		t.Fatalf("data %s does not carry pointer %s", ie.Data, pointer)
	}
}

func TestVectorsHistory(t *testing.T) {
	v := loadVectors(t)
	var envs []*envelope.Envelope
	for i, raw := range v.History.Envelopes {
		env, err := envelope.Verify(raw)
		if err != nil {
			t.Fatalf("envelope %d: %v", i, err)
		}
		if _, err := profile.VerifyUpdate(env, nil); err != nil {
			t.Fatalf("envelope %d: %v", i, err)
		}
		envs = append(envs, env)
	}
	latest, err := profile.Latest(envs)
	if err != nil {
		t.Fatal(err)
	}
	if n := latest.Event().Nonce; n != 9 {
		t.Fatalf("latest nonce %d, want 9 (greatest nonce, not latest created_at)", n)
	}
	doc, err := profile.Materialize(latest)
	if err != nil {
		t.Fatal(err)
	}
	got := documentMembers(t, doc)
	var want map[string]jsontext.Value
	if err := json.Unmarshal(v.History.Latest, &want); err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			if !sameCanonical(t, got[name], w) {
				t.Fatalf("%s = %s, want %s", name, got[name], w)
			}
		})
	}
	// Order of the input must not matter.
	rev := []*envelope.Envelope{envs[2], envs[1], envs[0]}
	if l2, err := profile.Latest(rev); err != nil || l2.Hash() != latest.Hash() {
		t.Fatalf("Latest depends on order: %v", err)
	}
}

func TestVectorsExplicitEmpty(t *testing.T) {
	v := loadVectors(t)
	env, err := envelope.Verify(v.ExplicitEmpty.Envelope)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := profile.Materialize(env)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("materialize", func(t *testing.T) {
		assertSameJSON(t, doc, v.ExplicitEmpty.Document)
	})
	t.Run("payload round trip", func(t *testing.T) {
		assertSameJSON(t, &doc.Payload, env.Event().Payload)
		if doc.Capabilities == nil || len(doc.Capabilities) != 0 || doc.Delegations[0].Scopes == nil {
			t.Fatal("explicit empty arrays were not kept")
		}
		if string(doc.Delegations[0].Principal.Other) != `{"display":"kept as signed"}` {
			t.Fatalf("open principal member: %s", doc.Delegations[0].Principal.Other)
		}
	})
	t.Run("parse document", func(t *testing.T) {
		d, err := profile.ParseDocument(v.ExplicitEmpty.Document)
		if err != nil {
			t.Fatal(err)
		}
		assertSameJSON(t, d, v.ExplicitEmpty.Document)
		if d.EventID != env.Hash() || d.UpdatedAt != 1779753600000 {
			t.Fatalf("event_id %s updated_at %d", d.EventID, d.UpdatedAt)
		}
	})
}

func documentMembers(t *testing.T, v any) map[string]jsontext.Value {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]jsontext.Value
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func sameCanonical(t *testing.T, a, b []byte) bool {
	t.Helper()
	ca, err1 := strictjson.Canonicalize(a)
	cb, err2 := strictjson.Canonicalize(b)
	if err1 != nil || err2 != nil {
		t.Fatalf("canonicalize: %v %v", err1, err2)
	}
	return string(ca) == string(cb)
}

// assertSameJSON compares the JSON of v with want as RFC 8785 text.
func assertSameJSON(t *testing.T, v any, want []byte) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !sameCanonical(t, b, want) {
		cb, _ := strictjson.Canonicalize(b)
		cw, _ := strictjson.Canonicalize(want)
		t.Fatalf("JSON differs\n got: %s\nwant: %s", cb, cw)
	}
}

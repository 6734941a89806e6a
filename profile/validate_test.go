package profile_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/profile"
)

const vecActor = "did:agent:_RckOFqgx1tk-3jNYC-h2ZH96_drE8WO1wLqyDXp9hg"

// withFields builds a payload for vecActor with extra members.
func withFields(members string) string {
	p := `{"id":"` + vecActor + `","name":"Agent"`
	if members != "" {
		p += "," + members
	}
	return p + "}"
}

func TestPayloadRules(t *testing.T) {
	actor := identity.MustParseAgentID(vecActor)
	long := func(n int) string { return strings.Repeat("é", n) }
	valid := []struct{ name, payload string }{
		{"§4.1 empty description and provider are strings", withFields(`"description":"","provider":""`)},
		{"§4.1 open rel vocabulary", withFields(`"links":[{"name":"n","url":"https://a.example","rel":"x-anything"}]`)},
		{"§4.1 same url with another rel", withFields(`"links":[{"name":"n","url":"https://a.example","rel":"homepage"},{"name":"n","url":"https://a.example","rel":"social"}]`)},
		{"§4.1 same endpoint type with another url", withFields(`"service_endpoints":[{"type":"api","url":"https://a.example"},{"type":"api","url":"https://b.example"}]`)},
		{"§4.1 http link", withFields(`"links":[{"name":"n","url":"http://a.example/p?q=1#f","rel":"r"}]`)},
		{"§4.1 URL with port, percent escape and IPv6", withFields(`"avatar_url":"https://[::1]:8443/a%20b.png"`)},
		{"§4.2 name of 128 scalar values", `{"id":"` + vecActor + `","name":"` + long(128) + `"}`},
		{"§4.2 64 capabilities", withFields(`"capabilities":[` + items(64) + `]`)},
		{"§4.3 principal with open members, null included", withFields(`"delegations":[{"principal":{"id":"https://p.example","x":null,"y":{"z":[]}}}]`)},
		{"§4.3 delegation id of 128 characters", withFields(`"delegations":[{"id":"` + strings.Repeat("a", 128) + `","principal":{"id":"https://p.example"}}]`)},
		{"§4.3 delegation id punctuation", withFields(`"delegations":[{"id":"a.b_c~d-e","principal":{"id":"https://p.example"}}]`)},
		{"§4.3 empty relationship", withFields(`"delegations":[{"principal":{"id":"https://p.example"},"relationship":""}]`)},
		{"§4.1 extra with nested null and numbers", withFields(`"extra":{"a":null,"b":[1,-2.5e3,{"c":true}]}`)},
		{"§4.1 whitespace and member order do not matter", " {\n\"name\" : \"Agent\", \"id\":\"" + vecActor + "\" }\t"},
	}
	for _, c := range valid {
		t.Run(c.name, func(t *testing.T) {
			p, err := profile.ParsePayload([]byte(c.payload), actor, nil)
			if err != nil {
				t.Fatal(err)
			}
			assertSameJSON(t, p, []byte(c.payload))
		})
	}

	invalid := []struct {
		name, payload, pointer string
		lim                    *profile.Limits
	}{
		{"§4.1 payload not an object", `[]`, "", nil},
		{"§4.1 id not a string", `{"id":5,"name":"A"}`, "/id", nil},
		{"§4.1 id not canonical", `{"id":"did:agent:_RckOFqgx1tk-3jNYC-h2ZH96_drE8WO1wLqyDXp9hh","name":"A"}`, "/id", nil},
		{"§4.1 name not a string", `{"id":"` + vecActor + `","name":["A"]}`, "/name", nil},
		{"§4.1 null name", `{"id":"` + vecActor + `","name":null}`, "/name", nil},
		{"§4.1 null capabilities", withFields(`"capabilities":null`), "/capabilities", nil},
		{"§4.1 null extra", withFields(`"extra":null`), "/extra", nil},
		{"§4.1 extra not an object", withFields(`"extra":[1]`), "/extra", nil},
		{"§4.1 uppercase scheme", withFields(`"avatar_url":"HTTPS://a.example/x.png"`), "/avatar_url", nil},
		{"§4.1 URL without host", withFields(`"avatar_url":"https:///x.png"`), "/avatar_url", nil},
		{"§4.1 URL with a space", withFields(`"avatar_url":"https://a.example/a b.png"`), "/avatar_url", nil},
		{"§4.1 URL with a bad escape", withFields(`"avatar_url":"https://a.example/%zz"`), "/avatar_url", nil},
		{"§4.1 URL with non-ASCII", withFields(`"avatar_url":"https://ä.example/"`), "/avatar_url", nil},
		{"§4.1 link rel empty", withFields(`"links":[{"name":"n","url":"https://a.example","rel":""}]`), "/links/0/rel", nil},
		{"§4.1 link name missing", withFields(`"links":[{"url":"https://a.example","rel":"r"}]`), "/links/0/name", nil},
		{"§4.1 link not an object", withFields(`"links":["https://a.example"]`), "/links/0", nil},
		{"§4.1 endpoint type empty", withFields(`"service_endpoints":[{"type":"","url":"https://a.example"}]`), "/service_endpoints/0/type", nil},
		{"§4.1 endpoint unknown member", withFields(`"service_endpoints":[{"type":"t","url":"https://a.example","auth":"x"}]`), "/service_endpoints/0/auth", nil},
		{"§4.1 duplicate endpoint protocols", withFields(`"service_endpoints":[{"type":"t","url":"https://a.example","protocols":["p","p"]}]`), "/service_endpoints/0/protocols/1", nil},
		{"§4.1 empty endpoint protocol", withFields(`"service_endpoints":[{"type":"t","url":"https://a.example","protocols":[""]}]`), "/service_endpoints/0/protocols/0", nil},
		{"§4.3 delegation id .", withFields(`"delegations":[{"id":".","principal":{"id":"https://p.example"}}]`), "/delegations/0/id", nil},
		{"§4.3 delegation id ..", withFields(`"delegations":[{"id":"..","principal":{"id":"https://p.example"}}]`), "/delegations/0/id", nil},
		{"§4.3 delegation id empty", withFields(`"delegations":[{"id":"","principal":{"id":"https://p.example"}}]`), "/delegations/0/id", nil},
		{"§4.3 delegation id of 129 characters", withFields(`"delegations":[{"id":"` + strings.Repeat("a", 129) + `","principal":{"id":"https://p.example"}}]`), "/delegations/0/id", nil},
		{"§4.3 principal without id", withFields(`"delegations":[{"principal":{"type":"person"}}]`), "/delegations/0/principal/id", nil},
		{"§4.3 principal type not a string", withFields(`"delegations":[{"principal":{"id":"https://p.example","type":1}}]`), "/delegations/0/principal/type", nil},
		{"§4.3 duplicate scopes", withFields(`"delegations":[{"principal":{"id":"https://p.example"},"scopes":["a","a"]}]`), "/delegations/0/scopes/1", nil},
		{"§4.3 empty scope", withFields(`"delegations":[{"principal":{"id":"https://p.example"},"scopes":[""]}]`), "/delegations/0/scopes/0", nil},
		{"§4.3 unknown hint member", withFields(`"delegations":[{"principal":{"id":"https://p.example"},"proof":"x"}]`), "/delegations/0/proof", nil},
		{"§4.2 name over 128 scalar values", `{"id":"` + vecActor + `","name":"` + long(129) + `"}`, "/name", nil},
		{"§4.2 description over 2048", withFields(`"description":"` + long(2049) + `"`), "/description", nil},
		{"§4.2 65 capabilities", withFields(`"capabilities":[` + items(65) + `]`), "/capabilities", nil},
		{"§4.2 extra over 32 KiB", withFields(`"extra":{"a":"` + strings.Repeat("x", 32<<10) + `"}`), "/extra", nil},
		{"§4.2 service limit", withFields(`"links":[{"name":"n","url":"https://a.example","rel":"a"},{"name":"n","url":"https://a.example","rel":"b"}]`), "/links", &profile.Limits{Links: 1}},
		{"§4 duplicate member", withFields(`"provider":"a","provider":"b"`), "/provider", nil},
		{"§4 unsafe number in extra", withFields(`"extra":{"n":9007199254740992}`), "/extra/n", nil},
		{"§4 invalid escape", withFields(`"provider":"\ud800"`), "/provider", nil},
		{"§4 trailing data", withFields("") + "{}", "", nil},
	}
	for _, c := range invalid {
		t.Run(c.name, func(t *testing.T) {
			_, err := profile.ParsePayload([]byte(c.payload), actor, c.lim)
			assertFieldError(t, err, identity.ErrInvalidEvent, c.pointer)
		})
	}

	t.Run("§4.2 limits are configurable", func(t *testing.T) {
		p := withFields(`"capabilities":[` + items(65) + `]`)
		if _, err := profile.ParsePayload([]byte(p), actor, profile.NoLimits()); err != nil {
			t.Fatal(err)
		}
		if _, err := profile.ParsePayload([]byte(p), actor, &profile.Limits{Capabilities: 100}); err != nil {
			t.Fatal(err)
		}
	})
}

func items(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = `"c` + strings.Repeat("x", i) + `"`
	}
	return strings.Join(s, ",")
}

// Values built in Go follow the same rules as parsed ones.
func TestValidateGoValues(t *testing.T) {
	actor := identity.MustParseAgentID(vecActor)
	cases := []struct {
		name    string
		edit    func(*profile.Payload)
		pointer string
	}{
		{"zero id", func(p *profile.Payload) { p.ID = identity.AgentID{} }, "/id"},
		{"invalid UTF-8", func(p *profile.Payload) { p.Provider = new("\xff") }, "/provider"},
		{"extra not JSON", func(p *profile.Payload) { p.Extra = jsontext.Value(`{"a":}`) }, "/extra"},
		{"principal repeats id", func(p *profile.Payload) {
			p.Delegations = []profile.Delegation{{Principal: profile.Principal{ID: "https://p.example", Other: jsontext.Value(`{"id":"x"}`)}}}
		}, "/delegations/0/principal/id"},
		{"principal missing", func(p *profile.Payload) { p.Delegations = []profile.Delegation{{}} }, "/delegations/0/principal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := profile.Payload{ID: actor, Name: "Agent"}
			c.edit(&p)
			assertFieldError(t, p.Validate(actor, nil), identity.ErrInvalidEvent, c.pointer)
		})
	}
}

func TestNewUpdate(t *testing.T) {
	ctx := context.Background()
	k := key(t, 1)
	a := author(k, newClock(t0))
	env, err := profile.NewUpdate(ctx, a, fullPayload(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := env.Event()
	if ev.Protocol != profile.Protocol || ev.Type != profile.TypeUpdate || ev.Actor != k.AgentID() || ev.Nonce != t0.UnixMilli() {
		t.Fatalf("event %+v", ev)
	}
	p, err := profile.VerifyUpdate(env, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := fullPayload()
	want.ID = k.AgentID()
	assertSameJSON(t, p, mustJSON(t, &want))

	other := fullPayload()
	other.ID = key(t, 2).AgentID()
	_, err = profile.NewUpdate(ctx, a, other, nil)
	assertFieldError(t, err, identity.ErrInvalidEvent, "/id")

	if _, err := profile.NewUpdate(ctx, &envelope.Author{Signer: k}, minimal("x"), nil); err == nil {
		t.Fatal("author without a NonceSource accepted")
	}
}

func TestVerifyUpdateShape(t *testing.T) {
	ctx := context.Background()
	a := author(key(t, 1), newClock(t0))
	payload := jsontext.Value(`{"id":"` + a.AgentID().String() + `","name":"A"}`)
	for _, c := range []struct{ protocol, typ string }{
		{"agent-profile/2.0", profile.TypeUpdate},
		{profile.Protocol, "profile.delete"},
	} {
		env, err := a.Sign(ctx, c.protocol, c.typ, payload, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := profile.VerifyUpdate(env, nil); !errors.Is(err, identity.ErrInvalidEvent) {
			t.Fatalf("%s %s: %v", c.protocol, c.typ, err)
		}
		if _, err := profile.Materialize(env); !errors.Is(err, identity.ErrInvalidEvent) {
			t.Fatalf("materialized %s %s", c.protocol, c.typ)
		}
	}
	// The closed event object: the profile protocol defines no extra field.
	if _, err := a.Sign(ctx, profile.Protocol, profile.TypeUpdate, payload, envelope.Fields{{Name: "room_id", Value: jsontext.Value(`"r"`)}}); !errors.Is(err, identity.ErrInvalidEvent) {
		t.Fatalf("extra event field signed: %v", err)
	}
}

func TestLatest(t *testing.T) {
	ctx := context.Background()
	clk := newClock(t0)
	k := key(t, 1)
	a := author(k, clk)
	e1, _ := profile.NewUpdate(ctx, a, minimal("one"), nil)
	e2, _ := profile.NewUpdate(ctx, a, minimal("two"), nil)
	if l, err := profile.Latest([]*envelope.Envelope{e2, e1, e2}); err != nil || l != e2 {
		t.Fatalf("latest: %v", err)
	}
	if _, err := profile.Latest(nil); !errors.Is(err, identity.ErrInvalidRequest) {
		t.Fatal("empty list accepted")
	}
	twin, _ := profile.NewUpdate(ctx, author(k, clk), minimal("twin"), nil) // same nonce as e1
	if _, err := profile.Latest([]*envelope.Envelope{e1, twin}); !errors.Is(err, identity.ErrInvalidRequest) {
		t.Fatal("conflicting updates with one nonce accepted")
	}
	o, _ := profile.NewUpdate(ctx, author(key(t, 2), clk), minimal("other"), nil)
	if _, err := profile.Latest([]*envelope.Envelope{e1, o}); !errors.Is(err, identity.ErrInvalidRequest) {
		t.Fatal("updates of two agents accepted")
	}
}

func TestParseDocument(t *testing.T) {
	v := loadVectors(t)
	doc := string(v.ExplicitEmpty.Document)
	cases := []struct{ name, doc, pointer string }{
		{"missing updated_at", dropMember(t, doc, "updated_at"), "/updated_at"},
		{"missing event_id", dropMember(t, doc, "event_id"), "/event_id"},
		{"missing name", dropMember(t, doc, "name"), "/name"},
		{"negative updated_at", strings.Replace(doc, `1779753600000`, `-1`, 1), "/updated_at"},
		{"malformed event_id", strings.Replace(doc, `AVdiyx6Ol9Iw`, `AVdiyx6Ol9I=`, 1), "/event_id"},
		{"unknown member", strings.Replace(doc, `"name"`, `"nonce":1,"name"`, 1), "/nonce"},
		{"payload rule", strings.Replace(doc, `"links": []`, `"links": [{"name":"x","url":"ftp://x","rel":"r"}]`, 1), "/links/0/url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.doc == doc {
				t.Fatal("test edit did not apply")
			}
			_, err := profile.ParseDocument([]byte(c.doc))
			assertFieldError(t, err, profile.ErrInvalidResponse, c.pointer)
			var d profile.Document
			if err := json.Unmarshal([]byte(c.doc), &d); !errors.Is(err, profile.ErrInvalidResponse) {
				t.Fatalf("json.Unmarshal bypassed ParseDocument: %v", err)
			}
		})
	}
}

func dropMember(t *testing.T, doc, name string) string {
	t.Helper()
	var m map[string]jsontext.Value
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, name)
	return string(mustJSON(t, m))
}

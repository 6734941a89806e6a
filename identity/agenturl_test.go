package identity_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/identity"
)

const testID = "did:agent:6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw"

func TestParseAgentURLRules(t *testing.T) {
	valid := []string{
		testID + "/discourse/room_1-A",
		testID + "/profile/x?route=https://[::1]",
		testID + "?route=https://a.example&route=https://b.example&route=https://c.example&route=https://d.example" +
			"&route=https://e.example&route=https://f.example&route=https://g.example&route=https://h.example",
		testID + "?route=https://a.example:8443&route=https://a.example",
	}
	for _, s := range valid {
		t.Run("valid/"+s, func(t *testing.T) {
			u, err := identity.ParseAgentURL(s)
			if err != nil {
				t.Fatal(err)
			}
			if u.String() != s {
				t.Errorf("String() = %q", u)
			}
		})
	}
	invalid := []struct {
		in     string
		reason error
	}{
		{"", identity.ErrAgentIDPrefix},
		{testID + "/", identity.ErrAgentURLPath},
		{testID + "/mail/", identity.ErrAgentURLPath},
		{testID + "/mail//", identity.ErrAgentURLPath},
		{testID + "//", identity.ErrAgentURLPath},
		{testID + "/mail/a.b", identity.ErrAgentURLPath},
		{testID + "/mail/a~b", identity.ErrAgentURLPath},
		{testID + "/x-mail/abc", identity.ErrAgentURLPath},
		{testID + "/mail2/abc", identity.ErrAgentURLPath},
		{testID + "/mAil/abc", identity.ErrAgentURLPath},
		{testID + "/mail/abc\u00e9", identity.ErrAgentURLCharacter},
		{testID + "/mail/abc\t", identity.ErrAgentURLCharacter},
		{testID + "/mail/abc\x7f", identity.ErrAgentURLCharacter},
		{testID + "/mail/abc#", identity.ErrAgentURLCharacter},
		{testID + "?route=https%3A%2F%2Fa.example", identity.ErrAgentURLCharacter},
		{testID + "?route=https://a.example&", identity.ErrAgentURLQuery},
		{testID + "?route=https://a.example&&route=https://b.example", identity.ErrAgentURLQuery},
		{testID + "?Route=https://a.example", identity.ErrAgentURLQuery},
		{testID + "?route", identity.ErrAgentURLQuery},
		{testID + "?route=https://a.example?x", identity.ErrAgentURLRoute},
		{testID + "?route=https://A.example", identity.ErrAgentURLRoute},
		{testID + "?route=https://a.example:443", identity.ErrAgentURLRoute},
		{testID + "?route=http://localhost:8080", identity.ErrAgentURLRoute},
		{testID + "?route=did:agent:x", identity.ErrAgentURLRoute},
		{strings.ToUpper(testID[:4]) + testID[4:], identity.ErrAgentIDPrefix},
		{testID[:len(testID)-1] + "/mail/abc", identity.ErrAgentIDLength},
	}
	for _, c := range invalid {
		t.Run("invalid/"+c.in, func(t *testing.T) {
			u, err := identity.ParseAgentURL(c.in)
			if !errors.Is(err, identity.ErrInvalidRequest) {
				t.Fatalf("ParseAgentURL(%q) = %+v, %v; want invalid_request", c.in, u, err)
			}
			if !errors.Is(err, c.reason) {
				t.Errorf("error %v, want reason %v", err, c.reason)
			}
		})
	}
}

func TestAgentURLFormat(t *testing.T) {
	id := identity.MustParseAgentID(testID)
	u := identity.AgentURL{
		ID:       id,
		Protocol: "mail",
		Resource: "AAECAwQFBgcICQoLDA0ODw",
		Routes:   []identity.Origin{identity.MustParseOrigin("https://relay.example"), identity.MustParseOrigin("https://[::1]:8443")},
	}
	if err := u.Validate(); err != nil {
		t.Fatal(err)
	}
	want := testID + "/mail/AAECAwQFBgcICQoLDA0ODw?route=https://relay.example&route=https://[::1]:8443"
	if u.String() != want {
		t.Fatalf("String() = %q", u)
	}
	if u.Stable() != testID+"/mail/AAECAwQFBgcICQoLDA0ODw" {
		t.Errorf("Stable() = %q", u.Stable())
	}
	back, err := identity.ParseAgentURL(u.String())
	if err != nil || back.Stable() != u.Stable() || len(back.Routes) != 2 || back.Routes[1] != u.Routes[1] {
		t.Fatalf("round trip %+v, %v", back, err)
	}

	// Routes are hints, not identity: the stable forms compare equal.
	other := u
	other.Routes = nil
	if other.Stable() != u.Stable() || other.String() != other.Stable() {
		t.Errorf("stable forms differ: %q %q", other.Stable(), u.Stable())
	}

	// JSON goes through the text methods.
	var v struct {
		To identity.AgentURL `json:"to"`
	}
	v.To = u
	b, err := json.Marshal(&v)
	if err != nil || string(b) != `{"to":"`+want+`"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	var v2 struct {
		To identity.AgentURL `json:"to"`
	}
	if err := json.Unmarshal(b, &v2); err != nil || v2.To.String() != want {
		t.Fatalf("Unmarshal = %+v, %v", v2, err)
	}

	loop, _ := identity.ParseOrigin("http://localhost:1", &identity.OriginOptions{AllowLoopbackHTTP: true})
	bad := []struct {
		name   string
		u      identity.AgentURL
		reason error
	}{
		{"zero id", identity.AgentURL{Protocol: "mail", Resource: "x"}, identity.ErrAgentIDLength},
		{"protocol without resource", identity.AgentURL{ID: id, Protocol: "mail"}, identity.ErrAgentURLPath},
		{"resource without protocol", identity.AgentURL{ID: id, Resource: "x"}, identity.ErrAgentURLPath},
		{"upper-case protocol", identity.AgentURL{ID: id, Protocol: "Mail", Resource: "x"}, identity.ErrAgentURLPath},
		{"resource with slash", identity.AgentURL{ID: id, Protocol: "mail", Resource: "a/b"}, identity.ErrAgentURLPath},
		{"duplicate route", identity.AgentURL{ID: id, Routes: []identity.Origin{u.Routes[0], u.Routes[0]}}, identity.ErrAgentURLRoute},
		{"http route", identity.AgentURL{ID: id, Routes: []identity.Origin{loop}}, identity.ErrAgentURLRoute},
		{"nine routes", identity.AgentURL{ID: id, Routes: make([]identity.Origin, 9)}, identity.ErrAgentURLQuery},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			if err := c.u.Validate(); !errors.Is(err, identity.ErrInvalidRequest) || !errors.Is(err, c.reason) {
				t.Errorf("Validate = %v, want %v", err, c.reason)
			}
			if _, err := c.u.MarshalText(); err == nil {
				t.Error("MarshalText succeeded")
			}
		})
	}
}

package adp_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// seedDiscovery is the §16.1 example of the seed text, verbatim.
const seedDiscovery = `{
  "protocol": "agent-discourse/1.0",
  "host": "al.ink",
  "features": [
    "rooms",
    "restricted-rooms",
    "private-rooms",
    "join-requests",
    "join-review",
    "sse-event-stream",
    "agent-status",
    "archives",
    "profiles",
    "registered-packs",
    "external-packs"
  ],
  "registered_packs": [
    "adp:reactions/1.0",
    "adp:deliberation/1.0",
    "adp:curation/1.0",
    "adp:moderation/1.0",
    "adp:realtime/1.0"
  ],
  "profile": {
    "mode": "external",
    "service": "https://profiles.example.com",
    "protocol": "agent-profile/1.0"
  },
  "endpoints": {
    "api": "https://api.al.ink/v1",
    "sse": "https://api.al.ink/v1"
  }
}`

func TestParseDiscoverySeedExample(t *testing.T) {
	d, err := adp.ParseDiscovery([]byte(seedDiscovery), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Protocol != adp.Protocol || d.Host != "al.ink" || len(d.Features) != 11 || !d.HasFeature("join-review") ||
		d.HasFeature("webhooks") || len(d.Extra) != 0 {
		t.Fatalf("top level: %+v", d)
	}
	if !slices.Equal(d.RegisteredPacks, packs.RegisteredPackIDs()) {
		t.Errorf("registered_packs %v, the SDK has %v", d.RegisteredPacks, packs.RegisteredPackIDs())
	}
	if p := d.Profile; p == nil || p.Mode != "external" || p.Service != identity.MustParseOrigin("https://profiles.example.com") ||
		p.Protocol != "agent-profile/1.0" {
		t.Fatalf("profile: %+v", d.Profile)
	}
	if e := d.Endpoints; e == nil || e.API != "https://api.al.ink/v1" || e.SSE != "https://api.al.ink/v1" {
		t.Fatalf("endpoints: %+v", d.Endpoints)
	}
	// Encoding gives the document back.
	b, err := json.Marshal(d, json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	d2, err := adp.ParseDiscovery(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(d2, json.Deterministic(true))
	if string(b) != string(b2) {
		t.Fatalf("round trip:\n%s\n%s", b, b2)
	}
	// The reason adp has its own type: the Identity-style parser wants
	// the later draft's "service" and refuses the seed document.
	if _, err := identity.ParseDiscovery([]byte(seedDiscovery), nil); err == nil {
		t.Fatal("identity.ParseDiscovery accepts the seed document; adp.Discovery may be unnecessary")
	}
}

// TestParseDiscoveryUnknownMembers: a discovery document is a service
// document, so members this draft does not define are kept, not refused —
// at the top level, in profile and in endpoints — and written back.
func TestParseDiscoveryUnknownMembers(t *testing.T) {
	doc := `{"protocol":"agent-discourse/1.0","host":"al.ink","quota":{"message_per_minute":5},
	 "profile":{"mode":"optional","required":false},
	 "endpoints":{"api":"https://api.al.ink/v1","archive":"https://cdn.al.ink/a"}}`
	d, err := adp.ParseDiscovery([]byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(d.Extra["quota"]) != `{"message_per_minute":5}` || string(d.Profile.Extra["required"]) != `false` ||
		string(d.Endpoints.Extra["archive"]) != `"https://cdn.al.ink/a"` || !d.Profile.Service.IsZero() || d.Endpoints.SSE != "" {
		t.Fatalf("%+v %+v %+v", d, d.Profile, d.Endpoints)
	}
	b, err := json.Marshal(d, json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"quota":{"message_per_minute":5}`, `"required":false`, `"archive":"https://cdn.al.ink/a"`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("%s lost in %s", s, b)
		}
	}
	// Only protocol and host are required.
	if _, err := adp.ParseDiscovery([]byte(`{"protocol":"agent-discourse/1.0","host":"h"}`), nil); err != nil {
		t.Fatal(err)
	}
}

func TestParseDiscoveryRejects(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(seedDiscovery, old) {
			t.Fatalf("%q is not in the seed example", old)
		}
		return strings.Replace(seedDiscovery, old, new, 1)
	}
	for name, doc := range map[string]string{
		"not an object":              `["agent-discourse/1.0"]`,
		"empty":                      ``,
		"trailing data":              seedDiscovery + `{}`,
		"duplicate member":           replace(`"host": "al.ink",`, `"host": "al.ink", "host": "evil.example",`),
		"unsafe number in an extra":  replace(`"host": "al.ink",`, `"host": "al.ink", "n": 9007199254740992,`),
		"invalid UTF-8":              replace(`al.ink",`, "al.ink\xff\","),
		"the later draft's protocol": replace(`"agent-discourse/1.0"`, `"agent-discourse/1.1"`),
		"no protocol":                replace(`"protocol": "agent-discourse/1.0",`, ``),
		"no host":                    replace(`"host": "al.ink",`, ``),
		"empty host":                 replace(`"host": "al.ink"`, `"host": ""`),
		"host not a string":          replace(`"host": "al.ink"`, `"host": ["al.ink"]`),
		"features not an array":      replace(`"features": [`, `"features": "rooms", "f": [`),
		"repeated feature":           replace(`"rooms",`, `"rooms", "rooms",`),
		"empty feature":              replace(`"rooms",`, `"",`),
		"feature not a string":       replace(`"rooms",`, `1,`),
		"repeated pack":              replace(`"adp:reactions/1.0",`, `"adp:reactions/1.0", "adp:reactions/1.0",`),
		"external pack URI listed":   replace(`"adp:reactions/1.0",`, `"https://example.com/p.json",`),
		"pack without version":       replace(`"adp:reactions/1.0",`, `"adp:reactions",`),
		"profile not an object":      replace(`"profile": {`, `"profile": "external", "p": {`),
		"profile service http":       replace(`"https://profiles.example.com"`, `"http://profiles.example.com"`),
		"profile service with path":  replace(`"https://profiles.example.com"`, `"https://profiles.example.com/v1"`),
		"profile mode not a string":  replace(`"mode": "external"`, `"mode": 1`),
		"endpoints not an object":    replace(`"endpoints": {`, `"endpoints": "https://api.al.ink/v1", "e": {`),
		"api over http":              replace(`"api": "https://api.al.ink/v1"`, `"api": "http://api.al.ink/v1"`),
		"api relative":               replace(`"api": "https://api.al.ink/v1"`, `"api": "/v1"`),
		"api with userinfo":          replace(`"api": "https://api.al.ink/v1"`, `"api": "https://u:p@api.al.ink/v1"`),
		"sse with fragment":          replace(`"sse": "https://api.al.ink/v1"`, `"sse": "https://api.al.ink/v1#x"`),
		"sse with query":             replace(`"sse": "https://api.al.ink/v1"`, `"sse": "https://api.al.ink/v1?k=1"`),
		"sse not a string":           replace(`"sse": "https://api.al.ink/v1"`, `"sse": null`),
	} {
		t.Run(name, func(t *testing.T) {
			d, err := adp.ParseDiscovery([]byte(doc), nil)
			if !errors.Is(err, identity.ErrInvalidRequest) || d != nil {
				t.Fatalf("got %+v, %v; want invalid_request", d, err)
			}
		})
	}
}

func TestParseDiscoveryLoopback(t *testing.T) {
	doc := `{"protocol":"agent-discourse/1.0","host":"localhost","profile":{"service":"http://127.0.0.1:8081"},
	 "endpoints":{"api":"http://127.0.0.1:8080/v1","sse":"http://[::1]:8080/v1"}}`
	if _, err := adp.ParseDiscovery([]byte(doc), nil); err == nil {
		t.Fatal("plain HTTP accepted without OriginOptions")
	}
	if _, err := adp.ParseDiscovery([]byte(doc), &identity.OriginOptions{AllowLoopbackHTTP: true}); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseDiscovery(f *testing.F) {
	f.Add([]byte(seedDiscovery))
	f.Add([]byte(`{"protocol":"agent-discourse/1.0","host":"h","profile":{},"endpoints":{}}`))
	f.Add([]byte(laterDiscovery))
	f.Add([]byte(`{"protocol":"agent-discourse/1.0","service":"https://h.example","endpoints":{"rooms":"https://h.example/v1/rooms","x":"https://h.example/x"},"profile":{"required":true,"x":1},"n":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := adp.ParseDiscovery(b, nil)
		if err != nil {
			if d != nil || !errors.Is(err, identity.ErrInvalidRequest) {
				t.Fatalf("%v with %+v", err, d)
			}
			return
		}
		// What parses re-encodes to a document that parses the same.
		out, err := json.Marshal(d, json.Deterministic(true))
		if err != nil {
			t.Fatal(err)
		}
		d2, err := adp.ParseDiscovery(out, nil)
		if err != nil {
			t.Fatalf("re-encoded %s: %v", out, err)
		}
		out2, _ := json.Marshal(d2, json.Deterministic(true))
		if string(out) != string(out2) {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
	})
}

// A client reads a host's discovery document before using its API.
func ExampleParseDiscovery() {
	body := []byte(`{"protocol":"agent-discourse/1.0","host":"al.ink",
	 "features":["rooms","join-requests","sse-event-stream"],
	 "endpoints":{"api":"https://api.al.ink/v1","sse":"https://api.al.ink/v1"}}`)
	d, err := adp.ParseDiscovery(body, nil)
	if err != nil {
		fmt.Println("unusable discovery document:", err)
		return
	}
	fmt.Println(d.Host, d.Endpoints.API, d.HasFeature("sse-event-stream"))
	// Output: al.ink https://api.al.ink/v1 true
}

// laterDiscovery is the §15.1 example of the 2026-09-24 text, verbatim.
const laterDiscovery = `{
  "protocol": "agent-discourse/1.0",
  "service": "https://api.al.ink",
  "endpoints": {
    "rooms": "https://api.al.ink/v1/rooms",
    "my_rooms": "https://api.al.ink/v1/me/rooms"
  },
  "features": [
    "restricted-rooms",
    "private-rooms",
    "public-discovery",
    "agent-status",
    "redaction",
    "markdown-archive",
    "registered-packs",
    "external-packs"
  ],
  "registered_packs": [
    "adp:reactions/1.0",
    "adp:deliberation/1.0",
    "adp:curation/1.0",
    "adp:moderation/1.0",
    "adp:realtime/1.0"
  ],
  "profile": {
    "service": "https://profiles.example.com",
    "required": false
  }
}`

// TestParseDiscoveryDrafts: the shape of a discovery document says the
// draft (2026-09-24 §15.1: an Agent Identity document, with service and
// no host), each shape is checked by its draft's rules, and the seed's
// document keeps what it always had.
func TestParseDiscoveryDrafts(t *testing.T) {
	d, err := adp.ParseDiscovery([]byte(laterDiscovery), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Draft != adp.Draft20260924 || d.Service.String() != "https://api.al.ink" || d.Host != "" ||
		d.Endpoints == nil || d.Endpoints.Rooms != "https://api.al.ink/v1/rooms" || d.Endpoints.MyRooms != "https://api.al.ink/v1/me/rooms" ||
		len(d.RegisteredPacks) != 5 || d.Profile == nil || d.Profile.Service.String() != "https://profiles.example.com" ||
		!d.HasFeature("public-discovery") || len(d.Extra) != 0 {
		t.Fatalf("the 2026-09-24 example: %+v", d)
	}
	seed, err := adp.ParseDiscovery([]byte(seedDiscovery), nil)
	if err != nil || seed.Draft != adp.Draft20260704 {
		t.Fatalf("the seed example: %+v, %v", seed, err)
	}
	// A seed document's service member stays an unknown one.
	withService := strings.Replace(seedDiscovery, `"host": "al.ink",`, `"host": "al.ink", "service": 1,`, 1)
	if d, err := adp.ParseDiscovery([]byte(withService), nil); err != nil || d.Draft != adp.Draft20260704 || d.Extra["service"] == nil {
		t.Fatalf("a seed document with a service member: %+v, %v", d, err)
	}
	replace := func(old, new string) string {
		if !strings.Contains(laterDiscovery, old) {
			t.Fatalf("%q is not in the 2026-09-24 example", old)
		}
		return strings.Replace(laterDiscovery, old, new, 1)
	}
	for name, doc := range map[string]string{
		"service not an origin":    replace(`"https://api.al.ink",`, `"https://api.al.ink/v1",`),
		"service over http":        replace(`"https://api.al.ink",`, `"http://api.al.ink",`),
		"another protocol":         replace(`"agent-discourse/1.0"`, `"agent-identity/1.0"`),
		"rooms relative":           replace(`"https://api.al.ink/v1/rooms"`, `"/v1/rooms"`),
		"rooms not a string":       replace(`"https://api.al.ink/v1/rooms"`, `1`),
		"repeated feature":         replace(`"redaction",`, `"redaction", "redaction",`),
		"pack without version":     replace(`"adp:reactions/1.0",`, `"adp:reactions",`),
		"profile required string":  replace(`"required": false`, `"required": "no"`),
		"profile service http":     replace(`"https://profiles.example.com"`, `"http://profiles.example.com"`),
		"duplicate service member": replace(`"service": "https://api.al.ink",`, `"service": "https://api.al.ink", "service": "https://x.example",`),
	} {
		t.Run(name, func(t *testing.T) {
			d, err := adp.ParseDiscovery([]byte(doc), nil)
			if !errors.Is(err, identity.ErrInvalidRequest) || d != nil {
				t.Fatalf("got %+v, %v; want invalid_request", d, err)
			}
		})
	}
}

package packs

import (
	"context"
	"crypto/sha3"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/b64url"
	"github.com/agentprotocols/go-sdk/internal/fixtures"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

const later = Draft20260924

// laterVectors are the parts of the 2026-09-24 vectors the type system
// answers for.
type laterVectors struct {
	Patterns struct {
		Valid   []string `json:"valid"`
		Invalid []string `json:"invalid"`
	} `json:"patterns"`
	TypeNames struct {
		Valid   []string `json:"valid"`
		Invalid []string `json:"invalid"`
	} `json:"type_names"`
}

func readLaterVectors(t testing.TB) laterVectors {
	t.Helper()
	var v laterVectors
	if err := strictjson.UnmarshalOpen(fixtures.LaterVectors, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Patterns.Valid) == 0 || len(v.Patterns.Invalid) == 0 || len(v.TypeNames.Valid) == 0 {
		t.Fatal("the vectors lost their patterns or type names")
	}
	return v
}

func TestDraftNames(t *testing.T) {
	for _, d := range Drafts() {
		got, err := ParseDraft(d.String())
		if err != nil || got != d {
			t.Errorf("%v: ParseDraft(%q) = %v, %v", d, d.String(), got, err)
		}
	}
	var zero Draft
	if zero.OrDefault() != Draft20260704 || zero.String() != "2026-07-04" {
		t.Errorf("the zero Draft is %v", zero)
	}
	if _, err := ParseDraft("2026-08-01"); err == nil {
		t.Error("an unknown draft parsed")
	}
	if Draft(9).Known() {
		t.Error("Draft(9) is known")
	}
	if got := Draft20260924.BuiltinTypes(); len(got) != 12 || !slices.Contains(got, "room.join.request") {
		t.Errorf("2026-09-24 built-ins: %v", got)
	}
	if got := BuiltinTypes(); len(got) != 11 || slices.Contains(got, "room.join.request") {
		t.Errorf("default built-ins: %v", got)
	}
}

// The vectors' type names (2026-09-24 §12.3): message. is reserved too.
func TestLaterVectorTypeNames(t *testing.T) {
	v := readLaterVectors(t)
	for _, n := range v.TypeNames.Valid {
		if !later.ValidTypeName(n) {
			t.Errorf("valid name %q refused", n)
		}
		decl := `{"type":"` + n + `","kind":"signal","title":"x","schema":{"type":"object"}}`
		if _, err := later.ParseDeclaration([]byte(decl)); err != nil {
			t.Errorf("declaration of %q: %v", n, err)
		}
	}
	for _, n := range v.TypeNames.Invalid {
		if later.ValidTypeName(n) {
			t.Errorf("invalid name %q accepted", n)
		}
		decl := `{"type":"` + n + `","kind":"signal","title":"x","schema":{"type":"object"}}`
		_, err := later.ParseDeclaration([]byte(decl))
		wantCode(t, err, identity.CodeInvalidEvent)
	}
	// The seed reserves only room. and type.
	if !ValidTypeName("message.edit") || later.ValidTypeName("message.edit") {
		t.Error("message.edit: the drafts disagree the wrong way")
	}
}

// The vectors' patterns (2026-09-24 §12.3.1 rule 2), both alone and as a
// declaration's schema: an invalid one is invalid_type_schema.
func TestLaterVectorPatterns(t *testing.T) {
	v := readLaterVectors(t)
	schema := func(p string) string {
		b, _ := json.Marshal(map[string]any{"type": "string", "pattern": p})
		return string(b)
	}
	for _, p := range v.Patterns.Valid {
		if _, _, err := defaultCache.compile([]byte(schema(p)), later.limits()); err != nil {
			t.Errorf("valid pattern %q in a schema: %v", p, err)
		}
	}
	for _, p := range v.Patterns.Invalid {
		_, _, err := defaultCache.compile([]byte(schema(p)), later.limits())
		wantCode(t, err, CodeInvalidTypeSchema)
	}
}

// Rule 1 of the profile: fragment references only, no dynamic or
// recursive references, no $vocabulary; $schema only 2020-12. Rule 3:
// format and the content keywords are annotations.
func TestTypeSchemaProfile(t *testing.T) {
	lim := later.limits()
	for name, s := range map[string]string{
		"$id-relative reference":      `{"$defs":{"a":{"$id":"https://x.example/a","type":"string"}},"properties":{"x":{"$ref":"https://x.example/a"}}}`,
		"relative reference":          `{"$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"a.json"}}}`,
		"$dynamicRef":                 `{"$dynamicAnchor":"n","properties":{"x":{"$dynamicRef":"#n"}}}`,
		"$dynamicAnchor":              `{"$dynamicAnchor":"n"}`,
		"$recursiveRef":               `{"properties":{"x":{"$recursiveRef":"#"}}}`,
		"$recursiveAnchor":            `{"$recursiveAnchor":true}`,
		"$vocabulary":                 `{"$vocabulary":{"https://json-schema.org/draft/2020-12/vocab/core":true}}`,
		"older $schema":               `{"$schema":"http://json-schema.org/draft-07/schema#"}`,
		"pattern in $defs":            `{"$defs":{"a":{"type":"string","pattern":"a.b"}}}`,
		"patternProperties key":       `{"patternProperties":{"\\w+":{"type":"string"}}}`,
		"pattern under items":         `{"items":{"pattern":"\\d"}}`,
		"pattern in a referenced def": `{"$defs":{"a":{"pattern":"(?:a)"}},"$ref":"#/$defs/a"}`,
		"not a schema at all":         `{"type":7}`,
	} {
		_, _, err := defaultCache.compile([]byte(s), lim)
		wantCode(t, err, CodeInvalidTypeSchema)
		// The seed refuses what it refuses as invalid_event, and admits
		// the I-Regexp violations that RE2 runs.
		if _, _, err := defaultCache.compile([]byte(s), defaultLimits); err != nil {
			if code := errCode(err); code != identity.CodeInvalidEvent && code != CodeSchemaUnsupported {
				t.Errorf("%s: seed code %s", name, code)
			}
		}
	}
	for name, s := range map[string]string{
		"fragment reference":          `{"$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`,
		"anchor reference":            `{"$defs":{"a":{"$anchor":"a","type":"string"}},"properties":{"x":{"$ref":"#a"}}}`,
		"keyword names as properties": `{"properties":{"$vocabulary":{"type":"string"},"pattern":{"type":"string"}}}`,
		"keywords inside const":       `{"const":{"$dynamicRef":"#x","pattern":"a.b"}}`,
		"2020-12 $schema":             `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`,
	} {
		if _, _, err := defaultCache.compile([]byte(s), lim); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// format, contentEncoding, contentMediaType and contentSchema never
	// refuse a payload.
	reg := NewRegistry(&Options{Draft: later})
	if err := reg.Declare(context.Background(), 1, mustLaterDecl(t, `{"type":"x.annotated","kind":"signal","title":"x","schema":{"type":"object","properties":{"e":{"type":"string","format":"email"},"d":{"type":"string","format":"date-time"},"b":{"type":"string","contentEncoding":"base64","contentMediaType":"application/json","contentSchema":{"type":"object","pattern":"^a$"}}}}}`)); err != nil {
		t.Fatal(err)
	}
	if err := reg.Validate("x.annotated", []byte(`{"e":"not an email","d":"yesterday","b":"%%% not base64"}`)); err != nil {
		t.Fatalf("an annotation refused a payload: %v", err)
	}
	// A pattern keeps JSON Schema's unanchored search.
	if err := reg.Declare(context.Background(), 2, mustLaterDecl(t, `{"type":"x.searched","kind":"signal","title":"x","schema":{"type":"object","properties":{"s":{"type":"string","pattern":"b+"}}}}`)); err != nil {
		t.Fatal(err)
	}
	if err := reg.Validate("x.searched", []byte(`{"s":"abbbc"}`)); err != nil {
		t.Fatalf("unanchored search: %v", err)
	}
	wantCode(t, reg.Validate("x.searched", []byte(`{"s":"ac"}`)), CodePayloadSchemaViolation)
}

func errCode(err error) identity.Code {
	if ie, ok := err.(*identity.Error); ok {
		return ie.Code
	}
	return ""
}

func mustLaterDecl(t testing.TB, s string) Declaration {
	t.Helper()
	d, err := later.ParseDeclaration([]byte(s))
	if err != nil {
		t.Fatalf("ParseDeclaration(%s): %v", s, err)
	}
	return d
}

// §12.4 of the later draft: duplicates within one declaration list or
// one import, kind changes, and subsets or overrides naming types the
// pack lacks are type_conflict. The seed lets a later declaration
// redefine an earlier one in the same list and has no code for the rest.
func TestTypeConflict(t *testing.T) {
	ctx := context.Background()
	def := func(kind string) string {
		return `{"type":"x.item","kind":"` + kind + `","title":"x","schema":{"type":"object"}}`
	}
	laterReg := func() *Registry { return NewRegistry(&Options{Draft: later}) }
	decl := func(d Draft, s string) Declaration {
		dd, err := d.ParseDeclaration([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return dd
	}
	// A name twice in one list.
	wantCode(t, laterReg().Declare(ctx, 1, decl(later, def("signal")), decl(later, def("signal"))), CodeTypeConflict)
	if err := NewRegistry(nil).Declare(ctx, 1, decl(0, def("signal")), decl(0, def("signal"))); err != nil {
		t.Fatalf("seed: a later declaration of room.create redefines an earlier one: %v", err)
	}
	// A pack twice in one list names its types twice.
	wantCode(t, laterReg().Declare(ctx, 1, decl(later, `{"use":"adp:reactions/1.0"}`), decl(later, `{"use":"adp:reactions/1.0"}`)), CodeTypeConflict)
	// A kind change on redefinition.
	r := laterReg()
	if err := r.Declare(ctx, 1, decl(later, def("signal"))); err != nil {
		t.Fatal(err)
	}
	wantCode(t, r.Declare(ctx, 2, decl(later, def("control"))), CodeTypeConflict)
	if err := r.Declare(ctx, 3, decl(later, def("signal"))); err != nil {
		t.Fatalf("a redefinition keeping the kind: %v", err)
	}
	seed := NewRegistry(nil)
	if err := seed.Declare(ctx, 1, decl(0, def("signal"))); err != nil {
		t.Fatal(err)
	}
	wantCode(t, seed.Declare(ctx, 2, decl(0, def("control"))), identity.CodeInvalidEvent)
	// Subsets and overrides naming types the pack lacks.
	wantCode(t, laterReg().Declare(ctx, 1, decl(later, `{"use":"adp:moderation/1.0","types":["session.offer"]}`)), CodeTypeConflict)
	wantCode(t, laterReg().Declare(ctx, 1, decl(later, `{"use":"adp:moderation/1.0","types":["turn.update"],"overrides":{"claim.update":{"status":"disabled"}}}`)), CodeTypeConflict)
	wantCode(t, NewRegistry(nil).Declare(ctx, 1, decl(0, `{"use":"adp:moderation/1.0","types":["session.offer"]}`)), identity.CodeInvalidEvent)
}

// The registered packs differ between drafts (2026-09-24 Appendix A).
func TestLaterRegisteredPacks(t *testing.T) {
	if !slices.Equal(later.RegisteredPackIDs(), RegisteredPackIDs()) {
		t.Fatalf("registered ids differ: %v / %v", later.RegisteredPackIDs(), RegisteredPackIDs())
	}
	mod, ok := later.RegisteredPack("adp:moderation/1.0")
	if !ok || !slices.ContainsFunc(mod.Types, func(d *Definition) bool { return d.Type == "claim.update" && d.Kind == KindControl }) {
		t.Fatal("2026-09-24 moderation has no control claim.update")
	}
	rt, _ := later.RegisteredPack("adp:realtime/1.0")
	if slices.ContainsFunc(rt.Types, func(d *Definition) bool { return d.Type == "session.candidate" }) {
		t.Fatal("2026-09-24 realtime still has session.candidate")
	}
	seedRT, _ := RegisteredPack("adp:realtime/1.0")
	if !slices.ContainsFunc(seedRT.Types, func(d *Definition) bool { return d.Type == "session.candidate" }) {
		t.Fatal("the seed's realtime lost session.candidate")
	}
	// Reaction scores are integers from -100 to 100.
	r := NewRegistry(&Options{Draft: later})
	if err := r.Declare(context.Background(), 1, mustLaterDecl(t, `{"use":"adp:reactions/1.0"}`)); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate("reaction.create", []byte(`{"event_id":"`+hashA+`","reaction":"agree","score":80}`)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, r.Validate("reaction.create", []byte(`{"event_id":"`+hashA+`","reaction":"agree","score":0.5}`)), CodePayloadSchemaViolation)
	if string(later.RegisteredDocument()) == string(RegisteredDocument()) {
		t.Fatal("one registered document for both drafts")
	}
}

// §12.5 of the later draft: hosts support sha256 and sha3-256 digests;
// the seed admits sha256 only.
func TestLaterDigests(t *testing.T) {
	doc := fixtures.TriagePack
	sum := sha3.Sum256(doc)
	d3 := "sha3-256:" + b64url.Encode(sum[:])
	if err := later.VerifyDigest(doc, d3); err != nil {
		t.Fatal(err)
	}
	if err := later.VerifyDigest(doc, Digest(doc)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, VerifyDigest(doc, d3), CodePackUnavailable)
	wantCode(t, later.VerifyDigest([]byte("other"), d3), CodePackUnavailable)
	wantCode(t, later.VerifyDigest(doc, "sha512:"+b64url.Encode(sum[:])), CodePackUnavailable)
	ctx := context.Background()
	imp := `{"pack":"` + fixtures.TriagePackURI + `","digest":"` + d3 + `"}`
	r := NewRegistry(&Options{Draft: later, Fetcher: StaticFetcher{{Pack: fixtures.TriagePackURI, Digest: d3, Raw: doc}}})
	if err := r.Declare(ctx, 1, mustLaterDecl(t, imp)); err != nil {
		t.Fatal(err)
	}
	if docs := r.Documents(); len(docs) != 1 || docs[0].Digest != d3 {
		t.Fatalf("documents %v", docs)
	}
	// The seed's registry cannot verify a sha3-256 digest.
	seed := NewRegistry(&Options{Fetcher: StaticFetcher{{Pack: fixtures.TriagePackURI, Digest: d3, Raw: doc}}})
	wantCode(t, seed.Declare(ctx, 1, mustDecl(t, imp)), CodePackUnavailable)
}

// The later kernel: room.create names its host, room.join.request is a
// built-in, a review embeds a signed request, room.join has no
// request_id, and policy has invites and open_roles.
func TestLaterKernel(t *testing.T) {
	ok := map[string]string{
		"room.create":       `{"host":"https://api.example.com","topic":"t","visibility":"public","start_time":1,"end_time":2,"policy":{"invites":{"` + agentA + `":"moderator"},"open_roles":["speaker","observer"]}}`,
		"room.join":         `{"role":"speaker","perspective":"p"}`,
		"room.join.request": `{"role":"speaker","reason":"r","extra":{}}`,
		"room.update":       `{"policy":{"open_roles":[]}}`,
	}
	for typ, p := range ok {
		if err := later.ValidateBuiltin(typ, []byte(p)); err != nil {
			t.Errorf("%s: %v", typ, err)
		}
	}
	bad := map[string]string{
		"room.create without host":    `{"topic":"t","visibility":"public","start_time":1,"end_time":2}`,
		"private room with open role": `{"host":"https://h.example","topic":"t","visibility":"private","start_time":1,"end_time":2,"policy":{"open_roles":["observer"]}}`,
		"open moderator role":         `{"host":"https://h.example","topic":"t","visibility":"public","start_time":1,"end_time":2,"policy":{"open_roles":["moderator"]}}`,
		"moderator_agent_ids":         `{"host":"https://h.example","topic":"t","visibility":"public","start_time":1,"end_time":2,"policy":{"moderator_agent_ids":[]}}`,
		"room.join with request_id":   `{"role":"speaker","request_id":"jr_1"}`,
	}
	for name, p := range bad {
		typ := "room.create"
		if strings.HasPrefix(name, "room.join") {
			typ = "room.join"
		}
		if err := later.ValidateBuiltin(typ, []byte(p)); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	// The seed knows no room.join.request and no host.
	wantCode(t, ValidateBuiltin("room.join.request", []byte(ok["room.join.request"])), identity.CodeInvalidEvent)
	wantCode(t, ValidateBuiltin("room.create", []byte(ok["room.create"])), identity.CodeInvalidEvent)
	// A definition with version is the seed's: the later typeDef is closed
	// without it.
	if _, err := later.ParseDeclaration([]byte(`{"type":"x.v","kind":"signal","title":"x","version":"1.0","schema":{}}`)); err == nil {
		t.Error("2026-09-24 accepted a version member")
	}
}

// FuzzTypeSchemaProfile: admitting a type schema under the 2026-09-24
// profile never panics, fails only with invalid_type_schema or
// schema_unsupported, and admits nothing the seed's rules refuse: the
// profile only narrows.
func FuzzTypeSchemaProfile(f *testing.F) {
	v := readLaterVectors(f)
	for _, p := range append(v.Patterns.Valid, v.Patterns.Invalid...) {
		b, _ := json.Marshal(map[string]any{"type": "object", "patternProperties": map[string]any{p: map[string]any{"pattern": p}}})
		f.Add(b)
	}
	for _, s := range []string{
		`{"$defs":{"a":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`,
		`{"$defs":{"a":{"$id":"https://x.example/a"}},"$ref":"https://x.example/a"}`,
		`{"$dynamicAnchor":"n","items":{"$dynamicRef":"#n"}}`,
		`{"properties":{"e":{"format":"email","contentSchema":{"pattern":"."}}}}`,
	} {
		f.Add([]byte(s))
	}
	cache := NewSchemaCache(0)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4096 {
			return
		}
		_, _, err := cache.compile(b, later.limits())
		if err != nil {
			if c := errCode(err); c != CodeInvalidTypeSchema && c != CodeSchemaUnsupported {
				t.Fatalf("code %s: %v", c, err)
			}
			return
		}
		if _, _, err := cache.compile(b, defaultLimits); err != nil {
			t.Fatalf("the profile admitted what the seed refuses: %v", err)
		}
	})
}

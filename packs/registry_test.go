package packs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
)

// TestSeedRoomTypes resolves the §9 room.create types array.
func TestSeedRoomTypes(t *testing.T) {
	decls, err := ParseDeclarations([]byte(seedTypes))
	if err != nil {
		t.Fatal(err)
	}
	var r Registry
	if err := r.Declare(context.Background(), 1, decls...); err != nil {
		t.Fatal(err)
	}
	all := []Role{RoleModerator, RoleSpeaker, RoleObserver}
	ms := []Role{RoleModerator, RoleSpeaker}
	want := []struct {
		typ   string
		kind  Kind
		roles []Role
	}{
		{"reaction.create", KindSignal, all},
		{"question.create", KindMessage, ms},
		{"proposal.create", KindMessage, ms},
		{"poll.create", KindMessage, ms},
		{"poll.vote", KindSignal, all}, // the override adds observer
		{"review.finding", KindMessage, ms},
	}
	defs := r.Definitions()
	if len(defs) != len(want) || r.Len() != len(want) {
		t.Fatalf("got %d definitions, want %d", len(defs), len(want))
	}
	for i, w := range want {
		d := defs[i]
		if d.Type != w.typ || d.Kind != w.kind || !slices.Equal(d.AllowedRoles(), w.roles) || d.Status != StatusActive {
			t.Errorf("[%d] got %s %s %v %s, want %s %s %v", i, d.Type, d.Kind, d.AllowedRoles(), d.Status, w.typ, w.kind, w.roles)
		}
		if r.Lookup(w.typ) != d {
			t.Errorf("%s: Lookup disagrees with Definitions", w.typ)
		}
	}
	if !r.Lookup("poll.vote").Allows(RoleObserver) || r.Lookup("poll.create").Allows(RoleObserver) {
		t.Error("observer permissions wrong")
	}
	// The registered pack itself is unchanged by the override.
	p, _ := RegisteredPack("adp:deliberation/1.0")
	if p.Types[3].Roles[len(p.Types[3].Roles)-1] == RoleObserver {
		t.Error("override leaked into the registered pack")
	}
	fd := r.Lookup("review.finding")
	if fd.Title != "Review finding" || !strings.HasPrefix(fd.Instructions, "Report one finding") || fd.Roles != nil {
		t.Errorf("review.finding materialized as %+v", fd)
	}
	if err := r.Validate("review.finding", []byte(seedFinding)); err != nil {
		t.Errorf("§13.4 finding: %v", err)
	}
	wantCode(t, r.Validate("review.finding", []byte(`{"severity":"critical","summary":"x"}`)), CodePayloadSchemaViolation)
	if len(r.Documents()) != 0 {
		t.Error("registered packs are not external documents")
	}
	// The Room resource's types array is plain JSON.
	b, err := json.Marshal(r.Definitions(), json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	var back []map[string]any
	if err := json.Unmarshal(b, &back); err != nil || len(back) != 6 || back[4]["type"] != "poll.vote" || back[0]["status"] != "active" {
		t.Fatalf("types array %s: %v", b, err)
	}
	// §13.4: a type.define adds review.resolution later.
	before := r.Clone()
	mustDeclare(t, &r, 19, seedTypeDefine)
	if d := r.Lookup("review.resolution"); d == nil || d.Kind != KindControl || before.Lookup("review.resolution") != nil {
		t.Fatal("type.define not applied")
	}
	wantCode(t, before.Validate("review.resolution", []byte(`{"outcome":"accepted","summary":"s"}`)), CodeTypeNotDefined)
	if err := r.Validate("review.resolution", []byte(`{"outcome":"accepted","summary":"s"}`)); err != nil {
		t.Fatal(err)
	}
}

func TestImportSubsetsAndOverrides(t *testing.T) {
	ctx := context.Background()
	var r Registry
	mustDeclare(t, &r, 1, `{"use":"adp:deliberation/1.0","types":["poll.vote","poll.create"],"overrides":{"poll.vote":{"roles":["observer"],"instructions":"","status":"deprecated","rate_hint":5,"max_payload_hint":1024}}}`)
	if r.Len() != 2 || r.Definitions()[0].Type != "poll.create" {
		t.Fatalf("subset materialized %v", r.Definitions())
	}
	v := r.Lookup("poll.vote")
	if !slices.Equal(v.Roles, []Role{RoleObserver}) || v.Instructions != "" || v.Status != StatusDeprecated ||
		v.RateHint != 5 || v.MaxPayloadHint != 1024 || v.Kind != KindSignal {
		t.Fatalf("override applied as %+v", v)
	}
	// Deprecated types still validate (§13.6 step 2).
	if err := r.Validate("poll.vote", []byte(`{"poll_event_id":"`+hashA+`","option_ids":["a"]}`)); err != nil {
		t.Fatal(err)
	}
	for name, decl := range map[string]string{
		"override touching kind":    `{"use":"adp:reactions/1.0","overrides":{"reaction.create":{"kind":"message"}}}`,
		"override touching schema":  `{"use":"adp:reactions/1.0","overrides":{"reaction.create":{"schema":{}}}}`,
		"override touching title":   `{"use":"adp:reactions/1.0","overrides":{"reaction.create":{"title":"R"}}}`,
		"override with empty roles": `{"use":"adp:reactions/1.0","overrides":{"reaction.create":{"roles":[]}}}`,
		"override with bad role":    `{"use":"adp:reactions/1.0","overrides":{"reaction.create":{"roles":["admin"]}}}`,
		"override with zero hint":   `{"use":"adp:reactions/1.0","overrides":{"reaction.create":{"rate_hint":0}}}`,
		"empty subset":              `{"use":"adp:reactions/1.0","types":[]}`,
		"duplicate subset":          `{"use":"adp:reactions/1.0","types":["reaction.create","reaction.create"]}`,
		"use and pack":              `{"use":"adp:reactions/1.0","pack":"https://p.example/x.json","digest":"sha256:x"}`,
		"pack without digest":       `{"pack":"https://p.example/x.json"}`,
		"digest without pack":       `{"digest":"sha256:x"}`,
		"relative pack":             `{"pack":"/x.json","digest":"sha256:x"}`,
		"empty pack":                `{"pack":"","digest":"sha256:x"}`,
		"malformed use":             `{"use":"reactions"}`,
		"use plus inline fields":    `{"use":"adp:reactions/1.0","type":"a.b"}`,
		"overrides only":            `{"overrides":{}}`,
		"null use":                  `{"use":null}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseDeclaration([]byte(decl))
			wantCode(t, err, "invalid_event")
		})
	}
	for name, decl := range map[string]string{
		"subset names a type not in the pack":   `{"use":"adp:reactions/1.0","types":["poll.vote"]}`,
		"override names a type not in the pack": `{"use":"adp:reactions/1.0","overrides":{"poll.vote":{"roles":["observer"]}}}`,
		"override names a type not imported":    `{"use":"adp:deliberation/1.0","types":["poll.create"],"overrides":{"poll.vote":{"roles":["observer"]}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var r Registry
			err := r.Declare(ctx, 1, mustDecl(t, decl))
			wantCode(t, err, "invalid_event")
			if r.Len() != 0 {
				t.Fatal("applied anyway")
			}
		})
	}
	var r2 Registry
	wantCode(t, r2.Declare(ctx, 1, mustDecl(t, `{"use":"adp:reactions/9.9"}`)), CodePackUnavailable)
}

// TestDeclarationsParseStrictly: strict JSON and closed objects.
func TestDeclarationsParseStrictly(t *testing.T) {
	for name, decl := range map[string]string{
		"duplicate member":        `{"type":"a.b","type":"a.c","kind":"signal","title":"t","schema":{}}`,
		"duplicate in schema":     `{"type":"a.b","kind":"signal","title":"t","schema":{"type":"string","type":"integer"}}`,
		"unknown member":          `{"type":"a.b","kind":"signal","title":"t","schema":{},"color":"red"}`,
		"case-folded member":      `{"Type":"a.b","kind":"signal","title":"t","schema":{}}`,
		"bad kind":                `{"type":"a.b","kind":"event","title":"t","schema":{}}`,
		"missing title":           `{"type":"a.b","kind":"signal","schema":{}}`,
		"empty title":             `{"type":"a.b","kind":"signal","title":"","schema":{}}`,
		"null description":        `{"type":"a.b","kind":"signal","title":"t","description":null,"schema":{}}`,
		"schema not object":       `{"type":"a.b","kind":"signal","title":"t","schema":true}`,
		"bad status":              `{"type":"a.b","kind":"signal","title":"t","schema":{},"status":"gone"}`,
		"duplicate roles":         `{"type":"a.b","kind":"signal","title":"t","schema":{},"roles":["speaker","speaker"]}`,
		"fractional rate_hint":    `{"type":"a.b","kind":"signal","title":"t","schema":{},"rate_hint":1.5}`,
		"extra not object":        `{"type":"a.b","kind":"signal","title":"t","schema":{},"extra":[]}`,
		"empty version":           `{"type":"a.b","kind":"signal","title":"t","schema":{},"version":""}`,
		"not an object":           `["a.b"]`,
		"trailing data":           `{"use":"adp:reactions/1.0"} x`,
		"invalid UTF-8":           "{\"type\":\"a.b\",\"kind\":\"signal\",\"title\":\"\xff\",\"schema\":{}}",
		"lone surrogate":          `{"type":"a.b","kind":"signal","title":"\ud800","schema":{}}`,
		"unsafe integer":          `{"type":"a.b","kind":"signal","title":"t","schema":{},"rate_hint":9007199254740993}`,
		"invalid pattern":         `{"type":"a.b","kind":"signal","title":"t","schema":{"pattern":"(a"}}`,
		"schema fails metaschema": `{"type":"a.b","kind":"signal","title":"t","schema":{"minLength":-1}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseDeclaration([]byte(decl))
			wantCode(t, err, "invalid_event")
		})
	}
	if _, err := ParseDeclarations([]byte(`{"use":"adp:reactions/1.0"}`)); err == nil {
		t.Error("ParseDeclarations accepted an object")
	}
	_, err := ParseDeclarations([]byte(`[{"use":"adp:reactions/1.0"},{"use":"x"}]`))
	if ie := wantCode(t, err, "invalid_event"); !strings.Contains(ie.Message, "types[1]") {
		t.Errorf("no index in %q", ie.Message)
	}
	// A Declaration decodes strictly inside a larger struct, too.
	var payload struct {
		Types []Declaration `json:"types"`
	}
	if err := json.Unmarshal([]byte(`{"types":`+seedTypes+`}`), &payload); err != nil || len(payload.Types) != 3 {
		t.Fatalf("json.Unmarshal: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"types":[{"use":"adp:reactions/1.0","x":1}]}`), &payload); err == nil {
		t.Fatal("json.Unmarshal accepted an unknown member")
	}
}

func TestSchemaDialect(t *testing.T) {
	for _, s := range []string{
		"http://json-schema.org/draft-07/schema#",
		"http://json-schema.org/draft-04/schema#",
		"https://json-schema.org/draft/2019-09/schema",
		"http://json-schema.org/schema#",
		"https://json-schema.org/draft/2020-12/schema?x",
		"https://json-schema.org/draft/2020-12/schema#", // the same resource, but not the form the SDK accepts
	} {
		_, err := ParseDeclaration([]byte(`{"type":"a.b","kind":"signal","title":"t","schema":{"$schema":"` + s + `","type":"object"}}`))
		wantCode(t, err, "invalid_event")
		// Nested resources cannot switch dialect either.
		_, err = ParseDeclaration([]byte(`{"type":"a.b","kind":"signal","title":"t","schema":{"$defs":{"x":{"$id":"urn:x","$schema":"` + s + `"}}}}`))
		wantCode(t, err, "invalid_event")
	}
	for _, s := range []string{"https://json-schema.org/draft/2020-12/schema"} {
		if _, err := ParseDeclaration([]byte(`{"type":"a.b","kind":"signal","title":"t","schema":{"$schema":"` + s + `"}}`)); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}

func TestSchemaSizeLimit(t *testing.T) {
	// {"description":"xxx…"} canonical size is 17 + n.
	mk := func(n int) string {
		return `{"type":"a.b","kind":"signal","title":"t","schema":{ "description" : "` + strings.Repeat("x", n) + `" }}`
	}
	if _, err := ParseDeclaration([]byte(mk(MaxSchemaBytes - 18))); err != nil {
		t.Fatalf("schema of exactly 16 KiB: %v", err)
	}
	_, err := ParseDeclaration([]byte(mk(MaxSchemaBytes - 17)))
	wantCode(t, err, "invalid_event")
}

func TestDefinitionLimit(t *testing.T) {
	ctx := context.Background()
	def := func(i int) Declaration {
		return mustDecl(t, fmt.Sprintf(`{"type":"t.n%d","kind":"signal","title":"t","schema":{}}`, i))
	}
	var batch []Declaration
	for i := range MaxDefinitions {
		batch = append(batch, def(i))
	}
	var r Registry
	if err := r.Declare(ctx, 1, batch...); err != nil {
		t.Fatal(err)
	}
	// Redefining an existing type does not count.
	if err := r.Declare(ctx, 2, def(0)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, r.Declare(ctx, 3, def(MaxDefinitions)), "invalid_event")
	if r.Len() != MaxDefinitions || r.Lookup(fmt.Sprintf("t.n%d", MaxDefinitions)) != nil {
		t.Fatal("65th definition applied")
	}
	// A room.create batch of 65 is refused whole.
	var r2 Registry
	wantCode(t, r2.Declare(ctx, 1, append(batch, def(MaxDefinitions))...), "invalid_event")
	if r2.Len() != 0 {
		t.Fatal("partial batch applied")
	}
	// Imports count every materialized type: 63 + reactions fits, 63 + deliberation does not.
	var r3 Registry
	if err := r3.Declare(ctx, 1, append(slices.Clone(batch[:63]), mustDecl(t, `{"use":"adp:reactions/1.0"}`))...); err != nil {
		t.Fatal(err)
	}
	var r4 Registry
	wantCode(t, r4.Declare(ctx, 1, append(slices.Clone(batch[:63]), mustDecl(t, `{"use":"adp:deliberation/1.0"}`))...), "invalid_event")
}

func TestRedefinition(t *testing.T) {
	ctx := context.Background()
	var r Registry
	v1 := `{"type":"review.finding","kind":"message","title":"Finding","schema":{"type":"object","required":["summary"]},"version":"1"}`
	v2 := `{"type":"review.finding","kind":"message","title":"Finding","schema":{"type":"object","required":["summary","severity"]},"version":"2","roles":["speaker"]}`
	mustDeclare(t, &r, 1, v1)
	err := r.Declare(ctx, 5, mustDecl(t, `{"type":"review.finding","kind":"control","title":"Finding","schema":{}}`))
	wantCode(t, err, "invalid_event")
	if r.Lookup("review.finding").Version != "1" {
		t.Fatal("kind-changing redefinition applied")
	}
	before := r.Clone()
	mustDeclare(t, &r, 10, v2)

	old := []byte(`{"summary":"retry loop starves the writer"}`)
	if err := before.Validate("review.finding", old); err != nil {
		t.Errorf("valid under the definition in force before seq 10: %v", err)
	}
	wantCode(t, r.Validate("review.finding", old), CodePayloadSchemaViolation)
	if before.Lookup("review.finding").Version != "1" || r.Lookup("review.finding").Version != "2" {
		t.Error("Lookup picks the wrong version")
	}
	// Only the definition in force is kept, with the seq that established it.
	s := r.Snapshot()
	if len(s.Entries) != 1 || s.Entries[0].Seq != 10 || s.Entries[0].Definition.Version != "2" {
		t.Fatalf("entries %+v", s.Entries)
	}
	// An import redefining an inline type must keep its kind too.
	var r2 Registry
	mustDeclare(t, &r2, 1, `{"type":"reaction.create","kind":"message","title":"R","schema":{}}`)
	wantCode(t, r2.Declare(ctx, 2, mustDecl(t, `{"use":"adp:reactions/1.0"}`)), "invalid_event")
	// Within one batch, a later declaration redefines an earlier one.
	var r3 Registry
	mustDeclare(t, &r3, 1, `{"use":"adp:reactions/1.0"}`, `{"type":"reaction.create","kind":"signal","title":"Mine","schema":{}}`)
	if r3.Lookup("reaction.create").Title != "Mine" || len(r3.Snapshot().Entries) != 1 {
		t.Fatal("in-batch redefinition")
	}
	// seq never goes backwards.
	wantCode(t, r.Declare(ctx, 3, mustDecl(t, v1)), "invalid_event")
	wantCode(t, r.Declare(ctx, 0), "invalid_event")
}

func TestStatusAndUndefined(t *testing.T) {
	var r Registry
	mustDeclare(t, &r, 1, `{"use":"adp:reactions/1.0","overrides":{"reaction.create":{"status":"disabled"}}}`)
	p := []byte(`{"event_id":"` + hashA + `","reaction":"agree"}`)
	wantCode(t, r.Validate("reaction.create", p), CodeTypeDisabled)
	wantCode(t, r.Validate("poll.vote", p), CodeTypeNotDefined)
	wantCode(t, r.Validate("room.unknown", p), CodeTypeNotDefined)
	// Re-enabling is a redefinition.
	disabled := r.Clone()
	mustDeclare(t, &r, 2, `{"use":"adp:reactions/1.0"}`)
	if err := r.Validate("reaction.create", p); err != nil {
		t.Fatal(err)
	}
	wantCode(t, disabled.Validate("reaction.create", p), CodeTypeDisabled)
	// Not strict JSON.
	wantCode(t, r.Validate("reaction.create", []byte(`{"event_id":"`+hashA+`","reaction":"a","reaction":"b"}`)), "invalid_event")
}

func TestDeclareIsAtomic(t *testing.T) {
	var r Registry
	mustDeclare(t, &r, 1, `{"use":"adp:reactions/1.0"}`)
	before := snapshotJSON(t, &r)
	err := r.Declare(context.Background(), 2,
		mustDecl(t, `{"use":"adp:deliberation/1.0"}`),
		mustDecl(t, `{"type":"a.b","kind":"signal","title":"t","schema":{}}`),
		mustDecl(t, `{"use":"adp:curation/1.0","types":["nope.nope"]}`))
	wantCode(t, err, "invalid_event")
	if after := snapshotJSON(t, &r); after != before || r.Lookup("poll.vote") != nil {
		t.Fatal("failed Declare changed the registry")
	}
	// A Declaration built in Go meets the same rules as a parsed one.
	bad := Declaration{Definition: &Definition{Type: "a.b", Kind: "event", Title: "t", Schema: []byte(`{}`)}}
	wantCode(t, r.Declare(context.Background(), 2, bad), "invalid_event")
	wantCode(t, r.Declare(context.Background(), 2, Declaration{}), "invalid_event")
	good := Declaration{Import: &Import{Use: "adp:moderation/1.0", Types: []string{"steer.create"},
		Overrides: map[string]Override{"steer.create": {Roles: []Role{RoleObserver}}}}}
	if err := r.Declare(context.Background(), 2, good); err != nil {
		t.Fatal(err)
	}
	if !r.Lookup("steer.create").Allows(RoleObserver) {
		t.Fatal("Go-built import not applied")
	}
}

func snapshotJSON(t testing.TB, r *Registry) string {
	t.Helper()
	b, err := json.Marshal(r.Snapshot(), json.Deterministic(true))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCloneIsIndependent(t *testing.T) {
	var r Registry
	mustDeclare(t, &r, 1, `{"use":"adp:reactions/1.0"}`)
	c := r.Clone()
	mustDeclare(t, c, 2, `{"use":"adp:deliberation/1.0"}`)
	mustDeclare(t, &r, 3, `{"use":"adp:moderation/1.0"}`)
	if r.Lookup("poll.vote") != nil || c.Lookup("turn.update") != nil || r.Len() != 3 || c.Len() != 5 {
		t.Fatalf("clone shares state: r=%d c=%d", r.Len(), c.Len())
	}
	if len(r.Snapshot().Entries) != 3 || len(c.Snapshot().Entries) != 5 {
		t.Fatal("history shared")
	}
}

func TestSnapshotRestore(t *testing.T) {
	r := allPacksRegistry(t)
	mustDeclare(t, r, 7, seedTypeDefine, `{"use":"adp:reactions/1.0","overrides":{"reaction.create":{"status":"disabled","instructions":"off"}}}`)
	b := snapshotJSON(t, r)
	var s Snapshot
	if err := json.Unmarshal([]byte(b), &s, json.RejectUnknownMembers(true)); err != nil {
		t.Fatal(err)
	}
	r2, err := Restore(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := snapshotJSON(t, r2); got != b {
		t.Fatalf("round trip differs:\n%s\n%s", got, b)
	}
	wantCode(t, r2.Validate("reaction.create", []byte(`{}`)), CodeTypeDisabled)
	// Restore re-checks what it is given.
	for name, mutate := range map[string]func(*Snapshot){
		"kind change": func(s *Snapshot) {
			d := *s.Entries[1].Definition
			d.Kind = KindControl
			s.Entries = append(s.Entries, Entry{99, &d})
		},
		"type twice":    func(s *Snapshot) { s.Entries = append(s.Entries, s.Entries[0]) },
		"seq backwards": func(s *Snapshot) { s.Entries[len(s.Entries)-1].Seq = 0 },
		"nil":           func(s *Snapshot) { s.Entries[0].Definition = nil },
		"bad schema": func(s *Snapshot) {
			d := *s.Entries[0].Definition
			d.Schema = []byte(`{"$ref":"https://x.example/"}`)
			s.Entries[0].Definition = &d
		},
		"bad name": func(s *Snapshot) { d := *s.Entries[0].Definition; d.Type = "room.x"; s.Entries[0].Definition = &d },
	} {
		t.Run(name, func(t *testing.T) {
			var s Snapshot
			json.Unmarshal([]byte(b), &s)
			mutate(&s)
			if _, err := Restore(s, nil); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if err := json.Unmarshal([]byte(`{"entries":[],"bogus":1}`), &s, json.RejectUnknownMembers(true)); err == nil {
		t.Fatal("unknown snapshot member accepted")
	}
}

// TestConcurrentValidation runs readers in parallel; go test -race checks
// that validation and the schema cache share nothing unsafely.
func TestConcurrentValidation(t *testing.T) {
	r := allPacksRegistry(t)
	// Room for four of the schemas below.
	budget := 4 * schemaSize(t, `{"maxLength":0}`)
	cache := NewSchemaCache(budget)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if err := r.Validate("reaction.create", []byte(benchReaction)); err != nil {
					t.Error(err)
					return
				}
				if err := r.Validate("poll.create", []byte(benchPoll)); err != nil {
					t.Error(err)
					return
				}
				wantCode(t, r.Validate("poll.create", []byte(`{"poll_id":""}`)), CodePayloadSchemaViolation)
				_ = r.Lookup("poll.vote")
				_ = r.Definitions()
				// Concurrent compiles through one bounded cache.
				schema := fmt.Sprintf(`{"type":"t.x","kind":"signal","title":"t","schema":{"maxLength":%d}}`, (g+i)%7)
				if _, err := parseDeclaration([]byte(schema), cache, defaultLimits); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					c := r.Clone()
					mustDeclare(t, c, 2, `{"type":"x.y","kind":"signal","title":"t","schema":{}}`)
				}
			}
		}()
	}
	wg.Wait()
	if n, b := cache.Len(), cache.Bytes(); n > 4 || b > budget {
		t.Fatalf("cache holds %d schemas, %d bytes > %d", n, b, budget)
	}
}

// schemaSize returns the heap estimate of a compiled schema.
func schemaSize(t testing.TB, schema string) int64 {
	t.Helper()
	cs, _, err := NewSchemaCache(0).compile([]byte(schema), defaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	return cs.Size()
}

func TestSchemaCacheSharesCompiledSchemas(t *testing.T) {
	// Room for the first two schemas below.
	cache := NewSchemaCache(schemaSize(t, `{"minLength":1,"type":"string"}`) + schemaSize(t, `{"type":"integer"}`))
	a1, _, err := cache.compile([]byte(`{"type":"string", "minLength":1}`), defaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	a2, _, _ := cache.compile([]byte(`{ "minLength":1,"type":"string"}`), defaultLimits) // same canonical form
	if a1 != a2 || cache.Len() != 1 {
		t.Fatal("canonically equal schemas compiled twice")
	}
	cache.compile([]byte(`{"type":"integer"}`), defaultLimits)
	cache.compile([]byte(`{"type":"boolean"}`), defaultLimits)
	if cache.Len() != 2 {
		t.Fatalf("cache holds %d", cache.Len())
	}
	if a3, _, _ := cache.compile([]byte(`{"type":"string","minLength":1}`), defaultLimits); a3 == a1 {
		t.Fatal("evicted entry still cached")
	}
}

func TestSchemaEvaluationCost(t *testing.T) {
	chain := func(n int) string { // $defs d0…dn, each applying the next twice
		var sb strings.Builder
		sb.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
		for i := range n {
			fmt.Fprintf(&sb, `"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
		}
		fmt.Fprintf(&sb, `"d%d":{"type":"string"}}}`, n)
		return sb.String()
	}
	for name, c := range map[string]struct {
		schema string
		ok     bool
	}{
		"same-location cycle":         {`{"$ref":"#"}`, false},
		"cycle inside anyOf":          {`{"anyOf":[{"$ref":"#"},{"type":"string"}]}`, false},
		"mutual cycle":                {`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"not":{"$ref":"#/$defs/a"}}},"$ref":"#/$defs/a"}`, false},
		"doubling chain of 5":         {chain(5), true},
		"doubling chain of 8":         {chain(8), false},
		"recursion applied twice":     {`{"items":{"allOf":[{"$ref":"#"},{"$ref":"#"}]}}`, false},
		"duplicated recursive branch": {`{"allOf":[{"properties":{"a":{"$ref":"#/$defs/u"}}},{"properties":{"a":{"$ref":"#/$defs/v"}}}],"$defs":{"u":{"properties":{"b":{"$ref":"#"}}},"v":{"properties":{"b":{"$ref":"#"}}}}}`, false},
		"binary tree":                 {`{"type":"object","properties":{"left":{"$ref":"#"},"right":{"$ref":"#"},"value":{"type":"number"}}}`, true},
		"two child kinds recurse":     {`{"properties":{"a":{"$ref":"#/$defs/u"},"b":{"$ref":"#/$defs/v"}},"$defs":{"u":{"properties":{"x":{"$ref":"#"}}},"v":{"items":{"$ref":"#"}}}}`, true},
		"recursion via additional":    {`{"additionalProperties":{"$ref":"#"},"items":{"$ref":"#"}}`, true},
		"dynamic ref to its anchor":   {`{"$dynamicAnchor":"n","properties":{"c":{"$dynamicRef":"#n"}}}`, true},
		"unresolvable anchor":         {`{"$ref":"#nowhere"}`, false},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseDeclaration([]byte(`{"type":"a.b","kind":"signal","title":"t","schema":` + c.schema + `}`))
			if c.ok && err != nil {
				t.Fatal(err)
			}
			if !c.ok {
				wantCode(t, err, "invalid_event")
			}
		})
	}
}

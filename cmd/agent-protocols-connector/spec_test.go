package main

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentprotocols/go-sdk/connector"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// specTool is one row of the §4.3 tool tables, parsed from the spec text
// (testdata/spec_tools.txt holds the rows verbatim).
type specTool struct {
	name      string
	props     map[string]bool     // input member -> required
	enums     map[string][]string // input member -> enum values
	readOnly  bool
	idem      bool
	openWorld bool
}

var (
	specKeyRE  = regexp.MustCompile(`"(\w+)"(\?)?:\s*((?:"[^"]*"(?:\s*\|\s*"[^"]*")*)|\w+(?:\[\])?)`)
	specEnumRE = regexp.MustCompile(`"([^"]*)"`)
)

func loadSpecTools(t *testing.T) []specTool {
	t.Helper()
	b, err := os.ReadFile("testdata/spec_tools.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []specTool
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		name, rest, _ := strings.Cut(line, " ")
		// The input schema is the first balanced {...}.
		depth, end := 0, -1
		for i, ch := range rest {
			if ch == '{' {
				depth++
			} else if ch == '}' {
				depth--
				if depth == 0 {
					end = i
					break
				}
			}
		}
		input := rest[:end+1]
		ann := rest[strings.LastIndex(rest, "}")+1:]
		st := specTool{name: name, props: map[string]bool{}, enums: map[string][]string{}}
		for _, m := range specKeyRE.FindAllStringSubmatch(input, -1) {
			st.props[m[1]] = m[2] == ""
			if strings.HasPrefix(m[3], `"`) {
				for _, e := range specEnumRE.FindAllStringSubmatch(m[3], -1) {
					st.enums[m[1]] = append(st.enums[m[1]], e[1])
				}
			}
		}
		st.readOnly = strings.Contains(ann, "readOnlyHint: true")
		st.idem = strings.Contains(ann, "idempotentHint: true")
		st.openWorld = strings.Contains(ann, "openWorldHint: true")
		out = append(out, st)
	}
	return out
}

// TestToolsListMatchesSpec checks tools/list against the §4.3 tables:
// the 27 names, every input member, which are required, the enums, and
// the annotations; plus what §4.3 adds in prose: every room_id tool
// accepts host, and every description says where the data comes from.
func TestToolsListMatchesSpec(t *testing.T) {
	h := newTestHost(t, nil)
	c := newConnector(t, "lister", h)
	res, err := c.client.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		got[tl.Name] = tl
	}
	spec := loadSpecTools(t)
	if len(spec) != 27 || len(res.Tools) != 27 {
		t.Fatalf("spec rows %d, tools/list %d; want 27 each", len(spec), len(res.Tools))
	}
	for _, st := range spec {
		t.Run(st.name, func(t *testing.T) {
			tl := got[st.name]
			if tl == nil {
				t.Fatalf("tools/list has no %s", st.name)
			}
			var sch struct {
				Type                 string                     `json:"type"`
				Properties           map[string]json.RawMessage `json:"properties"`
				Required             []string                   `json:"required"`
				AdditionalProperties *bool                      `json:"additionalProperties"`
			}
			b, _ := json.Marshal(tl.InputSchema)
			if err := json.Unmarshal(b, &sch); err != nil {
				t.Fatal(err)
			}
			if sch.Type != "object" || sch.AdditionalProperties == nil || *sch.AdditionalProperties {
				t.Errorf("schema is not a closed object: %s", b)
			}
			var wantReq []string
			for p, req := range st.props {
				if req {
					wantReq = append(wantReq, p)
				}
				raw, ok := sch.Properties[p]
				if !ok {
					t.Errorf("input member %q missing", p)
					continue
				}
				var ps struct {
					Description string   `json:"description"`
					Enum        []string `json:"enum"`
					Items       struct {
						Enum []string `json:"enum"`
					} `json:"items"`
				}
				json.Unmarshal(raw, &ps)
				if ps.Description == "" {
					t.Errorf("input member %q has no description", p)
				}
				if want := st.enums[p]; want != nil {
					gotEnum := ps.Enum
					if gotEnum == nil {
						gotEnum = ps.Items.Enum
					}
					if !slices.Equal(sorted(gotEnum), sorted(want)) {
						t.Errorf("%q enum = %v, spec %v", p, gotEnum, want)
					}
				}
			}
			sort.Strings(wantReq)
			if !slices.Equal(sorted(sch.Required), wantReq) {
				t.Errorf("required = %v, spec %v", sch.Required, wantReq)
			}
			for p := range sch.Properties {
				if _, ok := st.props[p]; !ok && p != "host" {
					t.Errorf("input member %q is not in the spec", p)
				}
			}
			if _, ok := st.props["room_id"]; ok {
				if _, ok := sch.Properties["host"]; !ok {
					t.Errorf("takes room_id but not host (§4.3)")
				}
			}
			a := tl.Annotations
			if a == nil {
				t.Fatal("no annotations")
			}
			if a.ReadOnlyHint != st.readOnly || a.IdempotentHint != st.idem {
				t.Errorf("readOnlyHint %v idempotentHint %v; spec %v %v", a.ReadOnlyHint, a.IdempotentHint, st.readOnly, st.idem)
			}
			if gotOW := a.OpenWorldHint != nil && *a.OpenWorldHint; gotOW != st.openWorld || (a.OpenWorldHint != nil && !*a.OpenWorldHint) {
				t.Errorf("openWorldHint %v; spec %v", a.OpenWorldHint, st.openWorld)
			}
			if a.DestructiveHint != nil {
				t.Errorf("destructiveHint set; the spec declares none")
			}
			if !slices.ContainsFunc([]string{"Reads local cache", "Updates local cache only", "Reads remotely", "Signs and submits"}, func(p string) bool { return strings.HasPrefix(tl.Description, p) }) {
				t.Errorf("description does not say where it reads or whether it signs: %q", tl.Description)
			}
		})
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// TestNoSigningTool pins §4.1/§6: no tool signs arbitrary bytes, returns a
// JWT or changes the allowlist — by name and by input member.
func TestNoSigningTool(t *testing.T) {
	for _, d := range connector.Tools() {
		for _, bad := range []string{"sign", "jwt", "token", "allowlist", "host_add", "hosts_set"} {
			if strings.Contains(d.Name, bad) {
				t.Errorf("tool %s looks like a raw signing or allowlist tool", d.Name)
			}
		}
		var in struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(d.InputSchema, &in); err != nil {
			t.Fatal(err)
		}
		for p := range in.Properties {
			if slices.Contains([]string{"nonce", "signature", "actor", "hash", "created_at", "bytes", "jwt"}, p) {
				t.Errorf("tool %s takes %q: the connector fills signing fields itself", d.Name, p)
			}
		}
	}
}

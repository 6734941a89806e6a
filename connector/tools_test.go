package connector

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentprotocols/go-sdk/identity"
)

// TestToolTable pins the table's shape: 27 prefixed, unique tools, each
// description saying where its data comes from (§4.3 MUST), every
// schema compiling.
func TestToolTable(t *testing.T) {
	tools := Tools()
	if len(tools) != 27 {
		t.Fatalf("%d tools, want 27", len(tools))
	}
	seen := map[string]bool{}
	for _, tl := range tools {
		if !strings.HasPrefix(tl.Name, ToolPrefix) || seen[tl.Name] {
			t.Errorf("tool name %q", tl.Name)
		}
		seen[tl.Name] = true
		if got, ok := LookupTool(tl.Name); !ok || got != tl {
			t.Errorf("LookupTool(%s)", tl.Name)
		}
		if tl.Title == "" {
			t.Errorf("%s: no title", tl.Name)
		}
		if !slices.ContainsFunc([]string{readsLocal, localOnly, readsRemote, signsWrites, "Signs and submits a transient status"}, func(p string) bool { return strings.HasPrefix(tl.Description, p) }) {
			t.Errorf("%s: description does not say where its data comes from: %q", tl.Name, tl.Description)
		}
		if _, _, err := compileSchema(tl.Name+"-out", mustMap(t, tl.OutputSchema)); err != nil {
			t.Errorf("%s: output schema: %v", tl.Name, err)
		}
	}
}

// TestToolSchemaRootsAreObjects: MCP (Tool.inputSchema and
// Tool.outputSchema in the 2025-11-25 schema) requires "type": "object"
// at the root of both schemas, exactly; a pointer result type must not
// make the root nullable. Members may still be null.
func TestToolSchemaRootsAreObjects(t *testing.T) {
	for _, tl := range Tools() {
		for what, raw := range map[string]json.RawMessage{"input": tl.InputSchema, "output": tl.OutputSchema} {
			var root struct {
				Type json.RawMessage `json:"type"`
			}
			if err := json.Unmarshal(raw, &root); err != nil {
				t.Fatal(err)
			}
			if string(root.Type) != `"object"` {
				t.Errorf("%s: %s schema root type %s, want \"object\"", tl.Name, what, root.Type)
			}
		}
	}
}

func mustMap(t *testing.T, raw json.RawMessage) schema {
	var m schema
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestToolInputsMatchSchemas keeps one description of each tool's input:
// the schema's properties are exactly the JSON names of the Go input
// type the engine method takes, so a member cannot be added to one and
// forgotten in the other.
func TestToolInputsMatchSchemas(t *testing.T) {
	for _, tl := range Tools() {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(tl.InputSchema, &s); err != nil {
			t.Fatal(err)
		}
		props := slices.Sorted(maps.Keys(s.Properties))
		if names := jsonNames(tl.in); !slices.Equal(props, names) {
			t.Errorf("%s: schema properties %v, input type %v members %v", tl.Name, props, tl.in, names)
		}
		for _, r := range s.Required {
			if !slices.Contains(props, r) {
				t.Errorf("%s: requires unknown %q", tl.Name, r)
			}
		}
	}
}

// TestToolArgumentErrors: arguments that do not fit the schema are tool
// errors naming the field and the reason (SEP-1303), decided before the
// engine is touched (the nil Engine here would panic otherwise).
func TestToolArgumentErrors(t *testing.T) {
	st, _ := LookupTool(ToolPrefix + "room_send_message")
	ack, _ := LookupTool(ToolPrefix + "inbox_ack")
	next, _ := LookupTool(ToolPrefix + "inbox_next")
	for _, tc := range []struct {
		tool        *Tool
		args, field string
		reason      string
	}{
		{st, `{}`, "/content", "missing"},
		{st, `{"room_id":"r"}`, "/content", "missing"},
		{st, `{"room_id":7,"content":"x"}`, "/room_id", "want string"},
		{st, `{"room_id":"r","content":"x","actor":"did:agent:x"}`, "/actor", "not allowed"},
		{st, `{"room_id":"r","content":"x","on_head_mismatch":"force"}`, "/on_head_mismatch", "must be one of"},
		{st, `{"room_id":"r","content":"x","mentions":["bob"]}`, "/mentions/0", "minLength"},
		{st, `{"room_id":"r","content":"x","base_seq":-1}`, "/base_seq", "minimum"},
		{st, `{"room_id":"r","room_id":"s","content":"x"}`, "/room_id", "duplicate"},
		{st, `{"room_id":"r","content":"x","base_seq":18446744073709551617}`, "/base_seq", "2^53"},
		{st, `{"room_id":"r","content":"x","extra":` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `}`, "", "deeper"},
		{st, `{"room_id":"r","content":"` + strings.Repeat("a", 2<<20) + `"}`, "", "larger"},
		{ack, `{"ids":[],"action":"handled"}`, "/ids", "minItems"},
		{next, `{"wait_ms":60000}`, "/wait_ms", "maximum"},
	} {
		_, err := tc.tool.Call(context.Background(), nil, "s", json.RawMessage(tc.args))
		var te *ToolError
		if !errors.As(err, &te) || te.Code != CodeInvalidArguments || te.Source != SourceConnector || !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%.80s: %v", tc.args, err)
			continue
		}
		var d struct{ Field, Reason string }
		if err := json.Unmarshal(te.Data, &d); err != nil || d.Field != tc.field || !strings.Contains(d.Reason, tc.reason) {
			t.Errorf("%.80s: data %s, want field %q reason ~%q", tc.args, te.Data, tc.field, tc.reason)
		}
	}
}

// TestToolArgumentErrorIsStable: arguments with several unexpected members
// get the same error every time (the first of them, by name), though the
// schema library finds them in map order.
func TestToolArgumentErrorIsStable(t *testing.T) {
	st, _ := LookupTool(ToolPrefix + "room_send_message")
	args := json.RawMessage(`{"room_id":"r","content":"x","zeta":1,"beta":2,"delta":3,"alpha":4,"gamma":5}`)
	var first string
	for i := range 50 {
		_, err := st.Call(context.Background(), nil, "s", args)
		var te *ToolError
		if !errors.As(err, &te) {
			t.Fatal(err)
		}
		if i == 0 {
			first = string(te.Data)
			if !strings.Contains(first, `"field":"/alpha"`) {
				t.Fatalf("data %s, want field /alpha", first)
			}
		} else if string(te.Data) != first {
			t.Fatalf("call %d: data %s, then %s", i, first, te.Data)
		}
	}
}

// TestToolErrorSources: a host's refusal keeps its code and data and is
// labelled the host's; the connector's own refusals are labelled its own,
// with their codes.
func TestToolErrorSources(t *testing.T) {
	hostErr := &identity.Error{Code: "room_head_mismatch", Message: "head moved", Data: []byte(`{"head_seq":44,"head_hash":"abc"}`), Status: 409}
	for _, tc := range []struct {
		err          error
		code, source string
		data         string
	}{
		{fmt.Errorf("submit: %w", &HostError{Host: "https://h.example", Code: hostErr.Code, Message: hostErr.Message, Data: hostErr.Data, Status: 409, Err: hostErr}), "room_head_mismatch", SourceHost, `{"head_seq":44,"head_hash":"abc"}`},
		{&HostError{Host: "https://h.example", Code: "rate_limited", Message: "quota", Status: 429, RetryAfter: 12 * time.Second, Err: identity.NewError("rate_limited", "quota")}, "rate_limited", SourceHost, `{"retry_after_ms":12000}`},
		{&HostError{Host: "https://h.example", Code: "room_not_open", Message: "a host may use any code", Status: 400, Err: identity.NewError("room_not_open", "x")}, "room_not_open", SourceHost, ""},
		{identity.NewError("invalid_event", "end before start"), "invalid_event", SourceConnector, ""},
		{hostErr, "room_head_mismatch", SourceConnector, `{"head_seq":44,"head_hash":"abc"}`},
		{fmt.Errorf("room x: %w", ErrAmbiguousRoom), string(CodeAmbiguousRoom), SourceConnector, ""},
		{ErrHostNotAllowed, string(CodeHostNotAllowed), SourceConnector, ""},
		{ErrRoleMismatch, string(CodeRoleMismatch), SourceConnector, ""},
		{ErrRateLimited, string(CodeRateLimited), SourceConnector, ""},
		{errors.New("disk full"), string(CodeConnector), SourceConnector, ""},
		{fmt.Errorf("%w: base_hash without base_seq", ErrInvalidInput), string(CodeInvalidArguments), SourceConnector, `{"field":"","reason":"base_hash without base_seq"}`},
	} {
		te := toolError(context.Background(), tc.err)
		if string(te.Code) != tc.code || te.Source != tc.source || string(te.Data) != tc.data || (te.Source == SourceHost) != (te.Host == "https://h.example") {
			t.Errorf("%v: got %s %s %s", tc.err, te.Source, te.Code, te.Data)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if te := toolError(ctx, context.Canceled); te.Code != CodeCancelled || !errors.Is(te, context.Canceled) {
		t.Errorf("cancelled: %v", te)
	}
}

// TestToolOutputSchemas: every tool's structured results, as the engine
// produces them in the interaction-loop fixtures, conform to its
// OutputSchema.
func TestToolOutputSchemas(t *testing.T) {
	_, srv := testHost(t)
	e := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer e.Close()
	room := createRoom(t, e, srv.URL)
	ctx := ctxT(t)
	for _, c := range []struct{ tool, args string }{
		{"identity_current", `{}`},
		{"hosts_list", `{}`},
		{"rooms_list", `{}`},
		{"room_state", `{"room_id":"` + room + `","include_types":true}`},
		{"room_members_list", `{"room_id":"` + room + `"}`},
		{"room_timeline", `{"room_id":"` + room + `","include_records":true}`},
		{"room_send_message", `{"room_id":"` + room + `","content":"hello"}`},
		{"inbox_next", `{}`},
		{"drafts_list", `{}`},
		{"agent_status_list", `{"room_id":"` + room + `"}`},
	} {
		tl, _ := LookupTool(ToolPrefix + c.tool)
		res, err := tl.Call(ctx, e, "s", json.RawMessage(c.args))
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		_, cs, err := compileSchema(tl.Name+"-out", mustMap(t, tl.OutputSchema))
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(res))
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.Validate(inst); err != nil {
			t.Errorf("%s: result %s does not fit its output schema: %v", c.tool, res, err)
		}
	}
}

// TestHostileArgumentsBounded: a 100,000-deep document is refused in one
// linear pass, before the (recursive) schema evaluator sees it.
func TestHostileArgumentsBounded(t *testing.T) {
	_, cs, err := compileSchema("t", object(schema{"extra": freeObject("x")}))
	if err != nil {
		t.Fatal(err)
	}
	doc := []byte(`{"extra":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`)
	allocs := testing.AllocsPerRun(5, func() { _ = validateArgs(cs, doc) })
	if allocs > 100 {
		t.Errorf("rejecting a deep document took %v allocations", allocs)
	}
}

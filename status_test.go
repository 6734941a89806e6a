package agentprotocols

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
)

// wantStatus is the status of every wire code the SDK defines, whichever
// package defines it.
var wantStatus = map[identity.Code]int{
	"invalid_request":            400,
	"schema_unsupported":         422,
	"invalid_event":              400,
	"invalid_event_hash":         400,
	"invalid_signature":          400,
	"invalid_actor":              400,
	"timestamp_out_of_window":    400,
	"nonce_not_greater":          409,
	"invalid_token":              401,
	"permission_denied":          403,
	"not_found":                  404,
	"rate_limited":               429,
	"payload_too_large":          413,
	"internal_error":             500,
	"service_unavailable":        503,
	"invalid_response":           400,
	"type_not_defined":           400,
	"type_disabled":              400,
	"payload_schema_violation":   400,
	"pack_unavailable":           400,
	"type_conflict":              409,
	"invalid_type_schema":        400,
	"room_not_found":             404,
	"join_request_not_found":     404,
	"agent_status_not_found":     404,
	"room_head_mismatch":         409,
	"base_record_mismatch":       409,
	"room_not_active":            409,
	"room_ended":                 409,
	"member_banned":              403,
	"membership_required":        403,
	"approval_required":          403,
	"join_request_not_approved":  400,
	"join_request_role_mismatch": 400,
	"join_request_expired":       400,
	"role_not_allowed":           400,
	"max_speakers_exceeded":      400,
	"host_mismatch":              400,
	"join_request_not_pending":   409,
	"invalid_record":             400,
}

// codeConstants reads every constant of type identity.Code declared with a
// string literal in the non-test files of the named package directories.
func codeConstants(t *testing.T, dirs ...string) map[identity.Code]string {
	t.Helper()
	out := map[identity.Code]string{}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(fset, name, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					if !isCodeType(vs.Type) {
						continue
					}
					for i, v := range vs.Values {
						lit, ok := v.(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							continue
						}
						s, err := strconv.Unquote(lit.Value)
						if err != nil {
							t.Fatal(err)
						}
						out[identity.Code(s)] = fmt.Sprintf("%s.%s", filepath.Base(dir), vs.Names[i].Name)
					}
				}
			}
		}
	}
	return out
}

func isCodeType(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name == "Code"
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "identity" && x.Sel.Name == "Code"
	}
	return false
}

// One status per code, whichever package defined it (this test lives at
// the root because only the root may import every package): every code constant
// of identity, profile, packs, adp and internal/typeschema (two of packs'
// codes are defined there) has its row in DefaultStatus, and
// adp.DefaultStatus agrees.
func TestDefaultStatusCoversEveryCode(t *testing.T) {
	consts := codeConstants(t, "identity", "profile", "packs", "adp", "internal/typeschema")
	if len(consts) < 30 {
		t.Fatalf("found only %d code constants; is the scan broken?", len(consts))
	}
	for code, name := range consts {
		want, ok := wantStatus[code]
		if !ok {
			t.Errorf("%s (%q) has no expected status in this test", name, code)
			continue
		}
		if got := identity.DefaultStatus(code); got != want {
			t.Errorf("identity.DefaultStatus(%s) = %d, want %d", name, got, want)
		}
		if got := adp.DefaultStatus(code); got != want {
			t.Errorf("adp.DefaultStatus(%s) = %d, want %d", name, got, want)
		}
	}
	for code := range wantStatus {
		if _, ok := consts[code]; !ok {
			t.Errorf("expected code %q is not declared by any package", code)
		}
	}
	if got := identity.DefaultStatus("x_unknown_code"); got != 400 {
		t.Errorf("unknown code: %d, want 400", got)
	}
}

// identity.WriteError sends an ADP code with ADP's status: a host answers
// room_head_mismatch with 409 whichever package it got the error from.
func TestWriteErrorUsesTheOneStatusTable(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{&identity.Error{Code: "room_head_mismatch", Message: "head moved"}, 409},
		{fmt.Errorf("append: %w", adp.ErrRoomHeadMismatch), 409},
		{adp.ErrRoomNotFound, 404},
		{adp.ErrMemberBanned, 403},
		{adp.ErrRoomEnded, 409},
		{identity.ErrNonceNotGreater, 409},
		{&identity.Error{Code: "room_head_mismatch", Status: 200}, 409}, // a non-error status falls back to the table
		{&identity.Error{Code: "room_head_mismatch", Status: 412}, 412}, // an explicit status wins
	}
	for _, tc := range cases {
		rec := httptest.NewRecorder()
		identity.WriteError(rec, tc.err)
		if rec.Code != tc.want {
			t.Errorf("%v: status %d, want %d", tc.err, rec.Code, tc.want)
		}
		resp := rec.Result()
		var ie *identity.Error
		if err := identity.ReadError(resp); !errors.As(err, &ie) || ie.Status != tc.want {
			t.Errorf("%v: read back %v", tc.err, err)
		}
		if resp.StatusCode == http.StatusOK {
			t.Errorf("%v: 200", tc.err)
		}
	}
}

package adp_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/packs"
)

// The checklist for adding a built-in event type (see the package
// documentation) is enforced here, over every type of adp.BuiltinTypes;
// the transcript item is enforced in archive/checklist_test.go, which may
// import archive.

// checklistBuilders signs one acceptable event of each built-in type
// through its builder, in a fresh public room. A new built-in type with no
// entry here fails TestBuiltinChecklist: write its builder, then add it.
var checklistBuilders = map[string]func(w *adptest.World) (*envelope.Envelope, error){
	adp.TypeRoomCreate: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewRoomCreate(w.Ctx, w.Author("alice"), adp.RoomCreate{Topic: "t", Visibility: adp.VisibilityPublic,
			StartTime: w.Now.UnixMilli(), EndTime: w.Now.Add(time.Hour).UnixMilli()})
	},
	adp.TypeRoomUpdate: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewRoomUpdate(w.Ctx, w.Author("creator"), w.Base(adp.TypeRoomUpdate), adp.RoomUpdate{Guidance: ptr("g")})
	},
	adp.TypeRoomJoin: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewJoin(w.Ctx, w.Author("bob"), w.Base(adp.TypeRoomJoin), adp.Join{Role: adp.RoleSpeaker})
	},
	adp.TypeRoomJoinReview: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewJoinReview(w.Ctx, w.Author("creator"), w.Base(adp.TypeRoomJoinReview),
			adp.JoinReview{Request: request(w, "jr_1", "bob", adp.RoleSpeaker), Decision: adp.DecisionApprove, Role: adp.RoleSpeaker})
	},
	adp.TypeRoomLeave: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewLeave(w.Ctx, w.Author("alice"), w.Base(adp.TypeRoomLeave), adp.Notice{Reason: "done"})
	},
	adp.TypeMemberRoleUpdate: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewRoleUpdate(w.Ctx, w.Author("creator"), w.Base(adp.TypeMemberRoleUpdate), adp.RoleUpdate{Member: w.ID("alice"), Role: adp.RoleObserver})
	},
	adp.TypeMemberRemove: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewMemberRemove(w.Ctx, w.Author("creator"), w.Base(adp.TypeMemberRemove), adp.MemberRemove{Member: w.ID("alice")})
	},
	adp.TypeRoomClose: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewClose(w.Ctx, w.Author("creator"), w.Base(adp.TypeRoomClose), adp.Notice{})
	},
	adp.TypeRoomCancel: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewCancel(w.Ctx, w.Author("creator"), w.Base(adp.TypeRoomCancel), adp.Notice{})
	},
	adp.TypeTypeDefine: func(w *adptest.World) (*envelope.Envelope, error) {
		d, err := packs.ParseDeclaration([]byte(`{"use":"adp:reactions/1.0"}`))
		if err != nil {
			return nil, err
		}
		return adp.NewTypeDefine(w.Ctx, w.Author("creator"), w.Base(adp.TypeTypeDefine), d)
	},
	adp.TypeMessageCreate: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewMessage(w.Ctx, w.Author("creator"), w.Base(adp.TypeMessageCreate), adp.Message{ContentType: "text/plain", Content: adp.TextContent("x")})
	},
}

// checklistWorld is a room in which every checklist builder's event is
// acceptable: public with alice a speaker, scheduled for room.cancel.
func checklistWorld(t *testing.T, typ string) *adptest.World {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	if typ == adp.TypeRoomCreate {
		return w
	}
	if typ == adp.TypeRoomCancel {
		w.PublicRoom(scheduled)
	} else {
		w.PublicRoom()
	}
	w.Join("alice", adp.RoleSpeaker)
	return w
}

func TestBuiltinChecklist(t *testing.T) {
	types := adp.BuiltinTypes()
	// §13.2: the kernel defines exactly eleven types.
	if len(types) != 11 {
		t.Errorf("%d built-in types; §13.2 defines eleven", len(types))
	}
	// 1. Every Type* constant is a built-in of some draft, every draft's
	// built-in has one, and the default draft's list is the kernel's.
	consts := typeConstants(t)
	var all []string
	for _, d := range packs.Drafts() {
		for _, typ := range d.BuiltinTypes() {
			if !slices.Contains(all, typ) {
				all = append(all, typ)
			}
		}
	}
	for name, val := range consts {
		if !slices.Contains(all, val) {
			t.Errorf("constant %s = %q is missing from every draft's BuiltinTypes", name, val)
		}
	}
	if len(consts) != len(all) {
		t.Errorf("%d Type* constants for %d built-in types", len(consts), len(all))
	}
	if !slices.Equal(types, adp.Draft20260704.BuiltinTypes()) {
		t.Errorf("BuiltinTypes %v, the default draft's %v", types, adp.Draft20260704.BuiltinTypes())
	}
	if kernel := packs.BuiltinTypes(); !slices.Equal(types, kernel) {
		t.Errorf("adp.BuiltinTypes %v, kernel schema (packs.BuiltinTypes) %v", types, kernel)
	}
	checklistPlaces(t)
	cases := dispatchCases(t)
	vectors := vectorTypes(t)
	for _, typ := range types {
		t.Run(typ, func(t *testing.T) {
			// 2. The §13.2 rule-table row: a category, and a kernel schema.
			if adp.BuiltinCategory(typ) == "" || !adp.IsBuiltin(typ) || !packs.IsBuiltin(typ) {
				t.Errorf("no §13.2 category or kernel schema")
			}
			// 3. A builder, whose event the host accepts.
			build := checklistBuilders[typ]
			if build == nil {
				t.Fatalf("no builder in checklistBuilders")
			}
			w := checklistWorld(t, typ)
			env, err := build(w)
			if err != nil {
				t.Fatalf("builder: %v", err)
			}
			if env.Type() != typ || env.Event().Protocol != adp.Protocol {
				t.Fatalf("the builder signed a %s of %s", env.Type(), env.Event().Protocol)
			}
			if _, err := w.Submit(env, nil); err != nil {
				t.Fatalf("the host refused the builder's event: %v", err)
			}
			// 4. Payload rules: a typed view, and a refusal of a payload
			// that is not even an object.
			v, err := adp.ParsePayload(typ, env.Event().Payload)
			if err != nil {
				t.Fatalf("ParsePayload: %v", err)
			}
			rt := reflect.TypeOf(v)
			if rt == nil || rt.Kind() != reflect.Pointer || rt.Elem().Kind() != reflect.Struct {
				t.Fatalf("ParsePayload gave %T, not a pointer to a payload struct", v)
			}
			if _, err := adp.ParsePayload(typ, []byte(`[]`)); !errors.Is(err, adp.ErrInvalidEvent) {
				t.Errorf("ParsePayload of []: %v", err)
			}
			// 5. The rule-table row: Room.check dispatches the payload
			// type (room.create has a path of its own).
			view := strings.Replace("*"+rt.Elem().String(), "*adp.", "*", 1)
			if typ != adp.TypeRoomCreate && !cases[view] {
				t.Errorf("Room.check has no case for %s; cases: %v", view, cases)
			}
			// 6. A vector: an accepted record of the type.
			if !vectors[typ] {
				t.Errorf("testdata/vectors.json has no accepted %s record", typ)
			}
		})
	}
	for typ := range checklistBuilders {
		if !adp.IsBuiltin(typ) {
			t.Errorf("checklistBuilders lists %s, which is not built in", typ)
		}
	}
	laterChecklist(t, cases)
}

// laterChecklistBuilders is checklistBuilders for the 2026-09-24 draft:
// one acceptable event of each of its built-in types, in a room of
// laterChecklistWorld. room.join.request is never a record; its entry
// signs one for CheckJoinRequest.
var laterChecklistBuilders = map[string]func(w *adptest.World) (*envelope.Envelope, error){
	adp.TypeRoomCreate: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewRoomCreateIn(w.Ctx, w.Author("alice"), adp.Draft20260924, adp.RoomCreate{Host: adptest.Host, Topic: "t",
			Visibility: adp.VisibilityPublic, StartTime: w.Now.UnixMilli(), EndTime: w.Now.Add(time.Hour).UnixMilli()})
	},
	adp.TypeRoomUpdate: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewRoomUpdate(w.Ctx, w.Author("creator"), w.Base(adp.TypeRoomUpdate), adp.RoomUpdate{Policy: &adp.Policy{OpenRoles: []adp.Role{}}})
	},
	adp.TypeRoomJoin: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewJoin(w.Ctx, w.Author("bob"), w.Base(adp.TypeRoomJoin), adp.Join{Role: adp.RoleObserver})
	},
	adp.TypeRoomJoinRequest: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewJoinRequest(w.Ctx, w.Author("bob"), adp.Draft20260924, w.Room.ID(), adp.JoinRequestPayload{Role: adp.RoleSpeaker})
	},
	adp.TypeRoomJoinReview: func(w *adptest.World) (*envelope.Envelope, error) {
		req, err := adp.NewJoinRequest(w.Ctx, w.Author("bob"), adp.Draft20260924, w.Room.ID(), adp.JoinRequestPayload{Role: adp.RoleSpeaker})
		if err != nil {
			return nil, err
		}
		return adp.NewSignedJoinReview(w.Ctx, w.Author("creator"), w.Base(adp.TypeRoomJoinReview),
			adp.SignedJoinReview{Request: req, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker})
	},
	adp.TypeRoomLeave:        checklistBuilders[adp.TypeRoomLeave],
	adp.TypeMemberRoleUpdate: checklistBuilders[adp.TypeMemberRoleUpdate],
	adp.TypeMemberRemove:     checklistBuilders[adp.TypeMemberRemove],
	adp.TypeRoomClose:        checklistBuilders[adp.TypeRoomClose],
	adp.TypeRoomCancel:       checklistBuilders[adp.TypeRoomCancel],
	adp.TypeTypeDefine: func(w *adptest.World) (*envelope.Envelope, error) {
		d, err := adp.Draft20260924.ParseDeclaration([]byte(`{"use":"adp:moderation/1.0"}`))
		if err != nil {
			return nil, err
		}
		return adp.NewTypeDefine(w.Ctx, w.Author("creator"), w.Base(adp.TypeTypeDefine), d)
	},
	adp.TypeMessageCreate: func(w *adptest.World) (*envelope.Envelope, error) {
		return adp.NewMessage(w.Ctx, w.Author("alice"), w.Base(adp.TypeMessageCreate), adp.Message{ContentType: "text/plain", Content: adp.TextContent("x")})
	},
}

// laterChecklist runs the checklist's items 2–5 for the 2026-09-24
// draft's built-in types, in a public room of that draft on
// adptest.Host where alice speaks (scheduled for room.cancel).
func laterChecklist(t *testing.T, cases map[string]bool) {
	d := adp.Draft20260924
	types := d.BuiltinTypes()
	if len(types) != 12 {
		t.Errorf("%d built-in types in the %s draft; §12.2 defines twelve", len(types), d)
	}
	for _, typ := range types {
		t.Run(d.String()+"/"+typ, func(t *testing.T) {
			build := laterChecklistBuilders[typ]
			if build == nil {
				t.Fatalf("no builder in laterChecklistBuilders")
			}
			w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", &adp.RoomOptions{Draft: d, Host: adptest.Host})
			if typ != adp.TypeRoomCreate {
				open := func(p *adp.RoomCreate) {
					p.Policy = &adp.Policy{OpenRoles: []adp.Role{adp.RoleSpeaker, adp.RoleObserver}}
				}
				if typ == adp.TypeRoomCancel {
					w.PublicRoom(scheduled, open)
				} else {
					w.PublicRoom(open)
				}
				w.Join("alice", adp.RoleSpeaker)
			}
			env, err := build(w)
			if err != nil {
				t.Fatalf("builder: %v", err)
			}
			if env.Type() != typ {
				t.Fatalf("the builder signed a %s", env.Type())
			}
			if typ == adp.TypeRoomJoinRequest {
				if _, err := w.Room.CheckJoinRequest(w.Ctx, env, w.Now); err != nil {
					t.Fatalf("the host refused the builder's join request: %v", err)
				}
			} else if _, err := w.Submit(env, nil); err != nil {
				t.Fatalf("the host refused the builder's event: %v", err)
			}
			v, err := adp.ParsePayloadIn(d, typ, env.Event().Payload)
			if err != nil {
				t.Fatalf("ParsePayloadIn: %v", err)
			}
			rt := reflect.TypeOf(v)
			if rt == nil || rt.Kind() != reflect.Pointer || rt.Elem().Kind() != reflect.Struct {
				t.Fatalf("ParsePayloadIn gave %T, not a pointer to a payload struct", v)
			}
			if _, err := adp.ParsePayloadIn(d, typ, []byte(`[]`)); !errors.Is(err, adp.ErrInvalidEvent) {
				t.Errorf("ParsePayloadIn of []: %v", err)
			}
			view := strings.Replace("*"+rt.Elem().String(), "*adp.", "*", 1)
			if typ != adp.TypeRoomCreate && typ != adp.TypeRoomJoinRequest && !cases[view] {
				t.Errorf("Room.check has no case for %s; cases: %v", view, cases)
			}
		})
	}
	for typ := range laterChecklistBuilders {
		if !d.IsBuiltin(typ) {
			t.Errorf("laterChecklistBuilders lists %s, which is not built in", typ)
		}
	}
}

var fileName = regexp.MustCompile(`[A-Za-z_./]+\.(?:go|json)\b`)

// checklistPlaces checks that the checklist in the package documentation
// names files that exist, and that the functions it names live in the file
// it names, so the list cannot drift from the code when files are split or
// renamed.
func checklistPlaces(t *testing.T) {
	t.Helper()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	sec := string(doc)
	start := strings.Index(sec, "// # Adding a built-in event type")
	end := strings.Index(sec, "// # Vectors")
	if start < 0 || end < start {
		t.Fatal("doc.go has no checklist section")
	}
	sec = sec[start:end]
	names := fileName.FindAllString(sec, -1)
	if len(names) < 9 {
		t.Fatalf("the checklist names %d files: %v", len(names), names)
	}
	for _, n := range names {
		if _, err := os.Stat(n); err == nil {
			continue
		}
		if _, err := os.Stat(filepath.Join("..", n)); err != nil {
			t.Errorf("the checklist names %s, which exists neither in adp nor at the module root", n)
		}
	}
	got := map[string]string{} // identifier → the file declaring it
	fset := token.NewFileSet()
	for _, f := range packageFiles(t, fset) {
		file := fset.Position(f.Package).Filename
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				name := d.Name.Name
				if d.Recv != nil && len(d.Recv.List) == 1 {
					name = strings.TrimPrefix(exprString(d.Recv.List[0].Type), "*") + "." + name
				}
				got[name] = file
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if vs, ok := s.(*ast.ValueSpec); ok {
						for _, n := range vs.Names {
							got[n.Name] = file
						}
					}
				}
			}
		}
	}
	// Every package identifier the checklist names after a file of this
	// package is declared in that file.
	locs := fileName.FindAllStringIndex(sec, -1)
	ident := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?`)
	checked := 0
	for i, loc := range locs {
		file := sec[loc[0]:loc[1]]
		if strings.Contains(file, "/") || strings.HasSuffix(file, "_test.go") || !strings.HasSuffix(file, ".go") {
			continue
		}
		next := len(sec)
		if i+1 < len(locs) {
			next = locs[i+1][0]
		}
		for _, id := range ident.FindAllString(sec[loc[1]:next], -1) {
			if at, ok := got[id]; ok {
				checked++
				if at != file {
					t.Errorf("the checklist places %s in %s; it is in %s", id, file, at)
				}
			}
		}
	}
	if checked < 5 {
		t.Errorf("the checklist places only %d identifiers in files", checked)
	}
}

// typeConstants returns the package's exported Type* string constants.
func typeConstants(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, f := range packageFiles(t, token.NewFileSet()) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Type") || !n.IsExported() || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						out[n.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	return out
}

// dispatchCases returns the case types of the type switch in Room.check,
// the rule table's dispatch on the decoded payload, as "*Name" or
// "*pkg.Name".
func dispatchCases(t *testing.T) map[string]bool {
	out := map[string]bool{}
	for _, f := range packageFiles(t, token.NewFileSet()) {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name != "check" || fn.Recv == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSwitchStmt)
				if !ok {
					return true
				}
				for _, s := range ts.Body.List {
					for _, e := range s.(*ast.CaseClause).List {
						out[exprString(e)] = true
					}
				}
				return false
			})
		}
	}
	if len(out) == 0 {
		t.Fatal("no type switch found in Room.check")
	}
	return out
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return "?"
}

// packageFiles parses the package's non-test sources.
func packageFiles(t *testing.T, fset *token.FileSet) []*ast.File {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var out []*ast.File
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// vectorTypes returns the types of the accepted records in the vectors.
func vectorTypes(t *testing.T) map[string]bool {
	b, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var vf struct {
		Rooms []struct {
			Records []struct {
				Record struct {
					Envelope struct {
						Event struct {
							Type string `json:"type"`
						} `json:"event"`
					} `json:"envelope"`
				} `json:"record"`
			} `json:"records"`
		} `json:"rooms"`
	}
	if err := json.Unmarshal(b, &vf); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, r := range vf.Rooms {
		for _, rec := range r.Records {
			out[rec.Record.Envelope.Event.Type] = true
		}
	}
	return out
}

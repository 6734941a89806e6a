package adp_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/fixtures"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/packs"
)

const later = adp.Draft20260924

// laterVectorFile is the 2026-09-24 draft's normative vectors file, read
// in full: every group the file's description names is checked below
// (patterns and type names in package packs, which owns them).
type laterVectorFile struct {
	RoomID          string           `json:"room_id"`
	Records         []jsontext.Value `json:"records"`
	RedactedRecords []jsontext.Value `json:"redacted_records"`
	LastSeq         int64            `json:"last_seq"`
	LastHash        string           `json:"last_hash"`
	HeadSeqAfter    []int64          `json:"head_seq_after"`
	Freshness       struct {
		Registry      []jsontext.Value     `json:"registry"`
		Classes       map[string]adp.Class `json:"classes"`
		HeadChecked   []string             `json:"head_checked"`
		HeadAdvancing []string             `json:"head_advancing"`
		BaseChecks    []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			HeadSeq  int64  `json:"head_seq"`
			BaseSeq  int64  `json:"base_seq"`
			Anchored bool   `json:"anchored"`
			Expected string `json:"expected"`
		} `json:"base_checks"`
	} `json:"freshness"`
	OpenRoles struct {
		Effective []struct {
			Name       string         `json:"name"`
			Visibility adp.Visibility `json:"visibility"`
			Policy     jsontext.Value `json:"policy"`
			Expected   []adp.Role     `json:"expected"`
		} `json:"effective"`
		Invalid []struct {
			Name       string         `json:"name"`
			Visibility adp.Visibility `json:"visibility"`
			Policy     jsontext.Value `json:"policy"`
		} `json:"invalid"`
	} `json:"open_roles"`
}

func readLaterVectors(t testing.TB) *laterVectorFile {
	t.Helper()
	var v laterVectorFile
	if err := strictjson.UnmarshalOpen(fixtures.LaterVectors, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Records) != 5 || len(v.RedactedRecords) != 5 || len(v.Freshness.BaseChecks) != 11 || len(v.OpenRoles.Effective) == 0 {
		t.Fatal("the vectors file lost a group")
	}
	return &v
}

// laterRecords parses the vectors' records (or redacted records).
func laterRecords(t testing.TB, raw []jsontext.Value) []*adp.Record {
	t.Helper()
	out := make([]*adp.Record, len(raw))
	for i, b := range raw {
		rec, err := adp.ParseRecordIn(later, []byte(b.Clone()))
		if err != nil {
			t.Fatalf("record %d: %v", i+1, err)
		}
		out[i] = rec
	}
	return out
}

// Every record hash reproduces from its fields (accepted_at inside the
// hash, §14), the chain links with and without the redacted record, and
// the last record's hash is last_hash.
func TestLaterVectorRecords(t *testing.T) {
	v := readLaterVectors(t)
	for name, raw := range map[string][]jsontext.Value{"records": v.Records, "redacted_records": v.RedactedRecords} {
		t.Run(name, func(t *testing.T) {
			recs := laterRecords(t, raw)
			var prev *adp.Record
			redacted := 0
			for _, rec := range recs {
				if err := rec.CheckHash(); err != nil {
					t.Fatal(err)
				}
				if got := adp.ComputeHashEncoded(rec); got != rec.Hash {
					t.Fatalf("record %d: encoded hash differs", rec.Seq)
				}
				if err := adp.CheckLink(prev, rec); err != nil {
					t.Fatal(err)
				}
				if rec.Redacted != nil {
					redacted++
					if rec.Seq != 3 || rec.Type() != adp.TypeMessageCreate || rec.EventHash().String() != "jIe6_5_AXJGXuZIOfrnmM_2ENdl8IQN5ZCr-sLIT-zw" {
						t.Fatalf("redacted record %d: %+v", rec.Seq, rec.Redacted)
					}
				} else if err := rec.Envelope.Verify(); err != nil {
					t.Fatalf("record %d: %v", rec.Seq, err)
				}
				// AppendJSON writes the record's canonical form, which reads
				// back to the same record.
				again, err := adp.ParseRecordIn(later, rec.AppendJSON(nil))
				if err != nil || again.Hash != rec.Hash || again.CanonicalInput() == nil || again.CheckHash() != nil {
					t.Fatalf("record %d does not survive AppendJSON: %v", rec.Seq, err)
				}
				prev = rec
			}
			if prev.Seq != v.LastSeq || prev.Hash.String() != v.LastHash {
				t.Fatalf("chain ends at seq %d %s; last_seq %d last_hash %s", prev.Seq, prev.Hash, v.LastSeq, v.LastHash)
			}
			if want := map[string]int{"records": 0, "redacted_records": 1}[name]; redacted != want {
				t.Fatalf("%d redacted records, want %d", redacted, want)
			}
		})
	}
	// The seed reads none of them: their time member is accepted_at.
	_, err := adp.ParseRecord([]byte(v.Records[0].Clone()))
	if !errors.Is(err, adp.ErrInvalidRecord) || !strings.Contains(err.Error(), "2026-09-24") {
		t.Fatalf("seed parse of a later record: %v", err)
	}
}

// Replaying the vectors' records gives head_seq_after: messages and
// signals do not move the head, the contract write does (§5.1). The
// redacted chain replays to the same heads.
func TestLaterVectorHeads(t *testing.T) {
	v := readLaterVectors(t)
	for name, raw := range map[string][]jsontext.Value{"records": v.Records, "redacted_records": v.RedactedRecords} {
		t.Run(name, func(t *testing.T) {
			room := adp.NewRoom(v.RoomID, &adp.RoomOptions{Draft: later})
			for i, rec := range laterRecords(t, raw) {
				if err := room.Apply(context.Background(), rec); err != nil {
					t.Fatalf("record %d: %v", rec.Seq, err)
				}
				if got := room.Head().Seq; got != v.HeadSeqAfter[i] {
					t.Fatalf("head after record %d is %d, want %d", rec.Seq, got, v.HeadSeqAfter[i])
				}
			}
			// The member joined by an open role, as a speaker.
			if m, ok := room.Member(room.Members()[1].ID); !ok || m.Role != adp.RoleSpeaker || m.Perspective != "reviewer" {
				t.Fatalf("member %+v", m)
			}
		})
	}
	// The same records replayed under the seed's rules fail at once: a
	// seed room reads no accepted_at record.
	recs := laterRecords(t, v.Records)
	err := adp.NewRoom(v.RoomID, nil).Apply(context.Background(), recs[0])
	if !errors.Is(err, adp.ErrInvalidRecord) || !strings.Contains(err.Error(), "2026-07-04") {
		t.Fatalf("a seed room applied a 2026-09-24 record: %v", err)
	}
}

// The freshness group: classes, head-checked and head-advancing types
// under a registry importing reactions and moderation, and every base
// check's outcome.
func TestLaterVectorFreshness(t *testing.T) {
	v := readLaterVectors(t)
	reg := packs.NewRegistry(&packs.Options{Draft: later})
	var decls []packs.Declaration
	for _, r := range v.Freshness.Registry {
		d, err := later.ParseDeclaration(r)
		if err != nil {
			t.Fatal(err)
		}
		decls = append(decls, d)
	}
	if err := reg.Declare(context.Background(), 1, decls...); err != nil {
		t.Fatal(err)
	}
	classOf := func(typ string) adp.Class {
		t.Helper()
		c, ok := adp.ClassOf(later, typ, reg.Lookup(typ))
		if !ok {
			t.Fatalf("%s has no class", typ)
		}
		return c
	}
	var checked, advancing []string
	for typ, want := range v.Freshness.Classes {
		c := classOf(typ)
		if c != want {
			t.Errorf("%s: class %s, want %s", typ, c, want)
		}
		r := c.Rule(later)
		if r.Base == adp.BaseAtOrAfterHead {
			checked = append(checked, typ)
		}
		if r.Advances {
			advancing = append(advancing, typ)
		}
	}
	slices.Sort(checked)
	slices.Sort(advancing)
	if want := slices.Sorted(slices.Values(v.Freshness.HeadChecked)); !slices.Equal(checked, want) {
		t.Errorf("head-checked %v, want %v", checked, want)
	}
	if want := slices.Sorted(slices.Values(v.Freshness.HeadAdvancing)); !slices.Equal(advancing, want) {
		t.Errorf("head-advancing %v, want %v", advancing, want)
	}
	if _, ok := adp.ClassOf(later, adp.TypeRoomJoinRequest, nil); ok {
		t.Error("room.join.request has a class: it is never a record")
	}
	var h envelope.Hash
	for _, bc := range v.Freshness.BaseChecks {
		t.Run(bc.Name, func(t *testing.T) {
			err := adp.CheckBase(later, classOf(bc.Type), bc.BaseSeq, h, bc.Anchored, adp.RecordRef{Seq: bc.HeadSeq, Hash: h}, "")
			switch bc.Expected {
			case "ok":
				if err != nil {
					t.Fatal(err)
				}
			default:
				if !errors.Is(err, identity.NewError(identity.Code(bc.Expected), "")) {
					t.Fatalf("got %v, want %s", err, bc.Expected)
				}
			}
		})
	}
}

// The open-roles group: effective open roles per visibility and policy
// (§8.3), and the policies a room.create must refuse.
func TestLaterVectorOpenRoles(t *testing.T) {
	v := readLaterVectors(t)
	for _, e := range v.OpenRoles.Effective {
		var p *adp.Policy
		if e.Policy != nil {
			p = new(adp.Policy)
			if err := strictjson.Unmarshal(e.Policy, p); err != nil {
				t.Fatal(err)
			}
		}
		if got := p.EffectiveOpenRoles(e.Visibility); !slices.Equal(got, e.Expected) {
			t.Errorf("%s: %v, want %v", e.Name, got, e.Expected)
		}
		if _, err := adp.ParsePayloadIn(later, adp.TypeRoomCreate, createWithPolicy(e.Visibility, e.Policy)); err != nil {
			t.Errorf("%s: room.create refused: %v", e.Name, err)
		}
	}
	for _, e := range v.OpenRoles.Invalid {
		_, err := adp.ParsePayloadIn(later, adp.TypeRoomCreate, createWithPolicy(e.Visibility, e.Policy))
		if !errors.Is(err, adp.ErrInvalidEvent) {
			t.Errorf("%s: %v", e.Name, err)
		}
	}
}

// createWithPolicy is a 2026-09-24 room.create payload with the given
// visibility and policy (none when nil).
func createWithPolicy(vis adp.Visibility, policy jsontext.Value) []byte {
	b := `{"host":"https://api.example.com","topic":"t","visibility":"` + string(vis) + `","start_time":1,"end_time":2`
	if policy != nil {
		b += `,"policy":` + string(policy)
	}
	return []byte(b + "}")
}

// FuzzParseRecordLater is FuzzParseRecord for the 2026-09-24 draft,
// seeded from its vectors (records and redacted records): the one-pass
// and plain parses agree, what is accepted is strict JSON, re-encodes to
// a fixed point and hashes the same from its text as from its fields, and
// a redacted envelope is one of message.create or a custom type.
func FuzzParseRecordLater(f *testing.F) {
	v := readLaterVectors(f)
	for _, r := range append(v.Records, v.RedactedRecords...) {
		f.Add([]byte(r.Clone()))
	}
	f.Add([]byte(`{"accepted_at":1,"envelope":{"hash":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","redacted":true,"type":"x.y"},"hash":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","pre_hash":null,"room_id":"r","seq":1}`))
	f.Add([]byte(`{"received_at":1,"envelope":{},"hash":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","pre_hash":null,"room_id":"r","seq":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := adp.ParseRecordIn(later, b)
		plain, perr := adp.ParseRecordPlainIn(later, b)
		if (err == nil) != (perr == nil) || err != nil && err.Error() != perr.Error() {
			t.Fatalf("one pass: %v; plain: %v", err, perr)
		}
		if err != nil {
			return
		}
		if err := strictjson.Validate(b); err != nil {
			t.Fatalf("accepted a record the strict validator refuses: %v", err)
		}
		out := rec.AppendJSON(nil)
		if !bytes.Equal(out, plain.AppendJSON(nil)) {
			t.Fatal("one pass and plain parse differ")
		}
		again, err := adp.ParseRecordIn(later, out)
		if err != nil {
			t.Fatalf("re-marshalled record rejected: %v", err)
		}
		if again.Hash != rec.Hash || again.ComputeHash() != rec.ComputeHash() || !bytes.Equal(again.AppendJSON(nil), out) {
			t.Fatal("re-marshalling changed the record")
		}
		if c := rec.CanonicalInput(); c != nil && !bytes.Equal(c, out) {
			t.Fatalf("CanonicalInput %q, AppendJSON writes %q", c, out)
		}
		if rec.ComputeHash() != adp.ComputeHashEncoded(rec) || plain.ComputeHash() != adp.ComputeHashEncoded(plain) {
			t.Fatal("ComputeHash from the parsed text differs from the fields' hash")
		}
		if x := rec.Redacted; x != nil && (rec.Envelope != nil || x.Type != adp.TypeMessageCreate && later.IsBuiltin(x.Type)) {
			t.Fatalf("accepted redaction %+v", x)
		}
		// The seed never reads a 2026-09-24 record.
		if _, err := adp.ParseRecord(b); err == nil {
			t.Fatal("the seed parsed a 2026-09-24 record")
		}
	})
}

package adp_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/raceflag"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

var updateVerdicts = flag.Bool("update-verdicts", false, "rewrite adp/testdata/verdicts.txt (only from code whose verdicts are trusted)")

const verdictsPath = "testdata/verdicts.txt"

// TestDifferentialVerdicts pins the verdict and error code of every input
// of a differential corpus to the ones recorded from main before the
// payload path was reworked to one pass, so that an optimization of the
// parse, schema or rule path cannot change what is accepted or how a
// refusal is coded:
//
//   - the vectors: every accepted record replayed, and every rejection;
//   - mutations of each vector record's payload (bytes changed or cut,
//     members removed, retyped, added or duplicated), judged by
//     ParsePayload or the room's registry, and — signed again by the
//     record's author — by Room.Check in the room as it stood;
//   - FuzzRoomReplay's seed programs and 120 generated ones, every write's
//     verdict.
//
// Regenerate with -update-verdicts only from code whose verdicts are the
// reference (then say why in the commit).
func TestDifferentialVerdicts(t *testing.T) {
	if raceflag.Enabled && !*updateVerdicts {
		// One goroutine throughout: the race detector finds nothing here
		// and would multiply the corpus's 10,000 signatures by ten.
		t.Skip("runs without -race")
	}
	var out bytes.Buffer
	vectorVerdicts(t, &out)
	programVerdicts(t, &out)
	if *updateVerdicts {
		if err := os.WriteFile(verdictsPath, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(verdictsPath)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(out.String(), "\n")
	exp := strings.Split(string(want), "\n")
	if len(got) != len(exp) {
		t.Errorf("%d verdicts, %d recorded", len(got), len(exp))
	}
	bad := 0
	for i := range min(len(got), len(exp)) {
		if got[i] != exp[i] {
			if bad++; bad <= 20 {
				t.Errorf("verdict changed:\n got %s\nwant %s", got[i], exp[i])
			}
		}
	}
	if bad > 20 {
		t.Errorf("… %d verdicts changed in all", bad)
	}
}

// shortCodes abbreviate the verdicts of payload mutations, which are
// written two to a mutation (payload check, then room check); other codes
// are written in full, in brackets.
var shortCodes = map[string]string{"ok": ".", "unsigned": "u", "invalid_event": "E",
	"payload_schema_violation": "S", "payload_too_large": "L"}

func short(v string) string {
	if s, ok := shortCodes[v]; ok {
		return s
	}
	return "[" + v + "]"
}

// verdict is "ok" for nil, else the error's §20 code (or "untyped").
func verdict(err error) string {
	if err == nil {
		return "ok"
	}
	var e *identity.Error
	if errors.As(err, &e) {
		return string(e.Code)
	}
	return "untyped"
}

func vectorVerdicts(t *testing.T, out *bytes.Buffer) {
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var vf vectorFile
	if err := json.Unmarshal(raw, &vf, json.RejectUnknownMembers(true)); err != nil {
		t.Fatal(err)
	}
	keys := map[identity.AgentID]*identity.PrivateKey{}
	for _, k := range vf.Keys {
		seed, _ := hex.DecodeString(k.Seed)
		key, err := identity.NewKeyFromSeed(seed)
		if err != nil {
			t.Fatal(err)
		}
		keys[k.AgentID] = key
	}
	ctx := context.Background()
	rooms := map[string][]*adp.Record{}
	ids := map[string]string{}
	for _, vr := range vf.Rooms {
		ids[vr.Name] = vr.RoomID
		room := adp.NewRoom(vr.RoomID, nil)
		for _, v := range vr.Records {
			rec, err := adp.ParseRecord(v.Record)
			if err != nil {
				fmt.Fprintf(out, "%s/%s record %s\n", vr.Name, v.Name, verdict(err))
				continue
			}
			ev := rec.Envelope.Event()
			at := time.UnixMilli(rec.ReceivedAt)
			var line strings.Builder
			fmt.Fprintf(&line, "%s/%d %s mutations", vr.Name, rec.Seq, ev.Type)
			for _, p := range payloadMutations(ev.Payload) {
				var parse error
				if adp.IsBuiltin(ev.Type) {
					_, parse = adp.ParsePayload(ev.Type, p)
				} else {
					parse = room.Registry().Validate(ev.Type, p)
				}
				check := "unsigned"
				e := ev
				e.Payload = p
				if env, err := envelope.Sign(ctx, keys[ev.Actor], e); err == nil {
					check = verdict(room.Check(ctx, env, at))
				}
				line.WriteString(" " + short(verdict(parse)) + short(check))
			}
			out.WriteString(line.String() + "\n")
			err = room.Apply(ctx, rec)
			fmt.Fprintf(out, "%s/%d apply %s\n", vr.Name, rec.Seq, verdict(err))
			rooms[vr.Name] = append(rooms[vr.Name], rec)
		}
	}
	for _, rj := range vf.Rejections {
		room := adp.NewRoom(ids[rj.Room], nil)
		for _, rec := range rooms[rj.Room][:rj.AfterSeq] {
			if err := room.Apply(ctx, rec); err != nil {
				t.Fatal(err)
			}
		}
		env, err := envelope.Parse(rj.Envelope)
		if err == nil {
			err = room.Check(ctx, env, time.UnixMilli(rj.ReceivedAt))
		}
		fmt.Fprintf(out, "reject/%s %s\n", rj.Name, verdict(err))
	}
}

// mutationValues replace a member's value.
var mutationValues = []string{`null`, `0`, `1.0`, `1.5`, `-1`, `9007199254740993`, `1e2`, `""`, `" "`, `"x"`,
	`"d8ftedhpqhsusbg001tg"`, `true`, `[]`, `["x"]`, `{}`, `{"a":1}`}

// payloadMutations returns p and deterministic variants of it: whole
// replacements, byte edits at up to 32 positions, and member edits at the
// top level and one level down.
func payloadMutations(p []byte) [][]byte {
	out := [][]byte{p, []byte(`[]`), []byte(`null`), []byte(`"s"`), []byte(`{}`), []byte(` ` + string(p) + ` `)}
	step := max(1, len(p)/32)
	for i := 0; i < len(p); i += step {
		out = append(out, cat(p[:i], p[i+1:]))
		for _, c := range []string{`"`, `}`, `0`, `\`} {
			out = append(out, cat(p[:i], []byte(c), p[i+1:]))
		}
	}
	out = append(out, memberMutations(p, 2)...)
	return out
}

func memberMutations(p []byte, depth int) [][]byte {
	ms, err := strictjson.SplitObject(p)
	if err != nil || depth == 0 {
		return nil
	}
	rebuild := func(edit func(i int, m strictjson.Member) []string) []byte {
		var parts []string
		for i, m := range ms {
			parts = append(parts, edit(i, m)...)
		}
		return []byte("{" + strings.Join(parts, ",") + "}")
	}
	member := func(name string, v []byte) string {
		n, _ := json.Marshal(name)
		return string(n) + ":" + string(v)
	}
	keep := func(_ int, m strictjson.Member) []string { return []string{member(m.Name, m.Value)} }
	var out [][]byte
	// An unknown member, a duplicate and an oversized one.
	out = append(out, rebuild(func(i int, m strictjson.Member) []string {
		if i == 0 {
			return []string{member("zz", []byte(`1`)), member(m.Name, m.Value)}
		}
		return keep(i, m)
	}))
	out = append(out, rebuild(func(i int, m strictjson.Member) []string {
		if i == 0 {
			return []string{member(m.Name, m.Value), member(m.Name, m.Value)}
		}
		return keep(i, m)
	}))
	out = append(out, rebuild(func(i int, m strictjson.Member) []string {
		if i == 0 {
			return []string{member("zz", []byte(`"`+strings.Repeat("x", 70_000)+`"`)), member(m.Name, m.Value)}
		}
		return keep(i, m)
	}))
	for j, target := range ms {
		out = append(out, rebuild(func(i int, m strictjson.Member) []string {
			if i == j {
				return nil
			}
			return keep(i, m)
		}))
		for _, v := range mutationValues {
			out = append(out, rebuild(func(i int, m strictjson.Member) []string {
				if i == j {
					return []string{member(m.Name, []byte(v))}
				}
				return keep(i, m)
			}))
		}
		for _, sub := range memberMutations(target.Value, depth-1) {
			out = append(out, rebuild(func(i int, m strictjson.Member) []string {
				if i == j {
					return []string{member(m.Name, sub)}
				}
				return keep(i, m)
			}))
		}
	}
	return out
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func programVerdicts(t *testing.T, out *bytes.Buffer) {
	programs := [][]byte{
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		{1, 1, 5, 5, 9, 200, 3, 3, 17, 40, 2, 2, 60, 7},
		bytes.Repeat([]byte{3, 14, 9, 2}, 8),
	}
	rng := rand.New(rand.NewPCG(23, 2026))
	for range 120 {
		p := make([]byte, 8+rng.IntN(41))
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		programs = append(programs, p)
	}
	for n, p := range programs {
		var line strings.Builder
		fmt.Fprintf(&line, "program/%d", n)
		replayProgram(t, p, func(step int, typ string, err error) {
			fmt.Fprintf(&line, " %d:%s", step, verdict(err))
		})
		out.WriteString(line.String() + "\n")
	}
}

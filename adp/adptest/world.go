package adptest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// T0 is the fixture's epoch, 2026-05-26T00:00:00Z: the era of the seed
// text's examples and of the ADP vectors.
var T0 = time.UnixMilli(1779753600000)

// Host is the origin the fixture's rooms name in a draft that binds
// room.create to its host (2026-09-24 §8.1); it is the upstream vectors'.
const Host = "https://api.example.com"

// Agents names the fixture's agents. Each has a fixed key derived from a
// one-byte seed, so Agent IDs and signatures are the same in every run.
var Agents = []string{"creator", "mod", "alice", "bob", "carol", "dave"}

// World is a reusable room fixture: the named Agents, one room driven
// through the host path (Room.Accept), and a clock that only the test
// moves. Tests in adp, archive and the examples share it so that there is
// one harness to fix.
//
// A World is not safe for concurrent use.
type World struct {
	TB  testing.TB
	Ctx context.Context
	// Now is the clock of every author and of the host; Submit advances
	// it by one millisecond before each write, like a real host clock.
	Now  time.Time
	Room *adp.Room
	// Records are the accepted records, in seq order.
	Records []*adp.Record
	// Track makes Submit keep a snapshot of the room from before each
	// write in Before, so a test can assert that a rejection changed
	// nothing.
	Track  bool
	Before []byte

	authors map[string]*envelope.Author
}

// NewWorld returns a fixture for a new room with id roomID (a valid room
// ID such as "d8ftedhpqhsusbg001tg") and room options opts (nil for the
// defaults).
func NewWorld(tb testing.TB, roomID string, opts *adp.RoomOptions) *World {
	tb.Helper()
	w := &World{TB: tb, Ctx: context.Background(), Now: T0, Room: adp.NewRoom(roomID, opts), authors: map[string]*envelope.Author{}}
	for _, name := range Agents {
		k, err := identity.NewKeyFromSeed(Seed(name))
		if err != nil {
			tb.Fatal(err)
		}
		w.authors[name] = &envelope.Author{Signer: k, Nonces: identity.NewNonceSource(nil), Now: w.clock}
	}
	return w
}

func (w *World) clock() time.Time { return w.Now }

// Seed returns the key seed of the named agent: 32 copies of 0x11 for the
// first of Agents, 0x12 for the second, and so on. It panics for a name
// not in Agents.
func Seed(name string) []byte {
	i := slices.Index(Agents, name)
	if i < 0 {
		panic("adptest: no agent " + name)
	}
	return bytes.Repeat([]byte{byte(0x11 + i)}, 32)
}

// Author returns the author of the named agent; it fails the test for a
// name not in Agents.
func (w *World) Author(name string) *envelope.Author {
	a, ok := w.authors[name]
	if !ok {
		w.TB.Fatalf("adptest: no agent %q", name)
	}
	return a
}

// ID returns the Agent ID of the named agent.
func (w *World) ID(name string) identity.AgentID { return w.Author(name).AgentID() }

// Tick advances the clock by d.
func (w *World) Tick(d time.Duration) { w.Now = w.Now.Add(d) }

// Base returns the base the room requires for a write of type typ.
func (w *World) Base(typ string) adp.Base {
	w.TB.Helper()
	b, err := w.Room.BaseFor(typ)
	if err != nil {
		w.TB.Fatal(err)
	}
	return b
}

// Submit accepts env one millisecond after the previous write. err is the
// builder's error, so a call reads Submit(adp.NewMessage(…)); a builder
// error fails the test. The room's rejection is returned.
func (w *World) Submit(env *envelope.Envelope, err error) (*adp.Record, error) {
	w.TB.Helper()
	if err != nil {
		w.TB.Fatalf("building event: %v", err)
	}
	w.Tick(time.Millisecond)
	if w.Track {
		if w.Before, err = w.Room.Snapshot(); err != nil {
			w.TB.Fatal(err)
		}
	}
	rec, err := w.Room.Accept(w.Ctx, env, w.Now)
	if err == nil {
		w.Records = append(w.Records, rec)
	}
	return rec, err
}

// Must is Submit that fails the test when the room rejects the write.
func (w *World) Must(env *envelope.Envelope, err error) *adp.Record {
	w.TB.Helper()
	rec, err := w.Submit(env, err)
	if err != nil {
		w.TB.Fatalf("%s rejected: %v", env.Type(), err)
	}
	return rec
}

// OK returns rec and fails the test when err, a write's rejection, is
// not nil: OK(w.Say(…)) reads as "this write is accepted".
func (w *World) OK(rec *adp.Record, err error) *adp.Record {
	w.TB.Helper()
	if err != nil {
		w.TB.Fatalf("rejected: %v", err)
	}
	return rec
}

// PublicRoom creates an active public room, starting now and ending in an
// hour, created by "creator", in the room's draft (naming Host where the
// draft binds rooms to hosts). mutate may adjust the payload first.
func (w *World) PublicRoom(mutate ...func(*adp.RoomCreate)) *adp.Record {
	w.TB.Helper()
	p := adp.RoomCreate{
		Topic: "Multi-agent code review strategy", Visibility: adp.VisibilityPublic,
		StartTime: w.Now.UnixMilli(), EndTime: w.Now.Add(time.Hour).UnixMilli(),
	}
	if w.Room.Draft() != adp.Draft20260704 {
		p.Host = Host
	}
	for _, f := range mutate {
		f(&p)
	}
	return w.Must(adp.NewRoomCreateIn(w.Ctx, w.Author("creator"), w.Room.Draft(), p))
}

// Join makes name an active member with role through a direct join.
func (w *World) Join(name string, role adp.Role) *adp.Record {
	w.TB.Helper()
	return w.JoinWith(name, adp.Join{Role: role})
}

// JoinWith is Join with a full payload (perspective, request_id, …).
func (w *World) JoinWith(name string, j adp.Join) *adp.Record {
	w.TB.Helper()
	return w.Must(adp.NewJoin(w.Ctx, w.Author(name), w.Base(adp.TypeRoomJoin), j))
}

// Say submits a text/plain message from name.
func (w *World) Say(name, text string) (*adp.Record, error) {
	w.TB.Helper()
	return w.Submit(adp.NewMessage(w.Ctx, w.Author(name), w.Base(adp.TypeMessageCreate),
		adp.Message{ContentType: "text/plain", Content: adp.TextContent(text)}))
}

// Custom submits an event of a room-defined type with a JSON payload.
func (w *World) Custom(name, typ, payload string) (*adp.Record, error) {
	w.TB.Helper()
	return w.Submit(adp.NewCustom(w.Ctx, w.Author(name), w.Base(typ), w.Room.Registry(), typ, jsontext.Value(payload)))
}

// Replay applies Records in order to a new room with the same id and
// options opts, as a verifier would, fails the test on any rejection, and
// checks that the replayed state equals the host's. It returns the
// replayed room.
func (w *World) Replay(opts *adp.RoomOptions) *adp.Room {
	w.TB.Helper()
	if opts == nil {
		opts = &adp.RoomOptions{}
	}
	if opts.Draft == 0 {
		o := *opts
		o.Draft = w.Room.Draft()
		opts = &o
	}
	r := adp.NewRoom(w.Room.ID(), opts)
	for _, rec := range w.Records {
		if err := r.Apply(w.Ctx, rec); err != nil {
			w.TB.Fatalf("replay of seq %d: %v", rec.Seq, err)
		}
	}
	host, err := w.Room.Snapshot()
	if err != nil {
		w.TB.Fatal(err)
	}
	got, err := r.Snapshot()
	if err != nil {
		w.TB.Fatal(err)
	}
	if !bytes.Equal(host, got) {
		w.TB.Fatalf("replayed state differs from the host's:\nhost   %s\nreplay %s", host, got)
	}
	return r
}

// VectorRecords returns the records of the named room in the SDK's ADP
// vectors (adp/testdata/vectors.json). It reads the file from the source
// tree, so it works in this module's tests only.
func VectorRecords(tb testing.TB, room string) []*adp.Record {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("adptest: cannot locate the vectors")
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "testdata", "vectors.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var vf struct {
		Rooms []struct {
			Name    string `json:"name"`
			Records []struct {
				Record jsontext.Value `json:"record"`
			} `json:"records"`
		} `json:"rooms"`
	}
	if err := strictjson.UnmarshalOpen(b, &vf); err != nil {
		tb.Fatal(err)
	}
	for _, r := range vf.Rooms {
		if r.Name != room {
			continue
		}
		out := make([]*adp.Record, 0, len(r.Records))
		for _, v := range r.Records {
			rec, err := adp.ParseRecord(v.Record)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, rec)
		}
		return out
	}
	tb.Fatalf("adptest: no room %q in the vectors", room)
	return nil
}

package adp_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// world is a test harness: named agents with deterministic keys, one room
// and a controllable clock. Every write goes through the builders and the
// host path (Room.Accept).
type world struct {
	t       testing.TB
	ctx     context.Context
	now     time.Time
	room    *adp.Room
	authors map[string]*envelope.Author
	records []*adp.Record
	// before is the room snapshot taken before the latest submit (when
	// track is set), so tests can assert that a rejected write changed
	// nothing.
	before []byte
	track  bool
}

// T0 is the harness epoch (2026-05-26T00:00:00Z), the vectors' era.
var T0 = time.UnixMilli(1779753600000)

// agentSeeds gives each test agent a fixed seed byte.
var agentSeeds = map[string]byte{"creator": 0x11, "mod": 0x12, "alice": 0x13, "bob": 0x14, "carol": 0x15, "dave": 0x16}

func newWorld(t testing.TB, opts *adp.RoomOptions) *world {
	w := &world{t: t, ctx: context.Background(), now: T0, authors: map[string]*envelope.Author{}}
	w.room = adp.NewRoom("d8ftedhpqhsusbg001tg", opts)
	for name, b := range agentSeeds {
		key, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32))
		if err != nil {
			t.Fatal(err)
		}
		w.authors[name] = &envelope.Author{Signer: key, Nonces: identity.NewNonceSource(nil), Now: func() time.Time { return w.now }}
	}
	return w
}

func (w *world) a(name string) *envelope.Author { return w.authors[name] }

func (w *world) id(name string) identity.AgentID { return w.authors[name].AgentID() }

// tick advances the clock.
func (w *world) tick(d time.Duration) { w.now = w.now.Add(d) }

// base is the Base the room wants for typ.
func (w *world) base(typ string) adp.Base {
	w.t.Helper()
	b, err := w.room.BaseFor(typ)
	if err != nil {
		w.t.Fatal(err)
	}
	return b
}

// submit accepts env at the current time (one ms later each call, like a
// real host clock).
func (w *world) submit(env *envelope.Envelope, err error) (*adp.Record, error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatalf("building event: %v", err)
	}
	w.tick(time.Millisecond)
	if w.track {
		w.before, _ = w.room.Snapshot()
	}
	rec, err := w.room.Accept(w.ctx, env, w.now)
	if err == nil {
		w.records = append(w.records, rec)
	}
	return rec, err
}

// must accepts env and fails the test on rejection.
func (w *world) must(env *envelope.Envelope, err error) *adp.Record {
	w.t.Helper()
	rec, err := w.submit(env, err)
	if err != nil {
		w.t.Fatalf("rejected: %v", err)
	}
	return rec
}

// publicRoom creates an active public room with observers allowed,
// starting now and ending in an hour.
func (w *world) publicRoom(mutate ...func(*adp.RoomCreate)) *adp.Record {
	p := adp.RoomCreate{
		Topic: "Multi-agent code review strategy", Visibility: adp.VisibilityPublic,
		StartTime: w.now.UnixMilli(), EndTime: w.now.Add(time.Hour).UnixMilli(),
	}
	for _, f := range mutate {
		f(&p)
	}
	return w.must(adp.NewRoomCreate(w.ctx, w.a("creator"), p))
}

// join makes name an active member with role via a direct public join.
func (w *world) join(name string, role adp.Role) *adp.Record {
	w.t.Helper()
	return w.must(adp.NewJoin(w.ctx, w.a(name), w.base(adp.TypeRoomJoin), adp.Join{Role: role}))
}

func (w *world) say(name, text string) (*adp.Record, error) {
	return w.submit(adp.NewMessage(w.ctx, w.a(name), w.base(adp.TypeMessageCreate),
		adp.Message{ContentType: "text/plain", Content: adp.TextContent(text)}))
}

// ok fails the test when a helper's write was rejected.
func (w *world) ok(rec *adp.Record, err error) *adp.Record {
	w.t.Helper()
	if err != nil {
		w.t.Fatalf("rejected: %v", err)
	}
	return rec
}

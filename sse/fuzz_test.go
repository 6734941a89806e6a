package sse

import (
	"bytes"
	"context"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	gosse "github.com/tmaxmax/go-sse"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

var (
	fuzzOnce  sync.Once
	fuzzChain [][]byte
	fuzzRoom  = "d8ftedhpqhsusbg001tg"
	fuzzBob   identity.AgentID
)

// chain is a genuine six-record room, built through the host path.
func chain(tb testing.TB) [][]byte {
	fuzzOnce.Do(func() {
		ctx := context.Background()
		t0 := time.UnixMilli(1779753600000)
		now := t0
		author := func(b byte) *envelope.Author {
			k, err := identity.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32))
			if err != nil {
				panic(err)
			}
			return &envelope.Author{Signer: k, Nonces: identity.NewNonceSource(nil), Now: func() time.Time { return now }}
		}
		creator, bob := author(0x11), author(0x14)
		fuzzBob = bob.AgentID()
		room := adp.NewRoom(fuzzRoom, nil)
		accept := func(env *envelope.Envelope, err error) {
			if err != nil {
				panic(err)
			}
			now = now.Add(time.Millisecond)
			rec, err := room.Accept(ctx, env, now)
			if err != nil {
				panic(err)
			}
			fuzzChain = append(fuzzChain, rec.AppendJSON(nil))
		}
		base := func(typ string) adp.Base {
			b, err := room.BaseFor(typ)
			if err != nil {
				panic(err)
			}
			return b
		}
		accept(adp.NewRoomCreate(ctx, creator, adp.RoomCreate{Topic: "fuzz", Visibility: adp.VisibilityPublic,
			StartTime: t0.UnixMilli(), EndTime: t0.Add(time.Hour).UnixMilli()}))
		accept(adp.NewJoin(ctx, bob, base(adp.TypeRoomJoin), adp.Join{Role: adp.RoleSpeaker}))
		for i := 0; i < 4; i++ {
			accept(adp.NewMessage(ctx, bob, base(adp.TypeMessageCreate), adp.Message{ContentType: "text/plain", Content: adp.TextContent("hi")}))
		}
	})
	return fuzzChain
}

func frame(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }

// FuzzStream feeds arbitrary SSE bytes to the subscriber's event handling
// (go-sse framing, record and notice parsing, dedupe, gap filling,
// verification) with a history that has the first `served` genuine
// records. Whatever the stream says, the consumer sees only a prefix of
// the genuine chain, each record once, in order.
func FuzzStream(f *testing.F) {
	c := chain(f)
	rec := func(i int) string { return frame(EventRecord, string(c[i])) }
	bob := fuzzBob.String()
	notices := frame(EventAgentStatus, `{"room_id":"`+fuzzRoom+`","agent_id":"`+bob+`","state":"drafting","expires_at":1}`) +
		frame(EventJoinRequest, `{"room_id":"`+fuzzRoom+`","request_id":"jr_1","applicant":"`+bob+`","role":"speaker","created_at":1,"expires_at":2}`) +
		frame(EventAgentStatus, `{"room_id":"`+fuzzRoom+`","agent_id":"`+bob+`","state":"x","seq":1}`)
	tampered := frame(EventRecord, strings.Replace(string(c[4]), `"received_at":1`, `"received_at":2`, 1))
	// Signature checks dominate an execution (and are slow under coverage
	// instrumentation), so the seeds bring few records the history lacks.
	seeds := []struct {
		served uint8
		stream string
	}{
		{6, rec(0) + rec(5) + rec(5)},             // duplicates of history
		{4, rec(4) + rec(4) + rec(5)},             // live after history, a duplicate
		{4, rec(5) + rec(4)},                      // out of order
		{3, tampered + rec(3)},                    // tampered, then genuine
		{2, rec(5)},                               // a gap history cannot fill
		{6, notices + ": heartbeat\n\n" + rec(2)}, // notices
	}
	for _, s := range seeds {
		f.Add(s.served, []byte(s.stream))
	}
	// The history's records are parsed and verified once (Envelope
	// remembers a verification), so an execution costs only what the
	// stream brings: a few events, each at most one signature check.
	parsed := make([]*adp.Record, len(c))
	for i, b := range c {
		rec, err := adp.ParseRecord(b)
		if err != nil || rec.Envelope.Verify() != nil {
			f.Fatal(err)
		}
		parsed[i] = rec
	}
	const maxEvents = 12
	f.Fuzz(func(t *testing.T, served uint8, stream []byte) {
		n := min(int(served), len(c))
		hist := HistoryFunc(func(_ context.Context, _ string, after int64) iter.Seq2[*adp.Record, error] {
			return func(yield func(*adp.Record, error) bool) {
				for _, rec := range parsed[min(int(max(after, 0)), n):n] {
					if !yield(rec, nil) {
						return
					}
				}
			}
		})
		fl, err := newFollower(&Options{API: "https://h.example/v1", RoomID: fuzzRoom, Signer: nopSigner{}, History: hist, MaxPending: 4, MaxPendingBytes: 3000})
		if err != nil {
			t.Fatal(err)
		}
		var got []*adp.Record
		fl.yield = func(it Item, err error) bool {
			if it.Kind == KindRecord {
				got = append(got, it.Record)
			}
			return true
		}
		ctx := context.Background()
		if _, err := fl.sync(ctx); err != nil {
			t.Fatal(err)
		}
		events := 0
		for ev, err := range gosse.Read(bytes.NewReader(stream), &gosse.ReadConfig{MaxEventSize: 1 << 16}) {
			if events++; err != nil || events > maxEvents {
				break
			}
			resync, ok := fl.onEvent(ctx, fl.prepare(ev.Type, ev.Data))
			if !ok {
				t.Fatal("stopped")
			}
			if resync {
				fl.sync(ctx)
			}
			sum := 0
			for _, h := range fl.pending {
				sum += h.size
			}
			if len(fl.pending) > 4 || sum != fl.pendingBytes || sum > 3000 {
				t.Fatalf("%d records, %d bytes (counted %d) pending; bounds 4 and 3000", len(fl.pending), sum, fl.pendingBytes)
			}
		}
		if len(got) < n {
			t.Fatalf("delivered %d records, history has %d", len(got), n)
		}
		for i, rec := range got {
			if i >= len(c) || !bytes.Equal(rec.AppendJSON(nil), c[i]) {
				t.Fatalf("delivered record %d is not the genuine one", i+1)
			}
		}
	})
}

type nopSigner struct{}

func (nopSigner) AgentID() identity.AgentID                    { return identity.AgentID{} }
func (nopSigner) Sign(context.Context, []byte) ([]byte, error) { return make([]byte, 64), nil }

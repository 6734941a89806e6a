package adp_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/envelope"
)

// benchRoom is a 10,000-record room: joins, messages, and custom payloads
// of message, signal and control kinds that all need schema validation.
var benchRoom = sync.OnceValue(func() []*adp.Record {
	w := adptest.NewWorld(&testing.T{}, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom(func(p *adp.RoomCreate) { p.EndTime = w.Now.Add(48 * time.Hour).UnixMilli() },
		withTypes(`{"use":"adp:reactions/1.0"}`, `{"use":"adp:deliberation/1.0"}`, reviewFinding))
	for _, n := range []string{"alice", "bob", "carol"} {
		w.Join(n, adp.RoleSpeaker)
	}
	speakers := []string{"alice", "bob", "carol", "creator"}
	var last *adp.Record
	for i := 0; len(w.Records) < 10_000; i++ {
		who := speakers[i%len(speakers)]
		var rec *adp.Record
		var err error
		switch i % 4 {
		case 0:
			rec, err = w.Say(who, "Point "+strconv.Itoa(i)+": the retry loop can starve the writer queue under sustained load.")
		case 1:
			rec, err = reaction(w, who, last)
		case 2:
			rec, err = w.Submit(custom(w, who, "review.finding", `{"severity":"medium","summary":"Finding `+strconv.Itoa(i)+`"}`))
		case 3:
			rec, err = w.Submit(custom(w, who, "poll.create", `{"poll_id":"p`+strconv.Itoa(i)+`","question":"Ship it?","options":[{"id":"y","label":"Yes"},{"id":"n","label":"No"}]}`))
		}
		if err != nil {
			panic(err)
		}
		if i%4 == 0 {
			last = rec
		}
	}
	return w.Records
})

// BenchmarkReplay10k replays a 10,000-record room with schema validation;
// signatures were verified when the records were built (Envelope remembers
// that), as an archive verifier's worker pool would have done.
func BenchmarkReplay10k(b *testing.B) {
	replay(b, benchRoom())
}

// BenchmarkCheckLargePayload checks a message.create whose payload (about
// 40 KiB of markdown) is large enough that the §21 limit is measured on its
// canonical form. Room.Check takes that form from the envelope's canonical
// event instead of canonicalizing the payload a second time.
func BenchmarkCheckLargePayload(b *testing.B) {
	w := adptest.NewWorld(b, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	text := strings.Repeat("A line of *markdown* with \"quotes\", a tab\tand é. ", 800)
	env, err := adp.NewMessage(w.Ctx, w.Author("creator"), w.Base(adp.TypeMessageCreate), adp.Message{ContentType: "text/markdown", Content: adp.TextContent(text)})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Room.Check(w.Ctx, env, w.Now); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(env.Event().Payload)))
	for b.Loop() {
		if err := w.Room.Check(w.Ctx, env, w.Now); err != nil {
			b.Fatal(err)
		}
	}
}

// builtinRoom is a 10,000-record room of built-in payloads only: joins,
// then messages, every second one referencing the one before it.
var builtinRoom = sync.OnceValue(func() []*adp.Record {
	w := adptest.NewWorld(&testing.T{}, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom(func(p *adp.RoomCreate) { p.EndTime = w.Now.Add(48 * time.Hour).UnixMilli() })
	for _, n := range []string{"alice", "bob", "carol"} {
		w.Join(n, adp.RoleSpeaker)
	}
	speakers := []string{"alice", "bob", "carol", "creator"}
	var last *adp.Record
	for i := 0; len(w.Records) < 10_000; i++ {
		who := speakers[i%len(speakers)]
		m := adp.Message{ContentType: "text/plain", Content: adp.TextContent("Point " + strconv.Itoa(i) + ": the retry loop can starve the writer queue under sustained load.")}
		if i%2 == 1 {
			m.References = []envelope.Hash{last.Envelope.Hash()}
		}
		rec, err := w.Submit(adp.NewMessage(w.Ctx, w.Author(who), w.Base(adp.TypeMessageCreate), m))
		if err != nil {
			panic(err)
		}
		last = rec
	}
	return w.Records
})

// BenchmarkReplayBuiltin10k replays builtinRoom: every payload goes
// through the kernel schema and the typed decoding, none through a
// room-defined type's schema.
func BenchmarkReplayBuiltin10k(b *testing.B) {
	replay(b, builtinRoom())
}

// replay applies recs to a new room per iteration and reports records/s.
func replay(b *testing.B, recs []*adp.Record) {
	ctx := b.Context()
	for b.Loop() {
		room := adp.NewRoom(recs[0].RoomID, nil)
		for _, rec := range recs {
			if err := room.Apply(ctx, rec); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(recs)*b.N)/b.Elapsed().Seconds(), "records/s")
}

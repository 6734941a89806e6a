package connector

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
)

// TestTimelineItemOfSignedRecords: timelineItem, which reads a verified
// record's mentions and message payload as the text they hold, shows
// what a full parse of the event and payload (the reference below)
// shows, for messages with and without mentions, references and text
// content, and for other types.
func TestTimelineItemOfSignedRecords(t *testing.T) {
	bob, carol := testKey(t, "bob"), testKey(t, "carol")
	h1, h2 := envelope.Sum([]byte("a")), envelope.Sum([]byte("b"))
	quote := func(s string) string { b, _ := jsontext.AppendQuote(nil, s); return string(b) }
	mentions := quote(bob.AgentID().String()) + "," + quote(carol.AgentID().String())
	long := strings.Repeat("é<&>\u2028", 100)
	for _, c := range []struct {
		typ, payload, mentions string
	}{
		{adp.TypeMessageCreate, `{"content_type":"text/plain","content":"hello"}`, ""},
		{adp.TypeMessageCreate, `{"content_type":"text/plain","content":` + quote(long) + `,"references":["` + h1.String() + `","` + h2.String() + `"]}`, mentions},
		{adp.TypeMessageCreate, `{"content_type":"application/json","content":{"a":[1,2]},"references":[],"extra":{"x":1}}`, mentions},
		{adp.TypeMessageCreate, `{"content":"no type"}`, "[]"},
		{adp.TypeRoomUpdate, `{"topic":"t"}`, mentions},
		{adp.TypeRoomUpdate, `{"topic":"t"}`, "[]"},
		{"poll.create", `{"question":"q?"}`, ""},
	} {
		ext := envelope.Fields{
			{Name: adp.FieldRoomID, Value: jsontext.Value(`"r1"`)},
			{Name: adp.FieldBaseSeq, Value: jsontext.Value(`3`)},
			{Name: adp.FieldBaseHash, Value: jsontext.Value(quote(h1.String()))},
		}
		if c.mentions != "" {
			m := c.mentions
			if m != "[]" {
				m = "[" + m + "]"
			}
			ext = append(ext, envelope.Field{Name: adp.FieldMentions, Value: jsontext.Value(m)})
		}
		rec := signedRecord(t, c.typ, c.payload, ext)
		e := &Engine{}
		got, want := e.timelineItem(rec, nil, true), timelineItemReference(rec, true)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s:\n got %+v\nwant %+v", c.typ, c.payload, got, want)
		}
	}
}

// signedRecord is record 4 of room r1, an event of alice's.
func signedRecord(t testing.TB, typ, payload string, ext envelope.Fields) *adp.Record {
	alice := testKey(t, "alice")
	env, err := envelope.Sign(context.Background(), alice.k, envelope.Event{Protocol: adp.Protocol, Type: typ, Actor: alice.AgentID(),
		CreatedAt: 1_700_000_000_000, Nonce: 7, Payload: jsontext.Value(payload), Ext: ext})
	if err != nil {
		t.Fatal(err)
	}
	return &adp.Record{RoomID: "r1", Seq: 4, ReceivedAt: 1_700_000_000_001, Envelope: env}
}

// BenchmarkTimelineItem compares timelineItem with the full parse it
// replaced, on the message a room_send_message call sends.
func BenchmarkTimelineItem(b *testing.B) {
	h := envelope.Sum([]byte("a")).String()
	rec := signedRecord(b, adp.TypeMessageCreate, `{"content":"benchmark message","content_type":"text/plain"}`, envelope.Fields{
		{Name: adp.FieldRoomID, Value: jsontext.Value(`"r1"`)},
		{Name: adp.FieldBaseSeq, Value: jsontext.Value(`3`)},
		{Name: adp.FieldBaseHash, Value: jsontext.Value(`"` + h + `"`)},
	})
	e := &Engine{}
	b.Run("timelineItem", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = e.timelineItem(rec, nil, false)
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = timelineItemReference(rec, false)
		}
	})
}

// timelineItemReference is timelineItem parsing the event (adp.ParseEvent)
// and the payload (adp.Message) in full.
func timelineItemReference(rec *adp.Record, withRecord bool) TimelineItem {
	ev := rec.Envelope.Event()
	it := TimelineItem{RoomID: rec.RoomID, Seq: rec.Seq, EventID: rec.Envelope.Hash().String(), Type: ev.Type,
		Actor: ev.Actor.String(), CreatedAt: ev.CreatedAt, ReceivedAt: rec.ReceivedAt, Payload: ev.Payload}
	if c := adp.BuiltinCategory(ev.Type); c != "" {
		it.Kind = string(c)
	}
	if pe, err := adp.ParseEvent(rec.Envelope); err == nil {
		for _, m := range pe.Mentions {
			it.Mentions = append(it.Mentions, m.String())
		}
	}
	it.Summary = ev.Type
	if ev.Type == adp.TypeMessageCreate {
		var m adp.Message
		if json.Unmarshal(ev.Payload, &m, json.RejectUnknownMembers(false)) == nil {
			it.ContentType, it.Content = m.ContentType, m.Content
			it.References = []string{}
			for _, r := range m.References {
				it.References = append(it.References, r.String())
			}
			if it.Mentions == nil {
				it.Mentions = []string{}
			}
			var s string
			if json.Unmarshal(m.Content, &s) == nil {
				it.Summary = summarize(s)
			}
		}
	}
	if withRecord {
		it.Record = rec.AppendJSON(nil)
	}
	return it
}

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
	alice, bob, carol := testKey(t, "alice"), testKey(t, "bob"), testKey(t, "carol")
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
		env, err := envelope.Sign(context.Background(), alice.k, envelope.Event{Protocol: adp.Protocol, Type: c.typ, Actor: alice.AgentID(),
			CreatedAt: 1_700_000_000_000, Nonce: 7, Payload: jsontext.Value(c.payload), Ext: ext})
		if err != nil {
			t.Fatal(err)
		}
		rec := &adp.Record{RoomID: "r1", Seq: 4, ReceivedAt: 1_700_000_000_001, Envelope: env}
		e := &Engine{}
		got, want := e.timelineItem(rec, nil, true), timelineItemReference(rec)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s:\n got %+v\nwant %+v", c.typ, c.payload, got, want)
		}
	}
}

// timelineItemReference is timelineItem parsing the event (adp.ParseEvent)
// and the payload (adp.Message) in full.
func timelineItemReference(rec *adp.Record) TimelineItem {
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
	it.Record = rec.AppendJSON(nil)
	return it
}

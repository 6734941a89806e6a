package adp_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// blobType declares a message type whose max_payload_hint is hint.
func blobType(hint int) func(*adp.RoomCreate) {
	return withTypes(`{"type":"blob.put","kind":"message","title":"Blob","max_payload_hint":` +
		jsonInt(hint) + `,"schema":{"type":"object"}}`)
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// blob writes a blob.put whose canonical payload is exactly n bytes.
func blob(w *adptest.World, n int) (*adp.Record, error) {
	const frame = len(`{"data":""}`)
	return w.Submit(custom(w, "creator", "blob.put", `{"data":"`+strings.Repeat("x", n-frame)+`"}`))
}

// TestPayloadHintWithinHostLimits pins §21: a type's max_payload_hint
// adjusts the payload limit within the host's ceiling and never past it.
// On main a hint replaced the host's configured limit outright, so a host
// limiting payloads to 16 KiB accepted 20 KiB for a type hinting 100 KB,
// and the ceiling was a constant no host could set.
func TestPayloadHintWithinHostLimits(t *testing.T) {
	const kib = 1 << 10
	cases := []struct {
		name string
		opts *adp.RoomOptions
		hint int // 0: the type has no hint
		size int
		ok   bool
	}{
		// The SDK host's defaults: 64 KiB, hints up to 256 KiB.
		{"default limit", nil, 0, 64 * kib, true},
		{"default limit exceeded", nil, 0, 64*kib + 1, false},
		{"a hint raises the default within the default ceiling", nil, 200_000, 200_000, true},
		{"a hint raises the default only to itself", nil, 200_000, 200_001, false},
		{"a hint above the default ceiling stops at it", nil, 1 << 20, 256 * kib, true},
		{"a hint above the default ceiling allows nothing past it", nil, 1 << 20, 256*kib + 1, false},
		{"a hint below the default lowers it", nil, 1000, 1001, false},
		{"a hint below the default allows up to itself", nil, 1000, 1000, true},
		// A host that set its own limit and nothing for hints.
		{"a hint never raises a host's own limit", &adp.RoomOptions{MaxPayloadBytes: 16 * kib}, 100_000, 20 * kib, false},
		{"a host's own limit holds for hinted types", &adp.RoomOptions{MaxPayloadBytes: 16 * kib}, 100_000, 16 * kib, true},
		{"a hint below a host's limit lowers it", &adp.RoomOptions{MaxPayloadBytes: 16 * kib}, 1000, 1001, false},
		{"a host's larger limit", &adp.RoomOptions{MaxPayloadBytes: 512 * kib}, 0, 300 * kib, true},
		{"a hint below a host's larger limit lowers it", &adp.RoomOptions{MaxPayloadBytes: 512 * kib}, 100_000, 100_001, false},
		// A host's own hinted ceiling.
		{"a host's hinted ceiling caps hints", &adp.RoomOptions{MaxHintedPayloadBytes: 128 * kib}, 200_000, 128*kib + 1, false},
		{"a host's hinted ceiling allows up to itself", &adp.RoomOptions{MaxHintedPayloadBytes: 128 * kib}, 200_000, 128 * kib, true},
		{"a host's hinted ceiling leaves unhinted types at the limit", &adp.RoomOptions{MaxHintedPayloadBytes: 128 * kib}, 0, 64*kib + 1, false},
		{"a hinted ceiling above the default", &adp.RoomOptions{MaxHintedPayloadBytes: 1 << 20}, 1 << 20, 900 * kib, true},
		{"a hinted ceiling below the limit is raised to it", &adp.RoomOptions{MaxPayloadBytes: 32 * kib, MaxHintedPayloadBytes: 8 * kib}, 1 << 20, 32 * kib, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", c.opts)
			if c.hint > 0 {
				w.PublicRoom(blobType(c.hint))
			} else {
				w.PublicRoom(withTypes(`{"type":"blob.put","kind":"message","title":"Blob","schema":{"type":"object"}}`))
			}
			_, err := blob(w, c.size)
			switch {
			case c.ok && err != nil:
				t.Fatalf("%d bytes rejected: %v", c.size, err)
			case !c.ok && !errors.Is(err, adp.ErrPayloadTooLarge):
				t.Fatalf("%d bytes: got %v, want payload_too_large", c.size, err)
			}
		})
	}
}

// TestPayloadLimitBuiltins: built-in types have no hint and answer to the
// host's own limit.
func TestPayloadLimitBuiltins(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", &adp.RoomOptions{MaxPayloadBytes: 1000, MaxHintedPayloadBytes: 1 << 20})
	w.PublicRoom()
	msg := func(n int) (*adp.Record, error) {
		return w.Submit(adp.NewMessage(w.Ctx, w.Author("creator"), w.Base(adp.TypeMessageCreate),
			adp.Message{ContentType: "text/plain", Content: adp.TextContent(strings.Repeat("y", n))}))
	}
	if _, err := msg(900); err != nil {
		t.Fatal(err)
	}
	if _, err := msg(1000); !errors.Is(err, adp.ErrPayloadTooLarge) {
		t.Fatalf("got %v, want payload_too_large", err)
	}
}

// mentionsField is a raw mentions member naming ids.
func mentionsField(ids ...identity.AgentID) envelope.Field {
	list := []byte{'['}
	for i, id := range ids {
		if i > 0 {
			list = append(list, ',')
		}
		list = append(id.AppendText(append(list, '"')), '"')
	}
	return envelope.Field{Name: "mentions", Value: jsontext.Value(append(list, ']'))}
}

// TestMentionsUnique pins the seed-era schema's uniqueItems on mentions:
// a repeat is invalid_event on the host path and in replay, and the
// builders refuse to sign one. On main repeats were tolerated.
func TestMentionsUnique(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.Track = true
	w.PublicRoom()
	msg := `{"content_type":"text/plain","content":"x"}`
	_, err := w.Submit(raw(w, "creator", "message.create", ptr(w.Base("message.create")), msg,
		mentionsField(w.ID("alice"), w.ID("bob"), w.ID("alice"))))
	if !errors.Is(err, adp.ErrInvalidEvent) {
		t.Fatalf("repeated mention: got %v, want invalid_event", err)
	}
	if after, _ := w.Room.Snapshot(); string(after) != string(w.Before) {
		t.Fatal("a rejected write changed the room")
	}
	// The same event is refused by ParseEvent, which replay runs too.
	env, err := raw(w, "creator", "message.create", ptr(w.Base("message.create")), msg,
		mentionsField(w.ID("bob"), w.ID("bob")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adp.ParseEvent(env); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Fatalf("ParseEvent: got %v, want invalid_event", err)
	}
	// Distinct mentions are fine.
	if _, err := w.Submit(raw(w, "creator", "message.create", ptr(w.Base("message.create")), msg,
		mentionsField(w.ID("alice"), w.ID("bob")))); err != nil {
		t.Fatal(err)
	}
	// The builders never sign a repeat.
	if _, err := adp.NewMessage(w.Ctx, w.Author("creator"), w.Base("message.create"),
		adp.Message{ContentType: "text/plain", Content: adp.TextContent("x")}, w.ID("alice"), w.ID("alice")); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Fatalf("builder: got %v, want invalid_event", err)
	}
}

// TestCustomPayloadMustBeObject pins the kernel schema's customEvent rule:
// a room-defined type's payload is a JSON object even when the type's own
// schema accepts other values. It is invalid_event (event structure, §20),
// not payload_schema_violation (the type's schema, §13.6 step 4). On main
// a type whose schema accepts anything let arrays, strings and numbers in.
func TestCustomPayloadMustBeObject(t *testing.T) {
	anything := withTypes(`{"type":"any.value","kind":"signal","title":"Anything","schema":{}}`,
		`{"type":"list.value","kind":"signal","title":"List","schema":{"type":"array"}}`)
	for _, c := range []struct{ typ, payload string }{
		{"any.value", `[1,2]`}, {"any.value", `"text"`}, {"any.value", `42`}, {"any.value", `null`},
		{"any.value", `true`}, {"list.value", `[]`},
	} {
		t.Run(c.typ+" "+c.payload, func(t *testing.T) {
			w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
			w.Track = true
			w.PublicRoom(anything)
			_, err := w.Submit(custom(w, "creator", c.typ, c.payload))
			if !errors.Is(err, adp.ErrInvalidEvent) {
				t.Fatalf("got %v, want invalid_event", err)
			}
			if after, _ := w.Room.Snapshot(); string(after) != string(w.Before) {
				t.Fatal("a rejected write changed the room")
			}
			// The builder refuses to sign it.
			_, err = adp.NewCustom(w.Ctx, w.Author("creator"), w.Base(c.typ), w.Room.Registry(), c.typ, jsontext.Value(c.payload))
			if !errors.Is(err, adp.ErrInvalidEvent) {
				t.Fatalf("NewCustom: got %v, want invalid_event", err)
			}
		})
	}
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom(anything)
	if _, err := w.Submit(custom(w, "creator", "any.value", `{"k":[1]}`)); err != nil {
		t.Fatalf("an object: %v", err)
	}
}

// TestLatestPreHashNull pins §15/§16: the latest record's pre_hash is JSON
// null at seq 1. On main adp.Latest marshalled a zero hash there.
func TestLatestPreHashNull(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	first := w.PublicRoom()
	b, err := json.Marshal(w.Room.Latest())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq":1,"pre_hash":null,"hash":"` + first.Hash.String() + `","received_at":` + jsonInt(int(first.ReceivedAt)) + `}`
	if string(b) != want {
		t.Fatalf("seq 1:\n got %s\nwant %s", b, want)
	}
	second := w.OK(w.Say("creator", "x"))
	b, _ = json.Marshal(w.Room.Latest())
	if !strings.Contains(string(b), `"pre_hash":"`+first.Hash.String()+`"`) || !strings.Contains(string(b), `"seq":2`) {
		t.Fatalf("seq 2: %s", b)
	}
	var l adp.Latest
	if err := json.Unmarshal(b, &l); err != nil || l != w.Room.Latest() || l.Hash != second.Hash {
		t.Fatalf("round trip: %+v, %v", l, err)
	}
	for _, bad := range []string{
		`{"seq":1,"pre_hash":"` + first.Hash.String() + `","hash":"` + first.Hash.String() + `","received_at":1}`,
		`{"seq":2,"pre_hash":null,"hash":"` + first.Hash.String() + `","received_at":1}`,
		`{"seq":1,"hash":"` + first.Hash.String() + `","received_at":1}`,
		`{"seq":1,"pre_hash":null,"hash":"` + first.Hash.String() + `","received_at":1,"x":1}`,
		`{"seq":-1,"pre_hash":null,"hash":"` + first.Hash.String() + `","received_at":1}`,
	} {
		if err := json.Unmarshal([]byte(bad), &l); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	// Snapshots carry the same form and restore.
	snap, err := w.Room.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r, err := adp.RestoreRoom(snap, nil)
	if err != nil || r.Latest() != w.Room.Latest() {
		t.Fatalf("restore: %v", err)
	}
}

// TestRegistryIsACopy: the log is the only way to change a room's types
// (§13). Room.Registry must not hand
// out the live registry. On main a Declare on the returned registry
// defined a type in the room outside its log.
func TestRegistryIsACopy(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	reg := w.Room.Registry()
	d, err := packs.ParseDeclaration([]byte(`{"use":"adp:reactions/1.0"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Declare(context.Background(), 99, d); err != nil {
		t.Fatal(err)
	}
	if reg.Lookup("reaction.create") == nil {
		t.Fatal("the copy did not take the declaration")
	}
	if w.Room.Registry().Lookup("reaction.create") != nil {
		t.Fatal("a Declare on the returned registry changed the room's types")
	}
	if _, err := w.Room.BaseFor("reaction.create"); !errors.Is(err, adp.ErrTypeNotDefined) {
		t.Fatalf("BaseFor sees the outside declaration: %v", err)
	}
	if _, err := w.Submit(raw(w, "creator", "reaction.create", ptr(w.Base("message.create")),
		`{"event_id":"`+w.Records[0].Envelope.Hash().String()+`","reaction":"agree"}`)); !errors.Is(err, adp.ErrTypeNotDefined) {
		t.Fatalf("the room accepted a type defined outside its log: %v", err)
	}
	// And the copy does not follow later writes to the room.
	old := w.Room.Registry()
	w.OK(define(w, "creator", `{"use":"adp:reactions/1.0"}`))
	if old.Lookup("reaction.create") != nil || w.Room.Registry().Lookup("reaction.create") == nil {
		t.Fatal("the copy followed the room, or the room lost its own declaration")
	}
}

package adp_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

func TestRecordJSON(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	rec, _ := w.Say("creator", "hello")
	b := rec.AppendJSON(nil)
	if v := jsontext.Value(bytes.Clone(b)); v.Canonicalize() != nil || !bytes.Equal(v, b) {
		t.Fatal("AppendJSON is not canonical")
	}
	back, err := adp.ParseRecord(b)
	if err != nil || back.Hash != rec.Hash || back.CheckHash() != nil || back.Seq != 2 || back.PreHash != w.Records[0].Hash {
		t.Fatalf("round trip: %v", err)
	}
	// Unknown members are kept and merged in canonical order.
	withExtra := strings.Replace(string(b), `{"envelope"`, `{"zz":{"b":1, "a":2},"accepted_by":"host","envelope"`, 1)
	x, err := adp.ParseRecord([]byte(withExtra))
	if err != nil || len(x.Extra) != 2 {
		t.Fatalf("extra members: %v", err)
	}
	out := string(x.AppendJSON(nil))
	if !strings.HasPrefix(out, `{"accepted_by":"host","envelope"`) || !strings.HasSuffix(out, `,"zz":{"a":2,"b":1}}`) {
		t.Fatalf("extra members not canonical: %s", out)
	}
}

func TestParseRecordRejects(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	first := string(w.Records[0].AppendJSON(nil))
	rec, _ := w.Say("creator", "hello")
	second := string(rec.AppendJSON(nil))
	cases := map[string]string{
		"§15 pre_hash must be null at seq 1":      strings.Replace(first, `"pre_hash":null`, `"pre_hash":"`+rec.Hash.String()+`"`, 1),
		"§15 pre_hash must not be null after 1":   strings.Replace(second, `"pre_hash":"`+w.Records[0].Hash.String()+`"`, `"pre_hash":null`, 1),
		"§15 seq starts at 1":                     strings.Replace(first, `"seq":1}`, `"seq":0}`, 1),
		"§15 received_at is a timestamp":          strings.Replace(first, `"received_at":`, `"received_at":-`, 1),
		"§15 every member is required":            strings.Replace(first, `,"hash":"`+w.Records[0].Hash.String()+`"`, ``, 1),
		"§15 hash must be canonical base64url":    strings.Replace(first, `"hash":"`+w.Records[0].Hash.String(), `"hash":"`+w.Records[0].Hash.String()[:42]+"=", 1),
		"strict JSON: duplicate member":           strings.Replace(first, `{"envelope"`, `{"seq":1,"envelope"`, 1),
		"strict JSON: trailing data":              first + `{}`,
		"strict JSON: unsafe integer in an extra": strings.Replace(first, `{"envelope"`, `{"x":9007199254740992,"envelope"`, 1),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := adp.ParseRecord([]byte(in)); !errors.Is(err, adp.ErrInvalidRecord) {
				t.Fatalf("got %v", err)
			}
		})
	}
	// A record whose envelope is malformed carries the envelope's code.
	bad := strings.Replace(first, `"type":"room.create"`, `"type":"room.create","audience":"x"`, 1)
	if _, err := adp.ParseRecord([]byte(bad)); !errors.Is(err, adp.ErrInvalidEvent) {
		t.Fatalf("closed event inside a record: %v", err)
	}
}

// FuzzParseRecord: ParseRecord never panics, and whatever it accepts
// re-marshals to a record that parses to the same fields and canonical form.
func FuzzParseRecord(f *testing.F) {
	w := adptest.NewWorld(f, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	w.Say("creator", "hello")
	for _, rec := range w.Records {
		f.Add(rec.AppendJSON(nil))
	}
	f.Add([]byte(`{"room_id":"r","seq":1,"pre_hash":null,"hash":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","received_at":0,"envelope":{},"x":[1]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := adp.ParseRecord(b)
		// The one-pass parse (envelope read where it stands) and the
		// plain one (split, then each member) agree on every input: the
		// same verdict, code and message, and the same record.
		plain, perr := adp.ParseRecordPlain(b)
		if (err == nil) != (perr == nil) || err != nil && err.Error() != perr.Error() {
			t.Fatalf("one pass: %v; plain: %v", err, perr)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(rec.AppendJSON(nil), plain.AppendJSON(nil)) || rec.Envelope.Hash() != plain.Envelope.Hash() {
			t.Fatal("one pass and plain parse differ")
		}
		// Splitting the object must not make the parser laxer than the
		// strict validator on the whole text.
		if err := strictjson.Validate(b); err != nil {
			t.Fatalf("accepted a record the strict validator refuses: %v", err)
		}
		out := rec.AppendJSON(nil)
		again, err := adp.ParseRecord(out)
		if err != nil {
			t.Fatalf("re-marshalled record rejected: %v", err)
		}
		if again.Hash != rec.Hash || again.Seq != rec.Seq || again.ComputeHash() != rec.ComputeHash() || !bytes.Equal(again.AppendJSON(nil), out) {
			t.Fatal("re-marshalling changed the record")
		}
		// CanonicalInput claims only what is true (the input is
		// AppendJSON's output), agrees between the two parses, and
		// recognizes AppendJSON's output of a record whose event the
		// canonical check recognizes.
		if c := rec.CanonicalInput(); c != nil && !bytes.Equal(c, out) {
			t.Fatalf("CanonicalInput %q, AppendJSON writes %q", c, out)
		}
		// A hash taken from the parsed text is the hash of the fields.
		if rec.ComputeHash() != adp.ComputeHashEncoded(rec) || plain.ComputeHash() != adp.ComputeHashEncoded(plain) {
			t.Fatal("ComputeHash from the parsed text differs from the fields' hash")
		}
		if !bytes.Equal(rec.CanonicalInput(), plain.CanonicalInput()) {
			t.Fatalf("CanonicalInput: one pass %q, plain %q", rec.CanonicalInput(), plain.CanonicalInput())
		}
		if len(rec.Extra) == 0 && strictjson.IsCanonical(rec.Envelope.Canonical()) && !bytes.Equal(again.CanonicalInput(), out) {
			t.Fatalf("AppendJSON's own output %q is not its CanonicalInput", out)
		}
	})
}

// TestCanonicalInput: a record as the SDK writes it is recognized as
// canonical, and every departure from that form is not, while it still
// parses to the same record.
func TestCanonicalInput(t *testing.T) {
	w := adptest.NewWorld(t, "d8ftedhpqhsusbg001tg", nil)
	w.PublicRoom()
	w.Say("creator", "hello")
	for _, r := range w.Records {
		out := r.AppendJSON(nil)
		rec, err := adp.ParseRecord(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rec.CanonicalInput(), out) || !rec.Envelope.ParsedCanonical() {
			t.Fatalf("seq %d: the SDK's own record is not its CanonicalInput", r.Seq)
		}
		if r.CanonicalInput() != nil && r.Seq > 1 {
			t.Fatal("a built record claims parsed bytes")
		}
		// A copy with a field changed no longer stands for the text.
		for name, change := range map[string]func(*adp.Record){
			"seq":         func(c *adp.Record) { c.Seq += 2 },
			"pre_hash":    func(c *adp.Record) { c.PreHash[0] ^= 1 },
			"received_at": func(c *adp.Record) { c.ReceivedAt++ },
			"room_id":     func(c *adp.Record) { c.RoomID = "x" },
			"hash":        func(c *adp.Record) { c.Hash[0] ^= 1 },
			"envelope":    func(c *adp.Record) { c.Envelope = w.Records[0].Envelope },
		} {
			c := *rec
			change(&c)
			if c.Envelope == rec.Envelope && name == "envelope" {
				continue // seq 1 is that envelope
			}
			if c.CanonicalInput() != nil {
				t.Errorf("seq %d: a copy with %s changed still claims the parsed text", r.Seq, name)
			}
			if c.ComputeHash() != adp.ComputeHashEncoded(&c) {
				t.Errorf("seq %d: a copy with %s changed hashes the parsed text", r.Seq, name)
			}
		}
		variants := map[string][]byte{
			"leading space":     append([]byte(" "), out...),
			"trailing space":    append(bytes.Clone(out), ' '),
			"space in envelope": bytes.Replace(out, []byte(`{"envelope":{"event":`), []byte(`{"envelope":{ "event":`), 1),
			"escaped name":      bytes.Replace(out, []byte(`"seq":`), []byte(`"s\u0065q":`), 1),
			"escaped hash":      escapeHash(out),
			"reordered":         reorder(t, out),
			"extra member":      append(bytes.Clone(out[:len(out)-1]), `,"x":1}`...),
		}
		for name, v := range variants {
			got, err := adp.ParseRecord(v)
			if err != nil {
				t.Fatalf("seq %d %s: %v", r.Seq, name, err)
			}
			if got.CanonicalInput() != nil {
				t.Errorf("seq %d %s: claimed canonical", r.Seq, name)
			}
			if got.Hash != r.Hash || got.Envelope.Hash() != r.Envelope.Hash() {
				t.Errorf("seq %d %s: a different record", r.Seq, name)
			}
		}
	}
}

// escapeHash spells the record hash's first character as a \u escape.
func escapeHash(out []byte) []byte {
	i := bytes.LastIndex(out, []byte(`,"hash":"`)) + len(`,"hash":"`)
	return append(append(append([]byte{}, out[:i]...), fmt.Sprintf(`\u%04x`, out[i])...), out[i+1:]...)
}

// reorder moves a record's seq member to the front.
func reorder(t *testing.T, out []byte) []byte {
	i := bytes.LastIndex(out, []byte(`,"seq":`))
	if i < 0 {
		t.Fatal("no seq")
	}
	b := append([]byte(`{`), out[i+1:len(out)-1]...)
	b = append(append(b, ','), out[1:i]...)
	return append(b, '}')
}

package adp_test

import (
	"bytes"
	"errors"
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
	})
}

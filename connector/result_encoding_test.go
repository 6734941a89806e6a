package connector

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// FuzzResultEncoding: every tool's result type, filled from the input
// (strings with markup, U+2028 and invalid UTF-8; raw members of any
// valid JSON, whitespace and escapes included; nil and empty slices and
// pointers), encodes to the same bytes with resultEncoding as with
// encoding/json, the encoder Tool.Call used before.
func FuzzResultEncoding(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, "benchmark message", []byte(`{"content":"x","content_type":"text/plain"}`))
	f.Add([]byte{255, 254, 1, 0, 7, 9}, "<b>&amp;</b>\u2028\u2029\x00\x1f\x7f", []byte(` { "a" : [ 1 , 2.5e3 , -0.0, 1E+2 ] , "b" : "\u0041\/<&>\u2028" } `))
	f.Add([]byte{1, 1, 1, 1}, "\xff\xfe invalid", []byte(`"\ud83d\ude00 é"`))
	f.Add([]byte{}, "", []byte(`null`))
	f.Fuzz(func(t *testing.T, choices []byte, s string, raw []byte) {
		fill := &resultFiller{choices: choices, s: s, raw: raw}
		if !jsontext.Value(raw).IsValid() {
			fill.raw = nil
		}
		for _, spec := range toolSpecs() {
			v := reflect.New(spec.bind.out)
			fill.value(v.Elem(), 0)
			want, err := json.Marshal(v.Interface())
			if err != nil {
				t.Fatalf("%v: encoding/json: %v", spec.bind.out, err)
			}
			got, err := encodeResult(v.Interface())
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%v:\n got %s (%v)\nwant %s", spec.bind.out, got, err, want)
			}
		}
	})
}

// resultFiller fills a result value: choices decide nil or not, lengths
// and numbers; s and raw give the strings and the raw JSON members.
type resultFiller struct {
	choices []byte
	n       int
	s       string
	raw     []byte
}

func (f *resultFiller) next() byte {
	if len(f.choices) == 0 {
		return 0
	}
	c := f.choices[f.n%len(f.choices)]
	f.n++
	return c
}

var rawValueT = reflect.TypeFor[jsontext.Value]()

func (f *resultFiller) value(v reflect.Value, depth int) {
	c := f.next()
	switch {
	case v.Type() == rawValueT:
		switch c % 4 {
		case 0: // nil
		case 1:
			v.SetBytes(bytes.Clone(f.raw))
		case 2:
			v.SetBytes([]byte(`{"a":"<&>"}`))
		case 3:
			if f.raw != nil {
				v.SetBytes(bytes.Clone(f.raw))
			} else {
				v.SetBytes([]byte(`[]`))
			}
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		switch c % 3 {
		case 0:
			v.SetString(f.s)
		case 1:
			v.SetString("")
		case 2:
			v.SetString(f.s + "<&>\u2028")
		}
	case reflect.Bool:
		v.SetBool(c%2 == 1)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(int8(c)) * int64(c) * 1_000_003)
	case reflect.Pointer:
		if c%3 != 0 && depth < 4 {
			v.Set(reflect.New(v.Type().Elem()))
			f.value(v.Elem(), depth+1)
		}
	case reflect.Slice:
		switch n := int(c % 4); {
		case n == 0: // nil
		case depth >= 4:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			s := reflect.MakeSlice(v.Type(), n-1, n-1)
			for i := range n - 1 {
				f.value(s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.value(v.Field(i), depth+1)
			}
		}
	default:
		panic("resultFiller: no case for " + v.Type().String())
	}
}

// BenchmarkResultEncoding compares Tool.Call's encoding of a sent
// message's result with encoding/json's.
func BenchmarkResultEncoding(b *testing.B) {
	const payload = `{"content":"benchmark message","content_type":"text/plain"}`
	record := `{"envelope":{"event":{"actor":"did:agent:1UIH2hlJd9z0atv-wrwudbUtWopCGE_t_cAAJPDj6No","base_hash":"lR_RbU-UtMStjUyRCHyMVwdCjdvREHTIn0WM1Jpn7I0","base_seq":1,"created_at":1796469767767,"nonce":1796469767767,"payload":` + payload + `,"protocol":"agent-discourse/1.0","room_id":"tdrbvqvkkpgl7hah2i9g","type":"message.create"},"hash":"3dE8rwYhlzVEG6c35Nh0zr_oG3sm56G3YiMA7s504EA","signature":"ItNEBZFHCb-orsHt9-A4vP_yW7wIbvwpxAToGdKrhuj5YFBhgI8PF9_Xf4hX1JdNcUANMaJyHVV4KDDoEh5-CA"},"hash":"MAu-6t5O1L0-RBGAgsXFRLCO0xmMtK5LIzjjy4uajfU","pre_hash":"lR_RbU-UtMStjUyRCHyMVwdCjdvREHTIn0WM1Jpn7I0","received_at":1796469767768,"room_id":"tdrbvqvkkpgl7hah2i9g","seq":2}`
	res := &WriteResult{Status: StatusSent, Record: jsontext.Value(record),
		Item: &TimelineItem{RoomID: "tdrbvqvkkpgl7hah2i9g", Seq: 2, EventID: "3dE8rwYhlzVEG6c35Nh0zr_oG3sm56G3YiMA7s504EA", Type: "message.create", Kind: "message",
			Actor: "did:agent:1UIH2hlJd9z0atv-wrwudbUtWopCGE_t_cAAJPDj6No", CreatedAt: 1796469767767, ReceivedAt: 1796469767768, Summary: "benchmark message",
			ContentType: "text/plain", Content: jsontext.Value(`"benchmark message"`), Mentions: []string{}, References: []string{}, Payload: jsontext.Value(payload)},
		Sync: SyncState{Host: "http://127.0.0.1:34841", RoomID: "tdrbvqvkkpgl7hah2i9g", HeadSeq: 2, HeadHash: "MAu-6t5O1L0-RBGAgsXFRLCO0xmMtK5LIzjjy4uajfU"}}
	b.Run("encodeResult", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeResult(res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(res); err != nil {
				b.Fatal(err)
			}
		}
	})
}

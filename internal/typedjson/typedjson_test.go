package typedjson

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// record parses b with jsontext (duplicate names refused, as the strict
// parser does) into a tape, the way packs' recorder does.
func record(b []byte, opaque []string) (*Tape, error) {
	t := new(Tape)
	t.Reset(b, opaque)
	d := jsontext.NewDecoder(bytes.NewReader(b))
	var walk func(name string) error
	walk = func(name string) error {
		if name != "" {
			t.Member(name)
		}
		at, opaque := t.Begin(byte(d.PeekKind()), int(d.InputOffset()))
		var val any
		switch {
		case opaque:
			if err := d.SkipValue(); err != nil {
				return err
			}
		case d.PeekKind() == '{' || d.PeekKind() == '[':
			open, err := d.ReadToken()
			if err != nil {
				return err
			}
			for d.PeekKind() != ']' && d.PeekKind() != '}' {
				member := ""
				if open.Kind() == '{' {
					tok, err := d.ReadToken()
					if err != nil {
						return err
					}
					member = tok.String()
				}
				t.Enter()
				err := walk(member)
				t.Leave()
				if err != nil {
					return err
				}
			}
			if _, err := d.ReadToken(); err != nil {
				return err
			}
		default:
			tok, err := d.ReadToken()
			if err != nil {
				return err
			}
			if tok.Kind() == '"' {
				val = tok.String()
			}
		}
		t.End(at, int(d.InputOffset()), val)
		return nil
	}
	if err := walk(""); err != nil {
		return nil, err
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return nil, errors.New("trailing data")
	}
	return t, nil
}

type text string

func (x *text) UnmarshalText(b []byte) error {
	if bytes.Contains(b, []byte("bad")) {
		return errors.New("bad text")
	}
	*x = text("<" + string(b) + ">")
	return nil
}

type raw struct{ b []byte }

func (r *raw) UnmarshalJSON(b []byte) error {
	if string(b) == "0" {
		return errors.New("zero refused")
	}
	r.b = append([]byte(nil), b...)
	return nil
}

type inner struct {
	A int8    `json:"a"`
	B *string `json:"b,omitzero"`
}

type node struct {
	Name     string  `json:"name"`
	Children []*node `json:"children,omitempty"`
}

type embedded struct {
	inner
	C string `json:"c"`
}

type tagged struct {
	N int64 `json:"n,string"`
}

// all covers every kind the mapping interprets and some it hands to json
// v2 (floats, unsigned integers, arrays, byte slices, interfaces, time,
// embedded structs, tag options).
type all struct {
	S      string                `json:"s"`
	Bool   bool                  `json:"bool"`
	I      int                   `json:"i"`
	I16    int16                 `json:"i16"`
	P      *int64                `json:"p"`
	PP     **bool                `json:"pp"`
	Slice  []inner               `json:"slice"`
	Map    map[string]inner      `json:"map"`
	MapT   map[text]int          `json:"map_t"`
	Raw    jsontext.Value        `json:"raw"`
	Text   text                  `json:"text"`
	Texts  []text                `json:"texts"`
	Un     raw                   `json:"un"`
	PText  *text                 `json:"ptext"`
	PUn    *raw                  `json:"pun"`
	PRaw   *jsontext.Value       `json:"praw"`
	Tree   *node                 `json:"tree"`
	F      float64               `json:"f"`
	U      uint8                 `json:"u"`
	Arr    [2]int                `json:"arr"`
	Bytes  []byte                `json:"bytes"`
	Any    any                   `json:"any"`
	Time   time.Time             `json:"time"`
	Dur    time.Duration         `json:"dur"`
	Emb    embedded              `json:"emb"`
	Tag    tagged                `json:"tag"`
	Untag  string                //
	Skip   string                `json:"-"`
	hidden string                // ignored, as json v2 ignores it
	Nested map[string][]*inner   `json:"nested"`
	Ifaces map[string]any        `json:"ifaces"`
	Ptrs   []*map[string]*string `json:"ptrs"`
}

var decodeSeeds = []string{
	`{}`, `null`, `[]`, `1`, `"s"`,
	`{"s":"x","bool":true,"i":-0,"i16":-32768,"p":9007199254740991,"pp":false}`,
	`{"i16":32768}`, `{"i":1.0}`, `{"i":1e2}`, `{"i":-1}`, `{"i":"1"}`, `{"i":18446744073709551616}`, `{"i":-9223372036854775809}`,
	`{"s":null,"bool":null,"i":null,"p":null,"pp":null,"slice":null,"map":null,"raw":null,"text":null,"un":null,"tree":null}`,
	`{"slice":[],"map":{},"texts":[],"nested":{}}`,
	`{"slice":[{"a":1,"b":"x"},{"a":2},null],"map":{"k":{"a":3},"l":null}}`,
	`{"slice":[{"a":1,"z":2}]}`, `{"map":{"k":{"A":1}}}`, `{"S":"x"}`, `{"Untag":"u"}`, `{"untag":"u"}`, `{"Skip":"x"}`, `{"hidden":"x"}`,
	`{"map_t":{"a":1,"bad":2}}`, `{"raw":{ "a" : [1, 2] }}`, `{"raw":"\u00e9"}`,
	`{"text":"a\u00e9\n"}`, `{"text":"bad"}`, `{"text":1}`, `{"texts":["x",null,"y"]}`,
	`{"un":0}`, `{"un":[1, {}]}`, `{"un":null}`, `{"ptext":null,"pun":null,"praw":null}`, `{"ptext":"a","pun":[],"praw":{}}`,
	`{"ptext":"bad"}`, `{"pun":0}`, `{"ptext":1}`, `{"tree":{"name":"a","children":[{"name":"b","children":[]},null]}}`,
	`{"f":1e300,"u":255,"arr":[1,2],"bytes":"AAE=","any":{"x":[1,"y",null]},"time":"2026-12-01T00:00:00Z","dur":"1s"}`,
	`{"u":256}`, `{"arr":[1]}`, `{"bytes":"*"}`, `{"time":1}`,
	`{"emb":{"a":1,"c":"x"}}`, `{"emb":{"inner":{}}}`, `{"tag":{"n":"5"}}`, `{"tag":{"n":5}}`,
	`{"nested":{"a":[{"a":1},null]}}`, `{"ifaces":{"a":1.5,"b":[]}}`, `{"ptrs":[{"a":"x","b":null},null]}`,
	`{"s":1}`, `{"bool":"true"}`, `{"slice":{}}`, `{"map":[]}`, `{"tree":[]}`, `{"emb":[]}`,
}

// same fails unless Decode of b into a new T agrees with json.Unmarshal.
func same[T any](t *testing.T, b []byte) {
	t.Helper()
	tape, err := record(b, OpaqueMembers(reflect.TypeFor[T]()))
	if err != nil {
		return // not JSON the recorder accepts: nothing to map
	}
	got, want := new(T), new(T)
	if a, ok := any(got).(*all); ok {
		a.hidden = "" // the field is read here, so it is not unused
	}
	gerr := Decode(tape, got)
	werr := json.Unmarshal(b, want, json.RejectUnknownMembers(true))
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%T %q: Decode %v, json.Unmarshal %v", got, b, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%T %q:\nDecode        %#v\njson.Unmarshal %#v", got, b, got, want)
	}
	var ge *Error
	if gerr != nil && !errors.As(gerr, &ge) {
		t.Fatalf("%q: %T is not an *Error", b, gerr)
	}
}

func TestDecodeMatchesUnmarshal(t *testing.T) {
	for _, s := range decodeSeeds {
		same[all](t, []byte(s))
		same[inner](t, []byte(s))
		same[[]*inner](t, []byte(s))
	}
}

// TestErrorPointer checks that a failure names the value that failed.
func TestErrorPointer(t *testing.T) {
	tape, err := record([]byte(`{"slice":[{"a":1},{"a":"x"}],"s":""}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = Decode(tape, new(all))
	var e *Error
	if !errors.As(err, &e) || e.Pointer != "/slice/1/a" || !strings.Contains(err.Error(), `"/slice/1/a"`) {
		t.Fatalf("got %v", err)
	}
}

// TestOpaqueMembers checks that a jsontext.Value member at the top level
// is one node on the tape, whatever it holds.
func TestOpaqueMembers(t *testing.T) {
	op := OpaqueMembers(reflect.TypeFor[all]())
	if len(op) != 1 || op[0] != "raw" {
		t.Fatalf("OpaqueMembers(all) = %v", op)
	}
	b := []byte(`{"raw":[` + strings.Repeat(`{"a":[1,2]},`, 1000) + `0],"s":"x"}`)
	tape, err := record(b, op)
	if err != nil {
		t.Fatal(err)
	}
	if len(tape.Nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(tape.Nodes))
	}
	var got all
	want := strings.TrimSuffix(string(b[len(`{"raw":`):]), `,"s":"x"}`)
	if err := Decode(tape, &got); err != nil || string(got.Raw) != want || got.S != "x" {
		t.Fatalf("got %d bytes (want %d) and %q, %v", len(got.Raw), len(want), got.S, err)
	}
}

// TestDeepInput maps a deeply nested value, as a hostile peer might send:
// the walk recurses once per level of the value, which the recorder
// (and, in packs, the strict parser's depth limit) bounds.
func TestDeepInput(t *testing.T) {
	const depth = 4000
	b := []byte(strings.Repeat(`{"name":"x","children":[`, depth) + `{"name":"y"}` + strings.Repeat(`]}`, depth))
	tape, err := record(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n node
	if err := Decode(tape, &n); err != nil {
		t.Fatal(err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		same[all](t, b)
		same[[]*inner](t, b)
	})
}

package envelope

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// Event is the signed event object of Agent Identity §5: six common fields
// plus the top-level fields its protocol defines (Ext).
//
// Payload and Ext values are raw JSON kept exactly as signed: an explicit
// [] or {} stays, member order and number spelling do not matter because the
// hash is taken over the canonical (RFC 8785) form. Values obtained from a
// parsed Envelope alias its memory and must not be modified.
type Event struct {
	Protocol  string
	Type      string
	Actor     identity.AgentID
	CreatedAt int64 // Unix milliseconds
	Nonce     int64
	Payload   jsontext.Value
	// Ext holds protocol-defined top-level fields, for example ADP's
	// room_id. Names are unique.
	Ext Fields
}

// Field is one protocol-defined top-level event member.
type Field struct {
	Name  string
	Value jsontext.Value
}

// Fields is a list of protocol-defined event members.
type Fields []Field

// Get returns the raw value of the named member.
func (f Fields) Get(name string) (jsontext.Value, bool) {
	for i := range f {
		if f[i].Name == name {
			return f[i].Value, true
		}
	}
	return nil, false
}

// The six members every event carries.
var commonFields = []string{"actor", "created_at", "nonce", "payload", "protocol", "type"}

// Canonical returns the RFC 8785 bytes of the event, whose SHA3-256 is the
// event hash. It validates the event exactly as Parse would (with the
// built-in protocol table), so a locally built event can never be signed in
// a shape receivers reject.
func (e *Event) Canonical() ([]byte, error) {
	raw, err := e.appendJSON(nil)
	if err != nil {
		return nil, err
	}
	pe, err := parseEvent(raw, nil)
	if err != nil {
		return nil, err
	}
	return pe.canon, nil
}

// appendJSON writes the event as a JSON object (not yet canonical).
func (e *Event) appendJSON(b []byte) ([]byte, error) {
	if e.Payload == nil {
		return nil, identity.NewError(identity.CodeInvalidEvent, "event has no payload")
	}
	names := make([]string, 0, len(e.Ext))
	for _, f := range e.Ext {
		if slices.Contains(commonFields, f.Name) || slices.Contains(names, f.Name) {
			return nil, identity.Errorf(identity.CodeInvalidEvent, "duplicate event field %q", f.Name)
		}
		names = append(names, f.Name)
	}
	var err error
	b = append(b, `{"protocol":`...)
	if b, err = jsontext.AppendQuote(b, e.Protocol); err != nil {
		return nil, identity.Wrap(identity.CodeInvalidEvent, "protocol", err)
	}
	b = append(b, `,"type":`...)
	if b, err = jsontext.AppendQuote(b, e.Type); err != nil {
		return nil, identity.Wrap(identity.CodeInvalidEvent, "type", err)
	}
	b = append(b, `,"actor":"`...)
	b = e.Actor.AppendText(b)
	b = append(b, `","created_at":`...)
	b = strconv.AppendInt(b, e.CreatedAt, 10)
	b = append(b, `,"nonce":`...)
	b = strconv.AppendInt(b, e.Nonce, 10)
	b = append(b, `,"payload":`...)
	b = append(b, bytes.TrimSpace(e.Payload)...)
	for _, f := range e.Ext {
		b = append(b, ',')
		b, _ = jsontext.AppendQuote(b, f.Name)
		b = append(b, ':')
		if len(bytes.TrimSpace(f.Value)) == 0 {
			return nil, identity.Errorf(identity.CodeInvalidEvent, "event field %q has no value", f.Name)
		}
		b = append(b, bytes.TrimSpace(f.Value)...)
	}
	return append(b, '}'), nil
}

// parsedEvent is an event decoded from canonical-or-not JSON together with
// its canonical bytes.
type parsedEvent struct {
	Event
	canon []byte
	wire  bool // the text read was canonical: canon is a copy of it
	// ext, when set, is the storage for the first protocol fields.
	ext *[4]Field
	// payloadEnd > 0 locates the payload in canon when wire is set.
	payloadStart, payloadEnd int
	// actor is the actor member's JSON string, decoded by check.
	actor jsontext.Value
}

// parseEvent decodes one event object strictly (duplicates, Unicode, number
// policy, required fields, closed shape) and canonicalizes it. Every failure
// is an *identity.Error with code invalid_event (invalid_actor for a
// malformed actor). Closedness follows the built-in table and protos.
func parseEvent(raw []byte, protos []Protocol) (*parsedEvent, error) {
	pd := strictjson.GetDecoder(raw)
	defer pd.Release()
	d := pd.Decoder
	pe := new(parsedEvent)
	if err := decodeEvent(d, raw, protos, pe); err != nil {
		return nil, err
	}
	if err := strictjson.End(d); err != nil {
		return nil, identity.Wrap(identity.CodeInvalidEvent, "event", err)
	}
	return pe, nil
}

// decodeEvent reads the event object at the decoder's position in one pass
// into pe, which the caller provides (the envelope parse keeps it on its
// stack); buf is the decoder's whole input, which payload and Ext values
// slice.
func decodeEvent(d *jsontext.Decoder, buf []byte, protos []Protocol, pe *parsedEvent) error {
	begin := valueStart(buf, d.InputOffset())
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return identity.NewError(identity.CodeInvalidEvent, "event is not a JSON object")
	}
	var seen uint8
	for d.PeekKind() != '}' {
		name, err := readName(d)
		if err != nil {
			return identity.Wrap(identity.CodeInvalidEvent, "event", err)
		}
		var v jsontext.Value
		switch name {
		case "protocol", "type", "actor", "created_at", "nonce":
			v, err = d.ReadValue() // member checks its kind
		default: // payload and protocol fields: any value, within the number policy
			v, err = walkValue(d, buf)
		}
		var bit uint8
		if err == nil {
			bit, err = pe.member(name, v)
		}
		if err != nil {
			return identity.Wrap(identity.CodeInvalidEvent, "event."+name, err)
		}
		if bit == bitPayload {
			pe.payloadEnd = int(d.InputOffset() - begin)
			pe.payloadStart = pe.payloadEnd - len(v)
		}
		seen |= bit
	}
	if _, err := d.ReadToken(); err != nil {
		return identity.Wrap(identity.CodeInvalidEvent, "event", err)
	}
	if err := pe.check(seen, protos); err != nil {
		return err
	}
	raw := buf[begin:d.InputOffset()]
	if strictjson.IsCanonical(raw) {
		// Most events arrive canonical; copying beats re-canonicalizing.
		pe.canon, pe.wire = bytes.Clone(raw), true
		return nil // the payload's offsets in raw are those in canon
	}
	var err error
	if pe.canon, err = strictjson.CanonicalizeValidated(raw); err != nil {
		return identity.Wrap(identity.CodeInvalidEvent, "event", err)
	}
	return nil
}

// The bit each common member sets in decodeEvent's record of those seen.
const (
	bitProtocol uint8 = 1 << iota
	bitType
	bitActor
	bitCreatedAt
	bitNonce
	bitPayload
	allCommon = 1<<iota - 1
)

// member decodes the event member name, whose raw value v is a JSON value
// that passed the strict checks (a payload or protocol field's numbers
// included), into pe, and returns the member's bit if it is one of the
// six common ones.
func (pe *parsedEvent) member(name string, v jsontext.Value) (bit uint8, err error) {
	e := &pe.Event
	switch name {
	case "protocol":
		e.Protocol, err = protocolName(v)
		return bitProtocol, err
	case "type":
		e.Type, err = strictjson.String(v)
		return bitType, err
	case "actor":
		if v.Kind() != '"' {
			return 0, strictjson.ErrWrongKind
		}
		pe.actor = v
		return bitActor, nil
	case "created_at":
		e.CreatedAt, err = strictjson.Int(v)
		return bitCreatedAt, err
	case "nonce":
		e.Nonce, err = strictjson.Int(v)
		return bitNonce, err
	case "payload":
		e.Payload = v
		return bitPayload, nil
	}
	if e.Ext == nil {
		if pe.ext != nil {
			e.Ext = pe.ext[:0]
		} else {
			e.Ext = make(Fields, 0, 4) // ADP's four: one allocation
		}
	}
	e.Ext = append(e.Ext, Field{Name: name, Value: v})
	return 0, nil
}

// check applies the rules on the event as a whole once its members are
// read: all six common members, the shape rules and the actor's form.
func (pe *parsedEvent) check(seen uint8, protos []Protocol) error {
	if seen != allCommon {
		for i, n := range []string{"protocol", "type", "actor", "created_at", "nonce", "payload"} {
			if seen&(1<<i) == 0 {
				return identity.Errorf(identity.CodeInvalidEvent, "event has no %q member", n)
			}
		}
	}
	if err := checkShape(&pe.Event, protos); err != nil {
		return err
	}
	return parseActor(&pe.Actor, pe.actor)
}

// readName reads an object member name without allocating when it has no
// escapes (the common case).
func readName(d *jsontext.Decoder) (string, error) {
	v, err := d.ReadValue()
	if err != nil {
		return "", err
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return internName(v[1 : len(v)-1]), nil
	}
	return strictjson.String(v)
}

// internName returns the common member names without allocating.
func internName(b []byte) string {
	for _, n := range knownNames {
		if string(b) == n {
			return n
		}
	}
	return string(b)
}

var knownNames = []string{"protocol", "type", "actor", "created_at", "nonce", "payload",
	"hash", "event", "signature", "room_id", "base_seq", "base_hash", "mentions"}

// protocolName decodes the JSON string v, without allocating for the
// built-in protocols' names.
func protocolName(v jsontext.Value) (string, error) {
	if len(v) > 2 && v[0] == '"' {
		switch string(v[1 : len(v)-1]) {
		case DiscourseName:
			return DiscourseName, nil
		case ProfileName:
			return ProfileName, nil
		}
	}
	return strictjson.String(v)
}

// parseActor decodes the Agent ID in the JSON string v: where it stands
// when it has no escape, else after unquoting it (identity.ParseAgentID's
// checks and errors either way).
func parseActor(id *identity.AgentID, v jsontext.Value) error {
	if bytes.IndexByte(v, '\\') < 0 {
		return id.UnmarshalText(v[1 : len(v)-1])
	}
	s, err := strictjson.String(v)
	if err != nil {
		return identity.Wrap(identity.CodeInvalidEvent, "event.actor", err)
	}
	a, err := identity.ParseAgentID(s)
	*id = a
	return err
}

// walkValue consumes one value, applying the number policy, and returns its
// bytes sliced from buf.
func walkValue(d *jsontext.Decoder, buf []byte) (jsontext.Value, error) {
	start := valueStart(buf, d.InputOffset())
	if err := strictjson.WalkIn(d, buf, int(start)); err != nil {
		return nil, err
	}
	return jsontext.Value(buf[start:d.InputOffset():d.InputOffset()]), nil
}

// valueStart skips the whitespace, ':' and ',' between the previous token
// and the next value.
func valueStart(buf []byte, off int64) int64 {
	for off < int64(len(buf)) {
		switch buf[off] {
		case ' ', '\t', '\n', '\r', ':', ',':
			off++
		default:
			return off
		}
	}
	return off
}

// checkShape applies the value rules of Identity §4–§5 and closedness: an
// extra field must be one the event's protocol defines (see closure).
func checkShape(e *Event, protos []Protocol) error {
	if e.Protocol == "" {
		return identity.NewError(identity.CodeInvalidEvent, "event protocol is empty")
	}
	if !ValidType(e.Type) {
		return identity.Errorf(identity.CodeInvalidEvent, "event type %.64q is not a dot-separated name", e.Type)
	}
	if e.CreatedAt < 0 {
		return identity.NewError(identity.CodeInvalidEvent, "event created_at is negative")
	}
	if e.Nonce < 1 {
		return identity.NewError(identity.CodeInvalidEvent, "event nonce is not a positive safe integer")
	}
	allowed := closure(e.Protocol, protos)
	for _, f := range e.Ext {
		if !slices.Contains(allowed, f.Name) {
			return identity.Errorf(identity.CodeInvalidEvent, "event field %.64q is not defined by %s", f.Name, e.Protocol)
		}
	}
	return nil
}

// ValidType reports whether t is a dot-separated event type name: two or
// more segments, each starting with a lowercase ASCII letter or digit and
// continuing with those, '_' or '-' (the grammar of the protocols' schemas).
func ValidType(t string) bool {
	segs, start := 0, 0
	for i := 0; i <= len(t); i++ {
		if i == len(t) || t[i] == '.' {
			if i == start {
				return false
			}
			segs++
			start = i + 1
			continue
		}
		c := t[i]
		lowerOrDigit := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !lowerOrDigit && (i == start || c != '_' && c != '-') {
			return false
		}
	}
	return segs >= 2
}

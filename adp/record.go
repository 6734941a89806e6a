package adp

import (
	"bytes"
	"errors"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/b64url"
	"github.com/agentprotocols/go-sdk/internal/opcount"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
	"github.com/agentprotocols/go-sdk/packs"
)

// Record is a server record (seed §15, 2026-09-24 §14): an accepted
// envelope with the host's acceptance data, linked into the room's hash
// chain.
//
// PreHash is meaningful only when Seq > 1; on the wire it is null at seq 1
// and the previous record's hash otherwise. A Record is immutable once
// built or parsed and safe for concurrent reads.
//
// Draft is the draft the record follows. It decides the acceptance-time
// member (received_at in the seed, accepted_at in the 2026-09-24 draft),
// which the record hash covers, and whether the envelope may be redacted.
// The zero Draft is the default draft.
type Record struct {
	RoomID  string
	Seq     int64
	PreHash envelope.Hash
	Hash    envelope.Hash
	// ReceivedAt is the acceptance time in Unix milliseconds, assigned by
	// the host: the record's received_at (seed) or accepted_at (2026-09-24).
	ReceivedAt int64
	// Envelope is the signed envelope; nil when Redacted is set.
	Envelope *envelope.Envelope
	// Redacted is set, and Envelope nil, when a host replaced the
	// envelope with a redacted one (2026-09-24 §14.1).
	Redacted *Redaction
	// Draft is the draft the record follows; the zero value is the
	// default draft.
	Draft Draft
	// Extra holds members beyond the six of §15, which the kernel schema
	// leaves open; they are kept so a record re-marshals as received. Their
	// names never repeat the six (ParseRecord guarantees it; code building
	// records by hand must too). The record hash does not cover them; the
	// archive digest events_sha3_256 does, since AppendJSON includes them.
	Extra envelope.Fields

	wire []byte // the text ParseRecord read, when it was canonical
	// parsed is what ParseRecord read into the exported fields alongside
	// wire: wire stands for the record only while they still hold it (a
	// copy with a field changed, as tests and tools make, does not).
	parsed wireFields
}

// Redaction is a redacted envelope (2026-09-24 §14.1): the event ID of the
// envelope a host removed, and its type, kept so that readers can still
// tell the record's freshness class. Only message.create and custom types
// may be redacted.
type Redaction struct {
	Hash envelope.Hash // the redacted envelope's event ID
	Type string        // the redacted event's type
}

// appendJSON writes the redacted envelope in canonical form.
func (x *Redaction) appendJSON(b []byte) []byte {
	b = append(b, `{"hash":"`...)
	b = b64url.AppendEncode(b, x.Hash[:])
	b = append(b, `","redacted":true,"type":`...)
	b, _ = jsontext.AppendQuote(b, x.Type)
	return append(b, '}')
}

// wireFields are the exported fields a record's canonical text encodes.
type wireFields struct {
	roomID     string
	seq        int64
	preHash    envelope.Hash
	hash       envelope.Hash
	receivedAt int64
	env        *envelope.Envelope
	redacted   *Redaction
	draft      Draft
}

func (r *Record) fields() wireFields {
	return wireFields{r.RoomID, r.Seq, r.PreHash, r.Hash, r.ReceivedAt, r.Envelope, r.Redacted, r.Draft.OrDefault()}
}

// canonicalWire returns wire if it is still the record's canonical text.
func (r *Record) canonicalWire() []byte {
	if r.wire == nil || len(r.Extra) != 0 || r.parsed != r.fields() {
		return nil
	}
	return r.wire
}

// useEnvelope replaces r's envelope with env, a byte-identical copy of it
// (sameEnvelope) whose signature was checked already. The text r was read
// from stays r's canonical text, since env encodes to the same bytes.
func (r *Record) useEnvelope(env *envelope.Envelope) {
	if r.parsed == r.fields() {
		r.parsed.env = env
	}
	r.Envelope = env
}

// EventHash returns the event ID of the record's envelope, redacted or not.
func (r *Record) EventHash() envelope.Hash {
	if r.Redacted != nil {
		return r.Redacted.Hash
	}
	return r.Envelope.Hash()
}

// Type returns the record's event type, redacted or not.
func (r *Record) Type() string {
	if r.Redacted != nil {
		return r.Redacted.Type
	}
	return r.Envelope.Type()
}

// NewRecord links env into a chain after prev (nil for the room.create
// record at seq 1) and computes the record hash. The record follows
// prev's draft, or the default draft at seq 1; see [NewRecordIn].
func NewRecord(roomID string, prev *Record, receivedAt int64, env *envelope.Envelope) *Record {
	var d Draft
	if prev != nil {
		d = prev.Draft
	}
	return NewRecordIn(d, roomID, prev, receivedAt, env)
}

// NewRecordIn is [NewRecord] in draft d.
func NewRecordIn(d Draft, roomID string, prev *Record, receivedAt int64, env *envelope.Envelope) *Record {
	r := &Record{RoomID: roomID, Seq: 1, ReceivedAt: receivedAt, Envelope: env, Draft: d.OrDefault()}
	if prev != nil {
		r.Seq, r.PreHash = prev.Seq+1, prev.Hash
	}
	r.Hash = r.ComputeHash()
	return r
}

// Redact returns a copy of r whose envelope is replaced by a redacted one
// (2026-09-24 §14.1). The record hash commits to the event ID, not to the
// envelope's content, so the copy keeps r's hash and the chain verifies.
// Only a record of a draft with redaction, of type message.create or a
// custom type, may be redacted; anything else is invalid_record.
func (r *Record) Redact() (*Record, error) {
	if r.Redacted != nil {
		return r, nil
	}
	x := &Redaction{Hash: r.Envelope.Hash(), Type: r.Envelope.Type()}
	if err := checkRedaction(r.Draft, x); err != nil {
		return nil, err
	}
	return &Record{RoomID: r.RoomID, Seq: r.Seq, PreHash: r.PreHash, Hash: r.Hash, ReceivedAt: r.ReceivedAt,
		Redacted: x, Draft: r.Draft.OrDefault(), Extra: r.Extra}, nil
}

// checkRedaction applies §14.1 of the 2026-09-24 draft to a redacted
// envelope: the draft must allow redaction, and the type must be
// message.create or a custom type. Built-in records other than
// message.create determine room state, and room.join.request is never a
// record.
func checkRedaction(d Draft, x *Redaction) error {
	switch {
	case !rulesOf(d).redaction:
		return identity.Errorf(CodeInvalidRecord, "the %s draft has no redacted records", d.OrDefault())
	case x.Type != TypeMessageCreate && d.IsBuiltin(x.Type):
		return identity.Errorf(CodeInvalidRecord, "a %s record cannot be redacted: only message.create and custom types can", clip(x.Type))
	case !envelope.ValidType(x.Type):
		return identity.Errorf(CodeInvalidRecord, "redacted type %q is not an event type name", clip(x.Type))
	}
	return nil
}

// ComputeHash returns SHA3-256(JCS({room_id, seq, pre_hash, envelope_hash,
// received_at})), the record hash of seed §15; in the 2026-09-24 draft
// (§14) the time member is accepted_at.
func (r *Record) ComputeHash() envelope.Hash {
	opcount.RecordHash()
	var buf [256]byte
	if w := r.canonicalWire(); w != nil && r.Envelope != nil {
		// The hash payload's texts are in the canonical record as it was
		// read: the envelope hash, and the chain fields it ends with.
		if b, ok := r.hashPayloadFromWire(buf[:0], w); ok {
			return envelope.Sum(b)
		}
	}
	return envelope.Sum(r.appendHashPayload(buf[:0]))
}

// hashPayloadFromWire writes the record hash payload from w, r's canonical
// text: w is {"envelope":{"event":E,"hash":"H","signature":"S"},"hash":"R"T
// with T the chain fields appendChainFields writes; in the 2026-09-24
// draft it starts {"accepted_at":N, and its envelope member follows.
func (r *Record) hashPayloadFromWire(b, w []byte) ([]byte, bool) {
	start := 0 // where `"envelope":` starts, less one
	if r.Draft.OrDefault() != Draft20260704 {
		start = len(`{"accepted_at":`)
		b = append(b, w[:start]...)
		b = strconv.AppendInt(b, r.ReceivedAt, 10)
		start = len(b)
		b = append(b, ',')
	} else {
		b = append(b, '{')
	}
	const eh = len(`{"envelope":{"event":`) // then the event, then ,"hash":"
	h := start + eh + len(r.Envelope.Canonical()) + len(`,"hash":"`)
	tail := h + 43 + len(`","signature":"`) + 86 + len(`"},"hash":"`) + 43 + len(`"`)
	if tail > len(w) || !bytes.HasPrefix(w[tail:], []byte(`,"pre_hash":`)) {
		return nil, false // not reached for a canonical record
	}
	b = append(b, `"envelope_hash":"`...)
	b = append(b, w[h:h+43]...)
	b = append(b, '"')
	return append(b, w[tail:]...), true
}

// appendHashPayload writes the record hash payload directly in JCS form:
// members in code-point order, no whitespace, room_id quoted minimally.
func (r *Record) appendHashPayload(b []byte) []byte {
	eh := r.EventHash()
	b = r.appendTimeFirst(append(b, '{'))
	b = append(b, `"envelope_hash":"`...)
	b = b64url.AppendEncode(b, eh[:])
	b = append(b, '"')
	return r.appendChainFields(b)
}

// appendTimeFirst writes the acceptance time when it sorts first among the
// members (accepted_at, 2026-09-24), followed by a comma.
func (r *Record) appendTimeFirst(b []byte) []byte {
	if f := rulesOf(r.Draft).timeField; f < "envelope" {
		b = append(b, '"')
		b = append(b, f...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, r.ReceivedAt, 10)
		b = append(b, ',')
	}
	return b
}

// appendChainFields writes the members both the record and its hash
// payload end with, in canonical order: pre_hash, received_at (seed only;
// accepted_at sorts first), room_id, seq, and the closing brace.
func (r *Record) appendChainFields(b []byte) []byte {
	b = append(b, `,"pre_hash":`...)
	if r.Seq == 1 {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = b64url.AppendEncode(b, r.PreHash[:])
		b = append(b, '"')
	}
	if f := rulesOf(r.Draft).timeField; f > "pre_hash" {
		b = append(b, ',', '"')
		b = append(b, f...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, r.ReceivedAt, 10)
	}
	b = append(b, `,"room_id":`...)
	b, _ = jsontext.AppendQuote(b, r.RoomID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	return append(b, '}')
}

// AppendJSON appends the record as JSON in canonical (RFC 8785) form, so
// that the archive digest of records the SDK writes needs no re-encoding.
func (r *Record) AppendJSON(b []byte) []byte {
	// Canonical member order: (accepted_at,) envelope, hash, pre_hash,
	// (received_at,) room_id, seq; extra members are merged in by
	// canonicalizing.
	if w := r.canonicalWire(); w != nil {
		return append(b, w...) // byte for byte what follows (CanonicalInput)
	}
	start := len(b)
	// One allocation for the usual record: the envelope is its canonical
	// event and about 170 bytes, the record members about 200 more, and
	// callers often add a newline.
	n := 0
	if r.Envelope != nil {
		n = len(r.Envelope.Canonical())
	}
	b = slices.Grow(b, n+len(r.RoomID)+400)
	b = r.appendTimeFirst(append(b, '{'))
	b = append(b, `"envelope":`...)
	if r.Redacted != nil {
		b = r.Redacted.appendJSON(b)
	} else {
		b = r.Envelope.AppendJSON(b)
	}
	b = append(b, `,"hash":"`...)
	b = b64url.AppendEncode(b, r.Hash[:])
	b = append(b, '"')
	b = r.appendChainFields(b)
	if len(r.Extra) == 0 {
		return b
	}
	// Merge the extra members in and let the canonicalizer order them.
	b = b[:len(b)-1]
	for _, f := range r.Extra {
		b = append(b, ',')
		b, _ = jsontext.AppendQuote(b, f.Name)
		b = append(b, ':')
		b = append(b, f.Value...)
	}
	b = append(b, '}')
	canon, err := strictjson.Canonicalize(b[start:])
	if err != nil { // Extra values were validated when parsed
		panic("adp: record extra members are not valid JSON: " + err.Error())
	}
	return append(b[:start], canon...)
}

// CanonicalInput returns the bytes [ParseRecord] read when they were byte
// for byte what [Record.AppendJSON] writes, and nil otherwise (a record
// with white space, members in another order, escapes in its names or
// hashes, extra members, an envelope not [envelope.Envelope.ParsedCanonical],
// one built by NewRecord or [Room.Accept], or a copy with a field changed
// since). The record of a [Room.Prepare] holds its encoding likewise, made
// once for every copy a host writes (the Store, the answer, the live
// stream). A caller that needs the canonical form, such
// as the archive digest, uses them instead of re-encoding the record.
// They alias ParseRecord's input, as the payload does, and must not be
// modified.
func (r *Record) CanonicalInput() []byte { return r.canonicalWire() }

// MarshalJSON implements json.Marshaler with AppendJSON.
func (r *Record) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// UnmarshalJSON implements json.Unmarshaler with [ParseRecordIn] in the
// draft r.Draft holds (the default draft when zero). A parsed record
// aliases its input, which an Unmarshaler must not keep: it parses a
// copy.
func (r *Record) UnmarshalJSON(b []byte) error {
	v, err := ParseRecordIn(r.Draft, bytes.Clone(b))
	if err != nil {
		return err
	}
	*r = *v
	return nil
}

// ParseRecord decodes a server record of the default draft strictly; see
// [ParseRecordIn].
func ParseRecord(b []byte) (*Record, error) { return ParseRecordIn(DefaultDraft, b) }

// ParseRecordIn decodes a server record of draft d strictly: one JSON
// object with room_id, seq (≥ 1), pre_hash (null exactly at seq 1), hash,
// the draft's acceptance time (received_at in the seed, accepted_at in the
// 2026-09-24 draft) and an envelope that [envelope.Parse] accepts — or, in
// the 2026-09-24 draft, a redacted envelope {hash, redacted: true, type}
// of message.create or a custom type (§14.1); other members are kept in
// [Record.Extra]. A record carrying the other draft's time member lacks
// its own and is refused, naming the draft. It checks the shape only: the
// record hash, the chain and the envelope signature are checked by
// [Record.CheckHash], [CheckLink] and [Room.Apply], which runs all three.
// Failures are *[identity.Error] values with code invalid_record (or the
// envelope's own code). The record refers to b (its envelope's payload and
// parsed text are slices of it), so b must not be modified or reused
// afterwards.
func ParseRecordIn(d Draft, b []byte) (*Record, error) {
	d = d.OrDefault()
	rules := rulesOf(d)
	// The envelope is most of a record: it is parsed where it stands,
	// strictly, and only the structure around it is split; the other
	// members are validated by their parsers. A record that fails is
	// parsed again the plain way (split first, then each member in
	// order), so that the refusal names the same first failure.
	var env *envelope.Envelope
	var buf [len(canonicalMembers)]strictjson.Member
	members, err := strictjson.SplitObjectAt(buf[:0], b, "envelope", func(v []byte) (n int, err error) {
		env, n, err = envelope.ParsePrefix(v)
		return n, err
	})
	if err != nil {
		return parseRecord(d, rules, b, nil)
	}
	r, err := parseRecord(d, rules, b, members)
	if err != nil {
		return parseRecord(d, rules, b, nil)
	}
	r.Envelope = env
	if !env.ParsedCanonical() {
		r.wire = nil
	}
	r.parsed.env = env
	return r, nil
}

// parseRecord decodes the members of a record, or with nil members splits
// b first and parses its envelope itself.
func parseRecord(d Draft, rules *draftRules, b []byte, members []strictjson.Member) (*Record, error) {
	var err error
	plain := members == nil
	if plain {
		if members, err = strictjson.SplitObject(b); err != nil {
			return nil, recordErr("record", err)
		}
	}
	r := &Record{Draft: d}
	var seen uint8
	var preNull, envCanon bool
	// canon: the members came in AppendJSON's order with no escape in
	// the strings whose text AppendJSON writes itself (see below).
	order := canonicalMembers[:]
	if rules.timeField == "accepted_at" {
		order = canonicalMembersAccepted[:]
	}
	canon := len(members) == len(order)
	for k, m := range members {
		v := jsontext.Value(m.Value)
		canon = canon && m.Name == order[k]
		if m.Name == "envelope" {
			seen |= 32
			if plain {
				if rules.redaction && isRedacted(v) {
					if r.Redacted, err = parseRedaction(d, v); err != nil {
						return nil, err
					}
					envCanon = string(r.Redacted.appendJSON(nil)) == string(v)
				} else {
					if r.Envelope, err = envelope.Parse(v); err != nil {
						return nil, err
					}
					envCanon = r.Envelope.ParsedCanonical()
				}
			}
			continue
		}
		// The six members are scalars whose parsers check their grammar
		// fully; only extra members need the general validator.
		switch m.Name {
		case "room_id":
			seen |= 1
			r.RoomID, err = strictjson.String(v)
			canon = canon && bytes.IndexByte(v, '\\') < 0
		case "seq":
			seen |= 2
			r.Seq, err = strictjson.Int(v)
		case "pre_hash":
			seen |= 4
			if preNull = string(v) == "null"; !preNull {
				r.PreHash, err = jsonHash(v)
				canon = canon && bytes.IndexByte(v, '\\') < 0
			}
		case "hash":
			seen |= 8
			r.Hash, err = jsonHash(v)
			canon = canon && bytes.IndexByte(v, '\\') < 0
		case rules.timeField:
			seen |= 16
			r.ReceivedAt, err = strictjson.Int(v)
		default:
			if err = strictjson.Validate(v); err == nil {
				r.Extra = append(r.Extra, envelope.Field{Name: m.Name, Value: bytes.Clone(v)})
			}
		}
		if err != nil {
			return nil, recordErr("record "+m.Name, err)
		}
	}
	switch {
	case seen&16 == 0 && seen|16 == 63:
		// The one member missing is this draft's time: say which draft
		// the record may follow instead.
		for _, o := range drafts() {
			if f := rulesOf(o).timeField; f != rules.timeField {
				if _, ok := r.Extra.Get(f); ok {
					return nil, recordErr("record has "+f+", not "+rules.timeField+": a "+o.String()+"-draft record where the "+d.String()+" draft is expected", nil)
				}
			}
		}
		return nil, recordErr("record needs room_id, seq, pre_hash, hash, "+rules.timeField+" and envelope", nil)
	case seen != 63:
		return nil, recordErr("record needs room_id, seq, pre_hash, hash, "+rules.timeField+" and envelope", nil)
	case r.Seq < 1:
		return nil, recordErr("record seq must be ≥ 1", nil)
	case r.ReceivedAt < 0:
		return nil, recordErr("record "+rules.timeField+" is negative", nil)
	case preNull != (r.Seq == 1):
		return nil, recordErr("record pre_hash must be null exactly at seq 1", nil)
	}
	if canon && (!plain || envCanon) {
		// AppendJSON writes each member's text as parsed: the envelope
		// when it is ParsedCanonical (a redacted one when it is byte for
		// byte what Redaction writes), a hash as unescaped base64url (a
		// bijection), room_id quoted with escapes only where JSON needs
		// them (so unescaped text is its own quoting), seq and the time
		// as integer literals, which strictjson.Int accepts only in their
		// one canonical spelling. With the members in that order, the
		// text is AppendJSON's exactly when nothing else took a byte
		// (white space, an escaped name): when its length is the sum of
		// its parts. ParseRecordIn checks the envelope it parsed.
		n := len(`{"envelope":,"hash":,"pre_hash":,"":,"room_id":,"seq":}`) + len(rules.timeField)
		for _, m := range members {
			n += len(m.Value)
		}
		if n == len(b) {
			r.wire = b[:n:n]
			r.parsed = r.fields()
		}
	}
	return r, nil
}

// drafts returns the drafts, for messages that name the other one.
func drafts() []Draft { return packs.Drafts() }

// canonicalMembers are a record's members in the order AppendJSON writes
// them: for the seed, and for the 2026-09-24 draft (accepted_at first).
var (
	canonicalMembers         = [...]string{"envelope", "hash", "pre_hash", "received_at", "room_id", "seq"}
	canonicalMembersAccepted = [...]string{"accepted_at", "envelope", "hash", "pre_hash", "room_id", "seq"}
)

// isRedacted reports whether an envelope member is a redacted envelope: an
// object with a "redacted" member. A signed envelope has none.
func isRedacted(v jsontext.Value) bool {
	members, err := strictjson.SplitObject(v)
	if err != nil {
		return false
	}
	for _, m := range members {
		if m.Name == "redacted" {
			return true
		}
	}
	return false
}

// parseRedaction decodes a redacted envelope strictly: exactly hash (an
// event ID), redacted (true) and type, of a type that may be redacted.
func parseRedaction(d Draft, v jsontext.Value) (*Redaction, error) {
	members, err := strictjson.SplitObject(v)
	if err != nil {
		return nil, recordErr("redacted envelope", err)
	}
	x := new(Redaction)
	var seen uint8
	for _, m := range members {
		mv := jsontext.Value(m.Value)
		switch m.Name {
		case "hash":
			seen |= 1
			x.Hash, err = jsonHash(mv)
		case "redacted":
			seen |= 2
			if string(mv) != "true" {
				err = errors.New("redacted must be true")
			}
		case "type":
			seen |= 4
			x.Type, err = strictjson.String(mv)
		default:
			return nil, recordErr("redacted envelope has member "+strconv.Quote(clip(m.Name))+"; only hash, redacted and type are allowed", nil)
		}
		if err != nil {
			return nil, recordErr("redacted envelope "+m.Name, err)
		}
	}
	if seen != 7 {
		return nil, recordErr("redacted envelope needs hash, redacted and type", nil)
	}
	if err := checkRedaction(d, x); err != nil {
		return nil, err
	}
	return x, nil
}

// CheckHash reports whether r.Hash is the hash of r's acceptance data.
func (r *Record) CheckHash() error {
	if r.ComputeHash() != r.Hash {
		return identity.Errorf(CodeInvalidRecord, "record %d: hash does not match its acceptance data", r.Seq)
	}
	return nil
}

// CheckLink checks that r follows prev in one room's chain: same room, seq
// one greater (seq 1 when prev is nil) and pre_hash equal to prev's hash.
func CheckLink(prev, r *Record) error {
	switch {
	case prev == nil && r.Seq != 1:
		return identity.Errorf(CodeInvalidRecord, "record %d: the chain must start at seq 1", r.Seq)
	case prev == nil:
		return nil
	case r.Draft.OrDefault() != prev.Draft.OrDefault():
		return identity.Errorf(CodeInvalidRecord, "record %d follows the %s draft, the previous record the %s draft", r.Seq, r.Draft.OrDefault(), prev.Draft.OrDefault())
	case r.RoomID != prev.RoomID:
		return identity.Errorf(CodeInvalidRecord, "record %d: room_id differs from the previous record", r.Seq)
	case r.Seq != prev.Seq+1:
		return identity.Errorf(CodeInvalidRecord, "record %d: seq does not follow %d", r.Seq, prev.Seq)
	case r.PreHash != prev.Hash:
		return identity.Errorf(CodeInvalidRecord, "record %d: pre_hash is not the hash of record %d", r.Seq, prev.Seq)
	}
	return nil
}

func recordErr(msg string, err error) error {
	if err != nil {
		return identity.Wrap(CodeInvalidRecord, msg, err)
	}
	return identity.NewError(CodeInvalidRecord, msg)
}

func jsonHash(v jsontext.Value) (envelope.Hash, error) {
	// The common case, an unescaped hash, decodes where it stands; any
	// other (and any failure, for its exact error) goes the long way.
	var h envelope.Hash
	if len(v) == 45 && v[0] == '"' && v[44] == '"' && bytes.IndexByte(v, '\\') < 0 &&
		b64url.DecodeFixedBytes(h[:], v[1:44]) == nil {
		return h, nil
	}
	s, err := strictjson.String(v)
	if err != nil {
		return envelope.Hash{}, err
	}
	return envelope.ParseHash(s)
}

// Latest holds the latest accepted record's acceptance fields (§16). Its
// JSON form has pre_hash null at seq 1 (see Latest.MarshalJSON).
type Latest struct {
	Seq        int64         `json:"seq"`
	PreHash    envelope.Hash `json:"pre_hash"`
	Hash       envelope.Hash `json:"hash"`
	ReceivedAt int64         `json:"received_at"`
}

// MarshalJSON writes the §16 form: {"seq", "pre_hash", "hash",
// "received_at"}, with pre_hash JSON null at seq 1 (§15) — and in a room
// with no record yet, where there is no previous record either.
func (l Latest) MarshalJSON() ([]byte, error) {
	b := append(make([]byte, 0, 160), `{"seq":`...)
	b = strconv.AppendInt(b, l.Seq, 10)
	b = append(b, `,"pre_hash":`...)
	if l.Seq <= 1 {
		b = append(b, "null"...)
	} else {
		b = append(b64url.AppendEncode(append(b, '"'), l.PreHash[:]), '"')
	}
	b = append(b, `,"hash":"`...)
	b = append(b64url.AppendEncode(b, l.Hash[:]), '"')
	b = append(b, `,"received_at":`...)
	b = strconv.AppendInt(b, l.ReceivedAt, 10)
	return append(b, '}'), nil
}

// UnmarshalJSON reads the form MarshalJSON writes, strictly: no unknown
// members, seq a non-negative safe integer, pre_hash null exactly when seq
// is at most 1 and a hash otherwise.
func (l *Latest) UnmarshalJSON(b []byte) error {
	var w struct {
		Seq        int64          `json:"seq"`
		PreHash    jsontext.Value `json:"pre_hash"`
		Hash       envelope.Hash  `json:"hash"`
		ReceivedAt int64          `json:"received_at"`
	}
	if err := json.Unmarshal(b, &w, json.RejectUnknownMembers(true)); err != nil {
		return err
	}
	if w.Seq < 0 || w.Seq > identity.MaxNonce {
		return identity.Errorf(identity.CodeInvalidRequest, "latest seq %d is out of range", w.Seq)
	}
	var pre envelope.Hash
	switch {
	case w.Seq <= 1:
		if string(w.PreHash) != "null" {
			return identity.Errorf(identity.CodeInvalidRequest, "latest pre_hash must be null at seq %d", w.Seq)
		}
	default:
		h, err := jsonHash(w.PreHash)
		if err != nil {
			return identity.Wrap(identity.CodeInvalidRequest, "latest pre_hash", err)
		}
		pre = h
	}
	*l = Latest{Seq: w.Seq, PreHash: pre, Hash: w.Hash, ReceivedAt: w.ReceivedAt}
	return nil
}

package adp

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/b64url"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// Record is a server record (§15): an accepted envelope with the host's
// acceptance data, linked into the room's hash chain.
//
// PreHash is meaningful only when Seq > 1; on the wire it is null at seq 1
// and the previous record's hash otherwise. A Record is immutable once
// built or parsed and safe for concurrent reads.
type Record struct {
	RoomID     string
	Seq        int64
	PreHash    envelope.Hash
	Hash       envelope.Hash
	ReceivedAt int64 // Unix milliseconds, assigned by the host
	Envelope   *envelope.Envelope
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

// wireFields are the exported fields a record's canonical text encodes.
type wireFields struct {
	roomID     string
	seq        int64
	preHash    envelope.Hash
	hash       envelope.Hash
	receivedAt int64
	env        *envelope.Envelope
}

// canonicalWire returns wire if it is still the record's canonical text.
func (r *Record) canonicalWire() []byte {
	if r.wire == nil || len(r.Extra) != 0 ||
		r.parsed != (wireFields{r.RoomID, r.Seq, r.PreHash, r.Hash, r.ReceivedAt, r.Envelope}) {
		return nil
	}
	return r.wire
}

// NewRecord links env into a chain after prev (nil for the room.create
// record at seq 1) and computes the record hash.
func NewRecord(roomID string, prev *Record, receivedAt int64, env *envelope.Envelope) *Record {
	r := &Record{RoomID: roomID, Seq: 1, ReceivedAt: receivedAt, Envelope: env}
	if prev != nil {
		r.Seq, r.PreHash = prev.Seq+1, prev.Hash
	}
	r.Hash = r.ComputeHash()
	return r
}

// ComputeHash returns SHA3-256(JCS({room_id, seq, pre_hash, envelope_hash,
// received_at})), the record hash of §15.
func (r *Record) ComputeHash() envelope.Hash {
	var buf [256]byte
	if w := r.canonicalWire(); w != nil {
		// The hash payload's texts are in the canonical record as it was
		// read: the envelope hash, and the chain fields it ends with.
		if b, ok := hashPayloadFromWire(buf[:0], w, len(r.Envelope.Canonical())); ok {
			return envelope.Sum(b)
		}
	}
	return envelope.Sum(r.appendHashPayload(buf[:0]))
}

// hashPayloadFromWire writes the record hash payload from w, a record's
// canonical text whose event is canonLen bytes long: w is
// {"envelope":{"event":E,"hash":"H","signature":"S"},"hash":"R"T with T
// the chain fields appendChainFields writes.
func hashPayloadFromWire(b, w []byte, canonLen int) ([]byte, bool) {
	const eh = len(`{"envelope":{"event":`) // then the event, then ,"hash":"
	h := eh + canonLen + len(`,"hash":"`)
	tail := h + 43 + len(`","signature":"`) + 86 + len(`"},"hash":"`) + 43 + len(`"`)
	if tail > len(w) || !bytes.HasPrefix(w[tail:], []byte(`,"pre_hash":`)) {
		return nil, false // not reached for a canonical record
	}
	b = append(b, `{"envelope_hash":"`...)
	b = append(b, w[h:h+43]...)
	b = append(b, '"')
	return append(b, w[tail:]...), true
}

// appendHashPayload writes the record hash payload directly in JCS form:
// members in code-point order, no whitespace, room_id quoted minimally.
func (r *Record) appendHashPayload(b []byte) []byte {
	eh := r.Envelope.Hash()
	b = append(b, `{"envelope_hash":"`...)
	b = b64url.AppendEncode(b, eh[:])
	b = append(b, '"')
	return r.appendChainFields(b)
}

// appendChainFields writes the members both the record and its hash
// payload end with, in canonical order: pre_hash, received_at, room_id,
// seq, and the closing brace.
func (r *Record) appendChainFields(b []byte) []byte {
	b = append(b, `,"pre_hash":`...)
	if r.Seq == 1 {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = b64url.AppendEncode(b, r.PreHash[:])
		b = append(b, '"')
	}
	b = append(b, `,"received_at":`...)
	b = strconv.AppendInt(b, r.ReceivedAt, 10)
	b = append(b, `,"room_id":`...)
	b, _ = jsontext.AppendQuote(b, r.RoomID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	return append(b, '}')
}

// AppendJSON appends the record as JSON in canonical (RFC 8785) form, so
// that the archive digest of records the SDK writes needs no re-encoding.
func (r *Record) AppendJSON(b []byte) []byte {
	// Canonical member order: envelope, hash, pre_hash, received_at,
	// room_id, seq; extra members are merged in by canonicalizing.
	start := len(b)
	// One allocation for the usual record: the envelope is its canonical
	// event and about 170 bytes, the record members about 200 more, and
	// callers often add a newline.
	b = slices.Grow(b, len(r.Envelope.Canonical())+len(r.RoomID)+400)
	b = append(b, `{"envelope":`...)
	b = r.Envelope.AppendJSON(b)
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

// ParsedCanonical returns the bytes [ParseRecord] read when they were byte
// for byte what [Record.AppendJSON] writes, and nil otherwise (a record
// with white space, members in another order, escapes in its names or
// hashes, extra members, an envelope not [envelope.Envelope.ParsedCanonical],
// one built by NewRecord, or a copy with a field changed since). A caller
// that needs the canonical form, such as the archive digest, uses them
// instead of re-encoding the record. They
// alias ParseRecord's input, as the payload does, and must not be
// modified.
func (r *Record) ParsedCanonical() []byte { return r.canonicalWire() }

// MarshalJSON implements json.Marshaler with AppendJSON.
func (r *Record) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// UnmarshalJSON implements json.Unmarshaler with ParseRecord. A parsed
// record aliases its input, which an Unmarshaler must not keep: it parses
// a copy.
func (r *Record) UnmarshalJSON(b []byte) error {
	v, err := ParseRecord(bytes.Clone(b))
	if err != nil {
		return err
	}
	*r = *v
	return nil
}

// ParseRecord decodes a server record strictly: one JSON object with
// room_id, seq (≥ 1), pre_hash (null exactly at seq 1), hash, received_at
// and an envelope that [envelope.Parse] accepts; other members are kept in
// [Record.Extra]. It checks the shape only: the record hash, the chain
// and the envelope signature are checked by [Record.CheckHash],
// [CheckLink] and [Room.Apply], which runs all three. Failures are *[identity.Error] values with code invalid_record (or the envelope's own
// code). The record refers to b (its envelope's payload and parsed text
// are slices of it), so b must not be modified or reused afterwards.
func ParseRecord(b []byte) (*Record, error) {
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
		return parseRecord(b, nil)
	}
	r, err := parseRecord(b, members)
	if err != nil {
		return parseRecord(b, nil)
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
func parseRecord(b []byte, members []strictjson.Member) (*Record, error) {
	var err error
	plain := members == nil
	if plain {
		if members, err = strictjson.SplitObject(b); err != nil {
			return nil, recordErr("record", err)
		}
	}
	r := new(Record)
	var seen uint8
	var preNull bool
	// canon: the members came in AppendJSON's order with no escape in
	// the strings whose text AppendJSON writes itself (see below).
	canon := len(members) == len(canonicalMembers)
	for k, m := range members {
		v := jsontext.Value(m.Value)
		canon = canon && m.Name == canonicalMembers[k]
		if m.Name == "envelope" {
			seen |= 32
			if plain {
				if r.Envelope, err = envelope.Parse(v); err != nil {
					return nil, err
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
		case "received_at":
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
	case seen != 63:
		return nil, recordErr("record needs room_id, seq, pre_hash, hash, received_at and envelope", nil)
	case r.Seq < 1:
		return nil, recordErr("record seq must be ≥ 1", nil)
	case r.ReceivedAt < 0:
		return nil, recordErr("record received_at is negative", nil)
	case preNull != (r.Seq == 1):
		return nil, recordErr("record pre_hash must be null exactly at seq 1", nil)
	}
	if canon && (!plain || r.Envelope.ParsedCanonical()) {
		// AppendJSON writes each member's text as parsed: the envelope
		// when it is ParsedCanonical, a hash as unescaped base64url (a
		// bijection), room_id quoted with escapes only where JSON needs
		// them (so unescaped text is its own quoting), seq and
		// received_at as integer literals, which strictjson.Int accepts
		// only in their one canonical spelling. With the members in that
		// order, the text is AppendJSON's exactly when nothing else took
		// a byte (white space, an escaped name): when its length is the
		// sum of its parts. ParseRecord checks the envelope it parsed.
		n := len(`{"envelope":,"hash":,"pre_hash":,"received_at":,"room_id":,"seq":}`)
		for _, m := range members {
			n += len(m.Value)
		}
		if n == len(b) {
			r.wire = b[:n:n]
			r.parsed = wireFields{r.RoomID, r.Seq, r.PreHash, r.Hash, r.ReceivedAt, r.Envelope}
		}
	}
	return r, nil
}

// canonicalMembers are a record's members in the order AppendJSON writes
// them.
var canonicalMembers = [...]string{"envelope", "hash", "pre_hash", "received_at", "room_id", "seq"}

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

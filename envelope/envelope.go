package envelope

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/b64url"
	"github.com/agentprotocols/go-sdk/internal/opcount"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// MaxSize is the largest envelope Parse accepts, a denial-of-service bound
// well above every protocol's payload limit (ADP's largest typed payload
// hint is 256 KiB).
const MaxSize = 1 << 20

// Envelope is a signed event {hash, event, signature}. It is immutable once
// made by Parse or Sign and safe for concurrent use.
//
// An Envelope from Parse is well-formed but not yet trusted: call Verify (or
// use the package-level Verify) before acting on it.
type Envelope struct {
	hash  Hash     // the hash the envelope claims
	sig   [64]byte // the signature it carries
	event Event
	canon []byte // JCS(event)
	sum   Hash   // SHA3-256(canon), the hash it should claim
	// verified is set (atomically) once Verify succeeded, so the several
	// layers that each insist on a verified envelope pay for one Ed25519
	// check. The envelope is immutable, so the result cannot go stale.
	verified uint32
	// wire is set when the text Parse read was exactly what AppendJSON
	// writes (see ParsedCanonical).
	wire bool
	// text, when the wire path read the envelope, is that text: a slice
	// of Parse's input, which canon then slices too, and which AppendJSON
	// copies rather than encoding the hash and signature again.
	text []byte
	// ext holds the event's protocol fields (ADP's four) in the same
	// allocation as the envelope.
	ext [4]Field
	// payload locates the canonical payload in canon, when the event
	// arrived canonical (payload[1] > 0).
	payload [2]int
}

// Parse decodes an envelope with the strict rules of Agent Identity: one
// JSON value, no duplicate member names at any depth, valid Unicode, every
// number within ±(2^53−1), exactly the members hash, event and signature,
// and a closed event object. The event may add only the fields its
// protocol defines in the built-in table ([DiscourseProtocol],
// [ProfileProtocol]); an event of any other protocol carries exactly the
// six common fields (see [ParseWith]). It canonicalizes and hashes the
// event once; it does not check the hash or the signature.
//
// Failures are *[identity.Error] values: invalid_event for shape, invalid_actor
// for a malformed actor, invalid_event_hash and invalid_signature for
// malformed encodings of those two members, payload_too_large past [MaxSize].
//
// The envelope refers to b (its payload and parsed text are slices of it),
// so b must not be modified or reused while the envelope is in use.
func Parse(b []byte) (*Envelope, error) {
	env, _, err := parse(b, nil, false)
	return env, err
}

// ParsePrefix is [Parse] for an envelope that begins b and may be followed
// by other bytes, which it does not read: it returns the envelope and the
// length of its JSON text (leading whitespace included), which is at most
// [MaxSize]. A record parser uses it to read the envelope inside a record
// once, rather than finding where the envelope ends and then parsing it.
func ParsePrefix(b []byte) (*Envelope, int, error) { return parse(b, nil, true) }

// ParseWith is [Parse] for events of protocols outside the built-in table:
// an event whose protocol is named by one of protos may carry that
// Protocol's fields. For other events the built-in table applies as in
// Parse. A Protocol in protos with a built-in name replaces the built-in
// declaration for this call.
func ParseWith(b []byte, protos ...Protocol) (*Envelope, error) {
	env, _, err := parse(b, protos, false)
	return env, err
}

// parse reads the envelope in b; with prefix set, bytes after it are left
// unread and n is its length.
func parse(b []byte, protos []Protocol, prefix bool) (env *Envelope, n int, err error) {
	if len(b) > MaxSize {
		if !prefix {
			return nil, 0, identity.NewError(identity.CodePayloadTooLarge, "envelope larger than 1 MiB")
		}
		// Read no further than an envelope may reach; one that does not
		// end by then fails as truncated, which a caller needing the
		// exact refusal re-checks with Parse.
		b = b[:MaxSize]
	}
	env, n, err = parseEnvelope(b, protos, prefix)
	return
}

func parseEnvelope(b []byte, protos []Protocol, prefix bool) (*Envelope, int, error) {
	if env, n, ok := parseWire(b, protos, prefix); ok {
		return env, n, nil
	}
	return parseGeneral(b, protos, prefix)
}

// parseGeneral is parseEnvelope for any text: the strict jsontext decoder
// reads it token by token and names the first violation.
func parseGeneral(b []byte, protos []Protocol, prefix bool) (*Envelope, int, error) {
	opcount.GeneralParse()
	pd := strictjson.GetDecoder(b)
	defer pd.Release()
	d := pd.Decoder
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, 0, identity.NewError(identity.CodeInvalidEvent, "envelope is not a JSON object")
	}
	env := new(Envelope)
	var hash, sig jsontext.Value
	pe := parsedEvent{ext: &env.ext}
	var seen uint8
	ordered := true // the members came as event, hash, signature
	for d.PeekKind() != '}' {
		name, err := readName(d)
		if err != nil {
			return nil, 0, identity.Wrap(identity.CodeInvalidEvent, "envelope", err)
		}
		switch name {
		case "hash":
			ordered = ordered && seen == 4
			seen |= 1
			hash, err = readStringValue(d)
		case "signature":
			ordered = ordered && seen == 5
			seen |= 2
			sig, err = readStringValue(d)
		case "event":
			ordered = ordered && seen == 0
			seen |= 4
			if err = decodeEvent(d, b, protos, &pe); err != nil {
				return nil, 0, err
			}
		default:
			return nil, 0, identity.Errorf(identity.CodeInvalidEvent, "envelope member %.64q is not defined", name)
		}
		if err != nil {
			return nil, 0, identity.Wrap(identity.CodeInvalidEvent, "envelope."+name, err)
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, 0, identity.Wrap(identity.CodeInvalidEvent, "envelope", err)
	}
	n := int(d.InputOffset())
	if !prefix {
		if err := strictjson.End(d); err != nil {
			return nil, 0, identity.Wrap(identity.CodeInvalidEvent, "envelope", err)
		}
	}
	if seen != 7 {
		return nil, 0, identity.NewError(identity.CodeInvalidEvent, "envelope needs hash, event and signature")
	}
	hashPlain, err := decodeB64(env.hash[:], hash)
	if err != nil {
		return nil, 0, identity.Wrap(identity.CodeInvalidEventHash, "envelope hash", err)
	}
	sigPlain, err := decodeB64(env.sig[:], sig)
	if err != nil {
		return nil, 0, identity.Wrap(identity.CodeInvalidSignature, "envelope signature", err)
	}
	env.event, env.canon, env.sum = pe.Event, pe.canon, Sum(pe.canon)
	if pe.wire {
		env.payload = [2]int{pe.payloadStart, pe.payloadEnd}
	}
	// The text is AppendJSON's exactly when the members came in its order
	// with a canonical event and unescaped base64url (a bijection: the
	// text is the encoding of the decoded bytes), and nothing else — no
	// white space, no escaped name — took a byte: then its length is the
	// sum of its parts.
	env.wire = ordered && pe.wire && hashPlain && sigPlain &&
		n == len(`{"event":,"hash":,"signature":}`)+len(pe.canon)+len(hash)+len(sig)
	return env, n, nil
}

// The text of AppendJSON around the event, the hash and the signature.
const (
	wireHead = `{"event":`
	wireHash = `,"hash":"`
	wireSig  = `","signature":"`
	wireEnd  = `"}`
	// wireTail is the length of what follows the event.
	wireTail = len(wireHash) + hashText + len(wireSig) + sigText + len(wireEnd)
	hashText = 43 // unpadded base64url of 32 bytes
	sigText  = 86 // of 64 bytes
)

// parseWire reads an envelope whose text is AppendJSON's exactly (ok
// reports it): a canonical event, which the canonical checker validates
// strictly on its own (strictjson.IsCanonical), then the hash and the
// signature. That is what signers and hosts send, and it costs one pass
// over the bytes. For any other text, valid or not, ok is false and the
// general parse reads it and gives the verdict; FuzzParseWire checks that
// this path never decides otherwise than that one.
func parseWire(b []byte, protos []Protocol, prefix bool) (env *Envelope, n int, ok bool) {
	if !bytes.HasPrefix(b, []byte(wireHead)) {
		return nil, 0, false
	}
	var mbuf [12]strictjson.CanonicalMember
	ms, evLen, ok := strictjson.CanonicalObject(mbuf[:0], b[len(wireHead):])
	if !ok {
		return nil, 0, false
	}
	event := b[len(wireHead) : len(wireHead)+evLen]
	tail := b[len(wireHead)+evLen:]
	if len(tail) < wireTail || !prefix && len(bytes.TrimLeft(tail[wireTail:], " \t\r\n")) > 0 {
		return nil, 0, false
	}
	hash := tail[len(wireHash) : len(wireHash)+hashText]
	sig := tail[len(wireHash)+hashText+len(wireSig) : wireTail-len(wireEnd)]
	if string(tail[:len(wireHash)]) != wireHash || string(tail[len(wireHash)+hashText:len(wireHash)+hashText+len(wireSig)]) != wireSig ||
		string(tail[wireTail-len(wireEnd):wireTail]) != wireEnd {
		return nil, 0, false
	}
	env = new(Envelope)
	// The base64url alphabet has no byte that a JSON string would need
	// to escape, so decoding the text validates the string too.
	if b64url.DecodeFixedBytes(env.hash[:], hash) != nil || b64url.DecodeFixedBytes(env.sig[:], sig) != nil {
		return nil, 0, false
	}
	pe := parsedEvent{ext: &env.ext}
	var seen uint8
	for _, m := range ms {
		name := internName(event[m.NameStart:m.NameEnd])
		bit, err := pe.member(name, event[m.Start:m.End:m.End])
		if err != nil {
			return nil, 0, false
		}
		if bit == bitPayload {
			env.payload = [2]int{m.Start, m.End}
		}
		seen |= bit
	}
	if pe.check(seen, protos) != nil {
		return nil, 0, false
	}
	n = len(wireHead) + evLen + wireTail
	env.event, env.canon, env.text, env.wire = pe.Event, event[:evLen:evLen], b[:n:n], true
	env.sum = Sum(env.canon)
	return env, n, true
}

// readStringValue reads a JSON string value without decoding it.
func readStringValue(d *jsontext.Decoder) (jsontext.Value, error) {
	v, err := d.ReadValue()
	if err != nil {
		return nil, err
	}
	if v.Kind() != '"' {
		return nil, strictjson.ErrWrongKind
	}
	return v, nil
}

// decodeB64 decodes the base64url text of the JSON string v into dst: in
// place when v has no escape (plain reports that case), else after
// unquoting it.
func decodeB64(dst []byte, v jsontext.Value) (plain bool, err error) {
	if bytes.IndexByte(v, '\\') < 0 {
		return true, b64url.DecodeFixedBytes(dst, v[1:len(v)-1])
	}
	s, err := strictjson.String(v)
	if err != nil {
		return false, err
	}
	return false, b64url.DecodeFixed(dst, s)
}

// Verify parses b and checks its hash and signature: the stateless part of
// the Identity verification order (steps 1–5). Services accepting live
// writes use a Verifier, which adds replay protection. Closedness is that
// of [Parse].
func Verify(b []byte) (*Envelope, error) { return verify(b, nil) }

// VerifyWith is [Verify] with the closedness of [ParseWith].
func VerifyWith(b []byte, protos ...Protocol) (*Envelope, error) { return verify(b, protos) }

func verify(b []byte, protos []Protocol) (*Envelope, error) {
	env, _, err := parse(b, protos, false)
	if err != nil {
		return nil, err
	}
	if err := env.Verify(); err != nil {
		return nil, err
	}
	return env, nil
}

// Verify checks that the claimed hash is SHA3-256 of the canonical event
// (invalid_event_hash) and that the signature over those 32 bytes verifies
// strictly under the actor's key (invalid_signature).
//
// A successful result is remembered: calling Verify again is free.
func (e *Envelope) Verify() error {
	if atomic.LoadUint32(&e.verified) == 1 {
		return nil
	}
	if e.hash != e.sum {
		return identity.NewError(identity.CodeInvalidEventHash, "hash does not match the canonical event")
	}
	if err := e.event.Actor.Verify(e.sum[:], e.sig[:]); err != nil {
		return err
	}
	atomic.StoreUint32(&e.verified, 1)
	return nil
}

// MaxSignDepth is the deepest event Sign will sign: 256 levels, the limit of
// the reference TypeScript parser, so that the SDK never emits an event a
// peer cannot parse. The event object itself is level 1, a value directly
// inside it (the payload object, an ADP mentions array) is level 2, and
// every array or object nested in a level-n value is level n+1; strings,
// numbers, booleans and null add no level. Parsing keeps its own, higher
// bound (the 10,000 levels of the JSON decoder), so events from other
// implementations nested deeper than 256 still verify.
const MaxSignDepth = 256

// Sign canonicalizes ev, hashes it and signs the 32-byte digest with s. The
// event's actor must be the signer's Agent ID. Sign applies the same shape
// rules as Parse, so what it returns always parses and verifies, and
// refuses (invalid_event) an event nested deeper than MaxSignDepth.
func Sign(ctx context.Context, s identity.Signer, ev Event) (*Envelope, error) {
	return sign(ctx, s, ev, nil)
}

// SignWith is [Sign] for an event of a protocol outside the built-in table:
// ev may carry the fields its protocol's entry in protos defines, with the
// closedness of [ParseWith].
func SignWith(ctx context.Context, s identity.Signer, ev Event, protos ...Protocol) (*Envelope, error) {
	return sign(ctx, s, ev, protos)
}

func sign(ctx context.Context, s identity.Signer, ev Event, protos []Protocol) (*Envelope, error) {
	if ev.Actor != s.AgentID() {
		return nil, identity.NewError(identity.CodeInvalidActor, "event actor is not the signer's agent id")
	}
	raw, err := ev.appendJSON(nil)
	if err != nil {
		return nil, err
	}
	pe, err := parseEvent(raw, protos)
	if err != nil {
		return nil, err
	}
	if d := strictjson.Depth(pe.canon); d > MaxSignDepth {
		return nil, identity.Errorf(identity.CodeInvalidEvent, "event is nested %d levels deep; peers parse at most %d", d, MaxSignDepth)
	}
	env := &Envelope{event: pe.Event, canon: pe.canon, sum: Sum(pe.canon)}
	env.hash = env.sum
	sig, err := s.Sign(ctx, env.sum[:])
	if err != nil {
		return nil, err
	}
	if len(sig) != len(env.sig) {
		return nil, errors.New("envelope: signer returned a signature that is not 64 bytes")
	}
	copy(env.sig[:], sig)
	// A remote signer is outside our trust boundary: never hand out an
	// envelope that receivers would reject.
	if err := env.Verify(); err != nil {
		return nil, err
	}
	return env, nil
}

// ParsedCanonical reports whether the text Parse (or ParsePrefix) read was
// byte for byte what [Envelope.AppendJSON] writes, so that a caller still
// holding those bytes (a record parser, an archive digest) can use them as
// the canonical form without re-encoding. It is false for an envelope made
// by Sign, and for any text with white space, another member order, an
// escape in a name or in the hash or signature, or a non-canonical event.
func (e *Envelope) ParsedCanonical() bool { return e.wire }

// Hash returns the event hash the envelope claims (after Verify, the
// verified event ID).
func (e *Envelope) Hash() Hash { return e.hash }

// Signature returns the 64-byte Ed25519 signature.
func (e *Envelope) Signature() [64]byte { return e.sig }

// Event returns the event. Its Payload and Ext values alias the envelope's
// memory and must not be modified.
func (e *Envelope) Event() Event { return e.event }

// Type returns the event type.
func (e *Envelope) Type() string { return e.event.Type }

// Actor returns the event actor.
func (e *Envelope) Actor() identity.AgentID { return e.event.Actor }

// Canonical returns JCS(event), the bytes the hash covers. It must not be
// modified.
func (e *Envelope) Canonical() []byte { return e.canon }

// CanonicalPayload returns the RFC 8785 form of the event's payload: its
// bytes inside [Envelope.Canonical], which RFC 8785 makes the canonical
// form of the payload on its own. Finding them costs a scan of the
// canonical event, not a second canonicalization. The bytes alias the
// envelope's memory and must not be modified.
func (e *Envelope) CanonicalPayload() []byte {
	if e.payload[1] > 0 {
		// The event arrived canonical: the payload is where Parse
		// found it.
		return e.canon[e.payload[0]:e.payload[1]:e.payload[1]]
	}
	ms, err := strictjson.SplitObject(e.canon)
	if err != nil {
		return nil // not reached: canon is the canonical form of a parsed event
	}
	for _, m := range ms {
		if m.Name == "payload" {
			return m.Value
		}
	}
	return nil
}

// AppendJSON appends the envelope in canonical (RFC 8785) form:
// {"event","hash","signature"} with the canonical event. Re-marshalling a
// parsed envelope is therefore stable and preserves the payload exactly,
// and records and archives built from it need no re-encoding.
func (e *Envelope) AppendJSON(b []byte) []byte {
	if e.text != nil {
		return append(b, e.text...)
	}
	b = append(b, `{"event":`...)
	b = append(b, e.canon...)
	b = append(b, `,"hash":"`...)
	b = b64url.AppendEncode(b, e.hash[:])
	b = append(b, `","signature":"`...)
	b = b64url.AppendEncode(b, e.sig[:])
	return append(b, `"}`...)
}

// MarshalJSON implements json.Marshaler with AppendJSON.
func (e *Envelope) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// UnmarshalJSON implements json.Unmarshaler with Parse (not Verify). A
// parsed envelope's payload aliases its input, which an Unmarshaler must
// not keep: it parses a copy.
func (e *Envelope) UnmarshalJSON(b []byte) error {
	v, err := Parse(bytes.Clone(b))
	if err != nil {
		return err
	}
	*e = *v //nolint:govet // v is fresh; nothing else holds it
	return nil
}

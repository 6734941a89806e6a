package adp

import (
	"bytes"
	"slices"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// ParseRecordPlain is ParseRecord's plain path (split the object, then
// parse each member in order), against which FuzzParseRecord checks the
// one-pass path.
func ParseRecordPlain(b []byte) (*Record, error) { return ParseRecordPlainIn(DefaultDraft, b) }

// ParseRecordPlainIn is ParseRecordPlain in draft d.
func ParseRecordPlainIn(d Draft, b []byte) (*Record, error) {
	return parseRecord(d, rulesOf(d), b, nil)
}

// CheckBuiltinPayloadReference is checkBuiltinPayload with the two-pass
// decode it replaced: ValidateBuiltin's tree for the kernel schema, then
// json.Unmarshal into the typed struct (for type.define, ParseDeclaration,
// whose own one-pass form packs' FuzzParseDeclarationOnePass compares with
// its two-pass reference). FuzzBuiltinDecode and TestDecodeMatchesReference
// compare the one-pass path against it.
func CheckBuiltinPayloadReference(typ string, raw []byte) (any, error) {
	return CheckBuiltinPayloadReferenceIn(DefaultDraft, typ, raw)
}

// CheckBuiltinPayloadReferenceIn is CheckBuiltinPayloadReference in draft d.
func CheckBuiltinPayloadReferenceIn(d Draft, typ string, raw []byte) (any, error) {
	return checkBuiltinWith(d, typ, raw, payloadDecoders{referenceDecode, referenceTypeDefine})
}

func referenceTypeDefine(d Draft, raw []byte) (packs.Declaration, error) {
	if err := d.ValidateBuiltin(TypeTypeDefine, raw); err != nil {
		return packs.Declaration{}, err
	}
	return d.ParseDeclaration(raw)
}

func referenceDecode(d Draft, typ string, raw []byte, v any) error {
	if err := d.ValidateBuiltin(typ, raw); err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(raw, v, json.RejectUnknownMembers(true)); err != nil {
		return identity.Wrap(identity.CodeInvalidEvent, "payload", err)
	}
	return nil
}

// SnapshotReflect is Room.Snapshot as it was written before the index was
// encoded by hand: the whole snapshot struct through json.Marshal, the
// event hashes sorted afresh. TestSnapshotEncoding pins the two to the
// same bytes.
func SnapshotReflect(r *Room) ([]byte, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := snapshot{Version: 1, ID: r.id, State: r.st, Registry: r.st.Registry.Snapshot()}
	if m, ok := r.index.(*MemoryIndex); ok {
		s.Records = m.records
		s.Events = make([]envelope.Hash, 0, len(m.events))
		for h := range m.events {
			s.Events = append(s.Events, h)
		}
		slices.SortFunc(s.Events, func(a, b envelope.Hash) int { return bytes.Compare(a[:], b[:]) })
	}
	return json.Marshal(s, json.Deterministic(true))
}

// ComputeHashEncoded is ComputeHash from the fields alone, never from the
// text the record was parsed from.
func ComputeHashEncoded(r *Record) [32]byte {
	var buf [256]byte
	return envelope.Sum(r.appendHashPayload(buf[:0]))
}

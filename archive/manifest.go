package archive

import (
	"crypto/sha3"
	"maps"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// ManifestType is the manifest's "type" value (§19).
const ManifestType = "room.archive"

// Manifest is the archive manifest of §19 (seed draft 2026-07-04). The
// host-assigned members (host, url, generated_at, formats, extra) are the
// host's assertions: §22 asks consumers to treat them as such. Everything
// else is checked against the records by Verify.
type Manifest struct {
	Protocol    string `json:"protocol"` // adp.Protocol
	Type        string `json:"type"`     // ManifestType
	Host        string `json:"host,omitzero"`
	RoomID      string `json:"room_id"`
	URL         string `json:"url,omitzero"`
	GeneratedAt int64  `json:"generated_at"` // Unix ms
	EventCount  int64  `json:"event_count"`
	FirstSeq    int64  `json:"first_seq"`
	LastSeq     int64  `json:"last_seq"`
	// LastHash is the record hash at LastSeq.
	LastHash envelope.Hash `json:"last_hash"`
	// EventsSHA3256 is SHA3-256(JCS(records in seq order)).
	EventsSHA3256 envelope.Hash `json:"events_sha3_256"`
	// ArchiveRoot equals EventsSHA3256, or is the MerkleRoot of the
	// record hashes in seq order.
	ArchiveRoot envelope.Hash `json:"archive_root"`
	// Formats maps a format name ("jsonl", "markdown") to the URL it is
	// served at.
	Formats map[string]string `json:"formats"`
	// Extra is opaque extension data (a JSON object).
	Extra jsontext.Value `json:"extra"`
	// Unknown holds the members §19's manifest does not name, kept as
	// they were (the manifest is only "recommended", so a host may add
	// members). They are host assertions like extra: reported, never
	// verified, and written back by MarshalJSON.
	Unknown map[string]jsontext.Value `json:",embed"`
}

// UnknownMembers returns the names in Unknown, sorted.
func (m *Manifest) UnknownMembers() []string { return slices.Sorted(maps.Keys(m.Unknown)) }

// MerkleRooted reports whether ArchiveRoot is a Merkle root rather than a
// copy of EventsSHA3256.
func (m *Manifest) MerkleRooted() bool { return m.ArchiveRoot != m.EventsSHA3256 }

// MarshalJSON encodes the manifest as indented JSON with members in a
// fixed order; formats and extra are always present ({} when empty).
func (m *Manifest) MarshalJSON() ([]byte, error) {
	type plain Manifest // no methods: no recursion
	w := (*plain)(m)
	if w.Formats == nil || w.Extra == nil {
		c := *w
		if c.Formats == nil {
			c.Formats = map[string]string{}
		}
		if c.Extra == nil {
			c.Extra = jsontext.Value("{}")
		}
		w = &c
	}
	b, err := json.Marshal(w, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	v := jsontext.Value(b)
	if err := v.Indent(jsontext.WithIndent("  ")); err != nil {
		return nil, err
	}
	return append(v, '\n'), nil
}

// manifestWire detects absent members: every member the verifier needs is
// required; host, url, generated_at, formats and extra are optional.
type manifestWire struct {
	Protocol      *string                   `json:"protocol"`
	Type          *string                   `json:"type"`
	Host          string                    `json:"host"`
	RoomID        *string                   `json:"room_id"`
	URL           string                    `json:"url"`
	GeneratedAt   int64                     `json:"generated_at"`
	EventCount    *int64                    `json:"event_count"`
	FirstSeq      *int64                    `json:"first_seq"`
	LastSeq       *int64                    `json:"last_seq"`
	LastHash      *string                   `json:"last_hash"`
	EventsSHA3256 *string                   `json:"events_sha3_256"`
	ArchiveRoot   *string                   `json:"archive_root"`
	Formats       *map[string]string        `json:"formats"`
	Extra         jsontext.Value            `json:"extra"`
	Unknown       map[string]jsontext.Value `json:",embed"`
}

// MaxManifestBytes bounds the manifest ParseManifest accepts.
const MaxManifestBytes = 1 << 20

// ParseManifest decodes a manifest strictly: strict JSON (no duplicate
// names, valid Unicode, safe integers), protocol agent-discourse/1.0,
// type room.archive, the members Verify needs present and of the right
// type, hashes in canonical base64url, extra an object. Members §19 does
// not name are kept in [Manifest.Unknown] and reported by Verify, not
// refused: §19 gives the manifest as "recommended", so a host may add to
// it. It does not compare the manifest with any records; Verify does.
// Failures are invalid_manifest.
//
// Only the seed draft's manifest is accepted: a later-draft manifest
// lacks event_count, first_seq, events_sha3_256 and archive_root, and is
// refused for that.
func ParseManifest(b []byte) (*Manifest, error) {
	if len(b) > MaxManifestBytes {
		return nil, identity.NewError(CodeInvalidManifest, "manifest larger than 1 MiB")
	}
	var w manifestWire
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return nil, identity.Wrap(CodeInvalidManifest, "manifest", err)
	}
	switch {
	case w.Protocol == nil || *w.Protocol != adp.Protocol:
		return nil, identity.Errorf(CodeInvalidManifest, "manifest protocol must be %q", adp.Protocol)
	case w.Type == nil || *w.Type != ManifestType:
		return nil, identity.Errorf(CodeInvalidManifest, "manifest type must be %q", ManifestType)
	case w.RoomID == nil || *w.RoomID == "":
		return nil, identity.NewError(CodeInvalidManifest, "manifest has no room_id")
	case w.EventCount == nil || w.FirstSeq == nil || w.LastSeq == nil:
		return nil, identity.NewError(CodeInvalidManifest, "manifest needs event_count, first_seq and last_seq")
	case w.LastHash == nil || w.EventsSHA3256 == nil || w.ArchiveRoot == nil:
		return nil, identity.NewError(CodeInvalidManifest, "manifest needs last_hash, events_sha3_256 and archive_root")
	case w.Extra != nil && w.Extra.Kind() != '{':
		return nil, identity.NewError(CodeInvalidManifest, "manifest extra must be a JSON object")
	}
	m := &Manifest{
		Protocol: *w.Protocol, Type: *w.Type, Host: w.Host, RoomID: *w.RoomID, URL: w.URL,
		GeneratedAt: w.GeneratedAt, EventCount: *w.EventCount, FirstSeq: *w.FirstSeq, LastSeq: *w.LastSeq,
		Extra: w.Extra, Unknown: w.Unknown,
	}
	if w.Formats != nil {
		m.Formats = *w.Formats
	}
	for _, h := range []struct {
		name string
		text *string
		dst  *envelope.Hash
	}{
		{"last_hash", w.LastHash, &m.LastHash},
		{"events_sha3_256", w.EventsSHA3256, &m.EventsSHA3256},
		{"archive_root", w.ArchiveRoot, &m.ArchiveRoot},
	} {
		v, err := envelope.ParseHash(*h.text)
		if err != nil {
			return nil, identity.Wrap(CodeInvalidManifest, "manifest "+h.name, err)
		}
		*h.dst = v
	}
	return m, nil
}

// check is the part of §19 that needs no records: an archive holds the
// room from its room.create (first_seq 1) without gaps.
func (m *Manifest) check() error {
	switch {
	case m.FirstSeq != 1:
		return mismatch("manifest first_seq is %d; an archive carries the room from its room.create at seq 1", m.FirstSeq)
	case m.LastSeq < m.FirstSeq:
		return mismatch("manifest last_seq %d is before first_seq %d", m.LastSeq, m.FirstSeq)
	case m.EventCount != m.LastSeq-m.FirstSeq+1:
		return mismatch("manifest event_count %d does not span seq %d..%d", m.EventCount, m.FirstSeq, m.LastSeq)
	}
	return nil
}

// digest accumulates events_sha3_256 incrementally: JCS of an array is
// "[" + the canonical elements joined by "," + "]".
type digest struct {
	h *sha3.SHA3
	n int64
}

func newDigest() *digest {
	d := &digest{h: sha3.New256()}
	d.h.Write([]byte{'['})
	return d
}

// add absorbs one record in canonical form.
func (d *digest) add(canon []byte) {
	if d.n > 0 {
		d.h.Write([]byte{','})
	}
	d.h.Write(canon)
	d.n++
}

func (d *digest) sum() envelope.Hash {
	d.h.Write([]byte{']'})
	var out envelope.Hash
	d.h.Sum(out[:0])
	return out
}

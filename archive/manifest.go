package archive

import (
	"crypto/sha3"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
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

// Manifest is an archive manifest: §19 of the seed draft (2026-07-04), or
// §18 of the 2026-09-24 draft, as Draft says. The host-assigned members
// (host, url, generated_at, formats, extra) are the host's assertions:
// §22 asks consumers to treat them as such. Everything else is checked
// against the records by Verify.
//
// The two drafts' manifests share protocol, type, room_id, url,
// generated_at, last_seq, last_hash, formats and extra. Only the seed's has
// host, event_count, first_seq, events_sha3_256 and archive_root; only the
// 2026-09-24 draft's has packs, and its last_hash alone commits to the
// records (through the pre_hash chain). MarshalJSON writes the members of
// the manifest's draft.
type Manifest struct {
	// Draft is the draft whose manifest this is; the zero value is the
	// default draft. It is not a member: ParseManifestWith recognizes it.
	Draft adp.Draft `json:"-"`
	// Packs lists the external pack documents the room imported
	// (2026-09-24 only): each one's import URL, digest, and the URL
	// serving the exact bytes the host verified.
	Packs []ArchivedPack `json:"-"`

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

// ArchivedPack is one entry of a 2026-09-24 manifest's packs (§18).
type ArchivedPack struct {
	Pack   string `json:"pack"`   // the HTTPS URL the import named
	Digest string `json:"digest"` // "<algorithm>:<base64url>" of the document
	URL    string `json:"url"`    // where the archive serves the exact bytes
}

// UnknownMembers returns the names in Unknown, sorted.
func (m *Manifest) UnknownMembers() []string { return slices.Sorted(maps.Keys(m.Unknown)) }

// MerkleRooted reports whether ArchiveRoot is a Merkle root rather than a
// copy of EventsSHA3256.
func (m *Manifest) MerkleRooted() bool { return m.ArchiveRoot != m.EventsSHA3256 }

// MarshalJSON encodes the manifest as indented JSON with members in a
// fixed order, those of its draft; formats and extra are always present
// ({} when empty).
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
	var in any = w
	if m.Draft.OrDefault() != adp.Draft20260704 {
		in = laterManifest{
			Protocol: w.Protocol, Type: w.Type, RoomID: w.RoomID, URL: w.URL, GeneratedAt: w.GeneratedAt,
			LastSeq: w.LastSeq, LastHash: w.LastHash, Formats: w.Formats, Packs: w.Packs, Extra: w.Extra, Unknown: w.Unknown,
		}
	}
	b, err := json.Marshal(in, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	v := jsontext.Value(b)
	if err := v.Indent(jsontext.WithIndent("  ")); err != nil {
		return nil, err
	}
	return append(v, '\n'), nil
}

// laterManifest is the 2026-09-24 draft's manifest as MarshalJSON writes
// it.
type laterManifest struct {
	Protocol    string                    `json:"protocol"`
	Type        string                    `json:"type"`
	RoomID      string                    `json:"room_id"`
	URL         string                    `json:"url"`
	GeneratedAt int64                     `json:"generated_at"`
	LastSeq     int64                     `json:"last_seq"`
	LastHash    envelope.Hash             `json:"last_hash"`
	Formats     map[string]string         `json:"formats"`
	Packs       []ArchivedPack            `json:"packs,omitzero"`
	Extra       jsontext.Value            `json:"extra"`
	Unknown     map[string]jsontext.Value `json:",embed"`
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
	if err := checkKind(w.Protocol, w.Type); err != nil {
		return nil, err
	}
	switch {
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
// room from its room.create (first_seq 1) without gaps. A 2026-09-24
// manifest names last_seq alone, which ParseManifestWith checks.
func (m *Manifest) check() error {
	if m.Draft.OrDefault() != adp.Draft20260704 {
		if m.LastSeq < 1 {
			return mismatch("manifest last_seq %d is not a positive seq", m.LastSeq)
		}
		return nil
	}
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

// records is how many records the manifest says the log holds.
func (m *Manifest) records() int64 {
	if m.Draft.OrDefault() != adp.Draft20260704 {
		return m.LastSeq
	}
	return m.EventCount
}

// seedOnly are the members only the seed's manifest has; a manifest with
// any of them is the seed's.
var seedOnly = [...]string{"events_sha3_256", "archive_root", "event_count", "first_seq"}

// ManifestOptions configures ParseManifestWith. A nil *ManifestOptions
// means defaults: the draft recognized from the manifest, HTTPS URLs only.
type ManifestOptions struct {
	// Draft is the draft the manifest must follow; the zero value
	// recognizes it: a manifest with events_sha3_256, archive_root,
	// event_count or first_seq (members only the seed's has) is the
	// 2026-07-04 draft's, any other the 2026-09-24 draft's. A manifest of
	// another draft than a non-zero Draft is refused, naming both.
	Draft adp.Draft
	// AllowLoopbackHTTP admits plain-HTTP loopback URLs
	// (http://127.0.0.1:…) in a 2026-09-24 manifest's url, formats and
	// packs, for archives of a local development host; by default they
	// must be HTTPS.
	AllowLoopbackHTTP bool
}

// DetectDraft returns the draft whose manifest b is, by its members (see
// ManifestOptions.Draft). b must be a JSON object.
func DetectDraft(b []byte) (adp.Draft, error) {
	members, err := strictjson.SplitObject(b)
	if err != nil {
		return 0, identity.Wrap(CodeInvalidManifest, "manifest", err)
	}
	for _, mb := range members {
		if slices.Contains(seedOnly[:], mb.Name) {
			return adp.Draft20260704, nil
		}
	}
	return adp.Draft20260924, nil
}

// ParseManifestWith decodes a manifest of either draft strictly: the
// seed's as ParseManifest does, the 2026-09-24 draft's (§18) with
// protocol agent-discourse/1.0, type room.archive, room_id a room ID, url
// an HTTPS URL, generated_at a timestamp, last_seq a positive safe
// integer, last_hash a hash, formats an object of HTTPS URLs with jsonl,
// packs (when present) closed {pack, digest, url} entries with HTTPS URLs
// and a sha256 or sha3-256 digest, and extra an object. Other members are
// kept in Unknown. Failures are invalid_manifest; a manifest of another
// draft than opts.Draft names both drafts.
func ParseManifestWith(b []byte, opts *ManifestOptions) (*Manifest, error) {
	var o ManifestOptions
	if opts != nil {
		o = *opts
	}
	if len(b) > MaxManifestBytes {
		return nil, identity.NewError(CodeInvalidManifest, "manifest larger than 1 MiB")
	}
	if err := strictjson.Validate(b); err != nil {
		return nil, identity.Wrap(CodeInvalidManifest, "manifest", err)
	}
	d, err := DetectDraft(b)
	if err != nil {
		return nil, err
	}
	if o.Draft != 0 && o.Draft.OrDefault() != d {
		why := "it has none of events_sha3_256, archive_root, event_count and first_seq"
		if d == adp.Draft20260704 {
			why = "it has the seed's digests and counts"
		}
		return nil, identity.Errorf(CodeInvalidManifest, "the manifest is a %s-draft manifest (%s); this verification expects the %s draft", d, why, o.Draft.OrDefault())
	}
	if d == adp.Draft20260704 {
		return ParseManifest(b)
	}
	return parseLaterManifest(b, o.AllowLoopbackHTTP)
}

// laterManifestWire detects absent members of a 2026-09-24 manifest.
type laterManifestWire struct {
	Protocol    *string                   `json:"protocol"`
	Type        *string                   `json:"type"`
	RoomID      *string                   `json:"room_id"`
	URL         *string                   `json:"url"`
	GeneratedAt *int64                    `json:"generated_at"`
	LastSeq     *int64                    `json:"last_seq"`
	LastHash    *string                   `json:"last_hash"`
	Formats     *map[string]string        `json:"formats"`
	Packs       *[]jsontext.Value         `json:"packs"`
	Extra       jsontext.Value            `json:"extra"`
	Unknown     map[string]jsontext.Value `json:",embed"`
}

// checkKind requires the protocol and type every manifest names.
func checkKind(protocol, typ *string) error {
	switch {
	case protocol == nil || *protocol != adp.Protocol:
		return identity.Errorf(CodeInvalidManifest, "manifest protocol must be %q", adp.Protocol)
	case typ == nil || *typ != ManifestType:
		return identity.Errorf(CodeInvalidManifest, "manifest type must be %q", ManifestType)
	}
	return nil
}

// roomIDPattern is §6.1's room ID.
var roomIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// parseLaterManifest is ParseManifestWith for the 2026-09-24 draft (§18;
// the kernel schema's archiveManifest).
func parseLaterManifest(b []byte, loopback bool) (*Manifest, error) {
	var w laterManifestWire
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return nil, identity.Wrap(CodeInvalidManifest, "manifest", err)
	}
	if err := checkKind(w.Protocol, w.Type); err != nil {
		return nil, err
	}
	switch {
	case w.RoomID == nil || !roomIDPattern.MatchString(*w.RoomID):
		return nil, identity.NewError(CodeInvalidManifest, "manifest room_id must be a room ID (1 to 64 of A-Z a-z 0-9 _ -)")
	case w.URL == nil || w.GeneratedAt == nil || w.LastSeq == nil || w.LastHash == nil || w.Formats == nil:
		return nil, identity.NewError(CodeInvalidManifest, "a 2026-09-24 manifest needs room_id, url, generated_at, last_seq, last_hash and formats")
	case *w.GeneratedAt < 0:
		return nil, identity.NewError(CodeInvalidManifest, "manifest generated_at is negative")
	case *w.LastSeq < 1:
		return nil, identity.NewError(CodeInvalidManifest, "manifest last_seq must be a positive seq")
	case w.Extra != nil && w.Extra.Kind() != '{':
		return nil, identity.NewError(CodeInvalidManifest, "manifest extra must be a JSON object")
	}
	m := &Manifest{
		Draft: adp.Draft20260924, Protocol: *w.Protocol, Type: *w.Type, RoomID: *w.RoomID, URL: *w.URL,
		GeneratedAt: *w.GeneratedAt, LastSeq: *w.LastSeq, Formats: *w.Formats, Extra: w.Extra, Unknown: w.Unknown,
	}
	h, err := envelope.ParseHash(*w.LastHash)
	if err != nil {
		return nil, identity.Wrap(CodeInvalidManifest, "manifest last_hash", err)
	}
	m.LastHash = h
	if err := checkURL("url", m.URL, loopback); err != nil {
		return nil, err
	}
	if _, ok := m.Formats["jsonl"]; !ok {
		return nil, identity.NewError(CodeInvalidManifest, "manifest formats must name jsonl")
	}
	for _, name := range slices.Sorted(maps.Keys(m.Formats)) {
		if err := checkURL("formats."+name, m.Formats[name], loopback); err != nil {
			return nil, err
		}
	}
	if w.Packs != nil {
		m.Packs = make([]ArchivedPack, 0, len(*w.Packs))
		for i, raw := range *w.Packs {
			ctx := fmt.Sprintf("manifest packs[%d]", i)
			var p ArchivedPack
			if err := strictjson.Unmarshal(raw, &p); err != nil {
				return nil, identity.Wrap(CodeInvalidManifest, ctx, err)
			}
			if !packDigest.MatchString(p.Digest) {
				return nil, identity.Errorf(CodeInvalidManifest, "%s digest %.80q is not sha256: or sha3-256: and 43 base64url characters", ctx, p.Digest)
			}
			for _, u := range [...]struct{ name, v string }{{"pack", p.Pack}, {"url", p.URL}} {
				if err := checkURL(ctx+"."+u.name, u.v, loopback); err != nil {
					return nil, err
				}
			}
			m.Packs = append(m.Packs, p)
		}
	}
	return m, nil
}

// packDigest is the kernel schema's contentDigest (2026-09-24).
var packDigest = regexp.MustCompile(`^(sha256|sha3-256):[A-Za-z0-9_-]{43}$`)

// checkURL requires an absolute HTTPS URL with a host and no user
// information, or with loopback, an HTTP URL of a loopback host.
func checkURL(name, s string, loopback bool) error {
	u, err := url.Parse(s)
	if err == nil && u.IsAbs() && u.User == nil {
		_, err = identity.OriginOf(u, &identity.OriginOptions{AllowLoopbackHTTP: loopback})
	} else if err == nil {
		err = errors.New("not an absolute URL without user information")
	}
	if err != nil {
		return identity.Errorf(CodeInvalidManifest, "manifest %s %.200q is not an HTTPS URL: %v", name, s, err)
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

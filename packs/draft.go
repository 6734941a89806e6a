package packs

import (
	"fmt"
	"slices"
)

// Draft names one dated draft of ADP 1.0. The SDK speaks two: the
// 2026-07-04 draft (the seed text, the default) and the 2026-09-24 draft
// (the English upstream text with its schema, packs and vectors). They
// share the protocol value "agent-discourse/1.0", so a draft is never read
// from an event: a host serves the one it is configured for, and a client
// or verifier takes it from configuration, a discovery document or an
// archive manifest.
//
// The zero value means the default draft, [Draft20260704]: every API that
// took no draft before behaves as it did. Each package keeps what differs
// between drafts in one table indexed by Draft, so a third draft is one
// more constant and one more row, not a copy of the code.
//
// Draft is also adp.Draft (package adp re-exports it); it is
// defined here, the lowest package whose rules depend on it (kernel
// schemas, registered packs, the type-schema profile).
type Draft uint8

// The drafts the SDK speaks.
const (
	// Draft20260704 is the seed draft: received_at in records, eleven
	// built-in types, HTTP join requests, the exact-head precondition,
	// events_sha3_256 in the archive manifest.
	Draft20260704 Draft = 1
	// Draft20260924 is the later draft: accepted_at in records, twelve
	// built-in types with a signed room.join.request, five freshness
	// classes, host-bound room.create, invites and open roles, redaction,
	// the type-schema profile and a last_hash-committed archive manifest.
	Draft20260924 Draft = 2
)

// DefaultDraft is the draft the zero Draft stands for.
const DefaultDraft = Draft20260704

// drafts lists the drafts in date order; draftNames their dates.
var (
	drafts     = [...]Draft{Draft20260704, Draft20260924}
	draftNames = [...]string{Draft20260704: "2026-07-04", Draft20260924: "2026-09-24"}
)

// Drafts returns every draft the SDK speaks, oldest first.
func Drafts() []Draft { return slices.Clone(drafts[:]) }

// OrDefault returns d, or DefaultDraft for the zero Draft.
func (d Draft) OrDefault() Draft {
	if d == 0 {
		return DefaultDraft
	}
	return d
}

// Known reports whether d is the zero Draft or one of Drafts.
func (d Draft) Known() bool { return d == 0 || slices.Contains(drafts[:], d) }

// String returns the draft's date, "2026-07-04" or "2026-09-24"; the zero
// Draft prints as the default's date.
func (d Draft) String() string {
	d = d.OrDefault()
	if !d.Known() {
		return fmt.Sprintf("Draft(%d)", uint8(d))
	}
	return draftNames[d]
}

// ParseDraft reads a draft's date, as String writes it.
func ParseDraft(s string) (Draft, error) {
	for _, d := range drafts {
		if draftNames[d] == s {
			return d, nil
		}
	}
	return 0, fmt.Errorf("unknown ADP draft %q (known: 2026-07-04, 2026-09-24)", clip(s))
}

// MarshalText writes the draft's date.
func (d Draft) MarshalText() ([]byte, error) {
	if !d.Known() {
		return nil, fmt.Errorf("unknown ADP draft %d", uint8(d))
	}
	return []byte(d.String()), nil
}

// UnmarshalText reads a draft's date (ParseDraft).
func (d *Draft) UnmarshalText(b []byte) error {
	v, err := ParseDraft(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// index is d's row in the per-draft tables; it panics for a Draft that
// is not Known, which only a conversion from an arbitrary integer makes.
func (d Draft) index() int {
	d = d.OrDefault()
	if !d.Known() {
		panic(fmt.Sprintf("packs: unknown ADP draft %d", uint8(d)))
	}
	return int(d)
}

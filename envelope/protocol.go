package envelope

import "slices"

// Protocol declares what a named protocol adds to the closed event object of
// Agent Identity: the top-level fields beyond the six common ones.
//
// The protocols this module implements are a fixed table in this package
// ([DiscourseProtocol], [ProfileProtocol]); [Parse], [Verify] and [Sign]
// use it, so their results never depend on which packages are linked. An
// event of any other protocol may carry only the six common fields unless
// the caller passes that protocol's declaration to [ParseWith],
// [VerifyWith], [SignWith] or [VerifierOptions].Protocols.
type Protocol struct {
	// Name is the event "protocol" value, e.g. "agent-discourse/1.0".
	Name string
	// Fields are the extra top-level event members the protocol defines.
	Fields []string
}

// Names of the protocols this module implements.
const (
	// DiscourseName is the protocol value of Agent Discourse (ADP) 1.0.
	DiscourseName = "agent-discourse/1.0"
	// ProfileName is the protocol value of Agent Profile 1.0.
	ProfileName = "agent-profile/1.0"
)

// The protocols this module implements. These variables are copies for
// callers to read or pass along; the closure Parse applies comes from an
// internal table that assigning to them does not change.
var (
	// DiscourseProtocol is ADP 1.0 (the 2026-07-04 draft, §6): events add
	// room_id, base_seq, base_hash and mentions.
	DiscourseProtocol = Protocol{Name: DiscourseName, Fields: []string{"base_hash", "base_seq", "mentions", "room_id"}}
	// ProfileProtocol is Agent Profile 1.0: events carry exactly the six
	// Identity fields.
	ProfileProtocol = Protocol{Name: ProfileName}
)

// builtin is the closure table Parse uses; its own slices, so that nothing
// a caller does to the exported variables reaches it.
var builtin = []Protocol{
	{Name: DiscourseName, Fields: []string{"base_hash", "base_seq", "mentions", "room_id"}},
	{Name: ProfileName},
}

// LookupProtocol returns the declaration of a protocol this module
// implements. For any other name it returns a Protocol with no extra fields
// and false: such events carry exactly the six common fields unless the
// caller passes its Protocol explicitly.
func LookupProtocol(name string) (Protocol, bool) {
	for _, p := range builtin {
		if p.Name == name {
			return Protocol{Name: p.Name, Fields: slices.Clone(p.Fields)}, true
		}
	}
	return Protocol{Name: name}, false
}

// closure returns the fields an event of protocol name may add: from the
// first of extra with that name, else from the built-in table, else none.
func closure(name string, extra []Protocol) []string {
	for _, p := range extra {
		if p.Name == name {
			return p.Fields
		}
	}
	for _, p := range builtin {
		if p.Name == name {
			return p.Fields
		}
	}
	return nil
}

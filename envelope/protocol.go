package envelope

import (
	"slices"
	"sync"
)

// Protocol declares what a named protocol adds to the closed event object of
// Agent Identity: the top-level fields beyond the six common ones. Protocol
// packages register theirs (ADP: room_id, base_seq, base_hash, mentions;
// Profile: none) so that this package can enforce closedness without
// importing them.
type Protocol struct {
	// Name is the event "protocol" value, e.g. "agent-discourse/1.0".
	Name string
	// Fields are the extra top-level event members the protocol defines.
	Fields []string
}

var registry sync.Map // name → Protocol

// RegisterProtocol declares p's extra event fields. Registering the same
// name twice with different fields panics: closedness must not depend on
// import order.
func RegisterProtocol(p Protocol) {
	p.Fields = slices.Clone(p.Fields)
	slices.Sort(p.Fields)
	if prev, loaded := registry.LoadOrStore(p.Name, p); loaded && !slices.Equal(prev.(Protocol).Fields, p.Fields) {
		panic("envelope: protocol " + p.Name + " registered twice with different fields")
	}
}

// LookupProtocol returns the registered declaration for name. An
// unregistered protocol defines no extra fields: its events carry exactly
// the six common ones.
func LookupProtocol(name string) (Protocol, bool) {
	p, ok := registry.Load(name)
	if !ok {
		return Protocol{Name: name}, false
	}
	return p.(Protocol), true
}

func (p Protocol) allows(field string) bool {
	_, ok := slices.BinarySearch(p.Fields, field)
	return ok
}

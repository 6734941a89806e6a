package packs

import (
	"bytes"
	_ "embed"
	"fmt"
	"slices"
	"sync"

	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/typeschema"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// registeredJSON is a byte-exact copy of agent-discourse/1.0.packs.json
// (ldclabs/agent-protocols @ a029b337, sha256 bcbc5f57ff2e3519…), which
// matches Appendix A of the 2026-07-04 text point by point.
//
//go:embed packs.json
var registeredJSON []byte

// registered20260924JSON is a byte-exact copy of the 2026-09-24 draft's
// agent-discourse/1.0.packs.json (ldclabs/agent-protocols @ d1e038b1,
// sha256 0ea3515795e18f1c…): claim.update added to moderation,
// session.candidate dropped from realtime, integer reaction scores, no
// version member.
//
//go:embed packs-2026-09-24.json
var registered20260924JSON []byte

// Pack is a versioned set of type definitions (§13.5).
type Pack struct {
	ID          string         `json:"id"`    // the use id, such as "adp:reactions/1.0"
	Title       string         `json:"title"` // short human-readable name
	Description string         `json:"description,omitempty"`
	Types       []*Definition  `json:"types"`          // in document order; shared, do not modify
	Extra       jsontext.Value `json:"extra,omitzero"` // opaque extension data
}

type registeredSet struct {
	ids   []string
	packs map[string]*Pack
}

// registeredSets parses each draft's embedded packs once, on first use. It
// panics if an embedded file is broken, which the tests rule out.
var registeredSets [len(typeRules)]func() *registeredSet

func init() {
	for i := range typeRules {
		if typeRules[i].registered != nil {
			d := Draft(i)
			registeredSets[i] = sync.OnceValue(func() *registeredSet {
				ps, err := parsePackDocument(d.rules().registered, defaultCache, d.limits())
				if err != nil {
					panic("packs: embedded registered packs: " + err.Error())
				}
				rs := &registeredSet{packs: make(map[string]*Pack, len(ps))}
				for _, p := range ps {
					rs.ids = append(rs.ids, p.ID)
					rs.packs[p.ID] = p
				}
				return rs
			})
		}
	}
}

// registered returns d's registered packs.
func (d Draft) registered() *registeredSet { return registeredSets[d.index()]() }

// RegisteredPackIDs returns the ids of the default draft's registered
// packs (Appendix A) in document order; see [Draft.RegisteredPackIDs].
func RegisteredPackIDs() []string { return DefaultDraft.RegisteredPackIDs() }

// RegisteredPackIDs returns the ids of the draft's registered packs in
// document order, for the discovery document's registered_packs. Both
// drafts register the same five ids with different contents.
func (d Draft) RegisteredPackIDs() []string { return slices.Clone(d.registered().ids) }

// RegisteredPack returns the default draft's registered pack with the
// given use id; see [Draft.RegisteredPack].
func RegisteredPack(id string) (*Pack, bool) { return DefaultDraft.RegisteredPack(id) }

// RegisteredPack returns the draft's registered pack with the given use
// id, such as "adp:deliberation/1.0". Its definitions are shared and must
// not be modified.
func (d Draft) RegisteredPack(id string) (*Pack, bool) {
	p, ok := d.registered().packs[id]
	if !ok {
		return nil, false
	}
	cp := *p
	cp.Types = slices.Clone(p.Types)
	return &cp, true
}

// RegisteredDocument returns the default draft's raw embedded packs
// document; see [Draft.RegisteredDocument].
func RegisteredDocument() []byte { return DefaultDraft.RegisteredDocument() }

// RegisteredDocument returns the draft's raw embedded packs document, for
// archives that want to include the registered packs alongside external
// ones.
func (d Draft) RegisteredDocument() []byte { return bytes.Clone(d.rules().registered) }

// parsePackDocument parses a pack document ({protocol, packs:[…]}) the way
// the kernel schema's packDocument describes it: the top level is open,
// packs and type definitions are closed. Type names must be unique across
// the document, because an import materializes them side by side.
// Failures are invalid_event; callers re-label them.
func parsePackDocument(raw []byte, cache *SchemaCache, lim limits) ([]*Pack, error) {
	v, err := typeschema.Decode(raw)
	if err != nil {
		return nil, identity.Wrap(identity.CodeInvalidEvent, "pack document", err)
	}
	if se := lim.draft.kernel().packDocument.Validate(v); se != nil {
		return nil, schemaErr(identity.CodeInvalidEvent, "invalid pack document", se)
	}
	var doc struct {
		Packs []jsontext.Value `json:"packs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, identity.Wrap(identity.CodeInvalidEvent, "pack document", err)
	}
	seen := make(map[string]bool)
	out := make([]*Pack, 0, len(doc.Packs))
	for i, pr := range doc.Packs {
		var w struct {
			ID          string           `json:"id"`
			Title       string           `json:"title"`
			Description string           `json:"description"`
			Types       []jsontext.Value `json:"types"`
			Extra       jsontext.Value   `json:"extra"`
		}
		if err := json.Unmarshal(pr, &w, json.RejectUnknownMembers(true)); err != nil {
			return nil, identity.Wrap(identity.CodeInvalidEvent, fmt.Sprintf("packs[%d]", i), err)
		}
		p := &Pack{ID: w.ID, Title: w.Title, Description: w.Description, Extra: w.Extra}
		for j, tr := range w.Types {
			def, err := parseDefinition(tr, cache, lim)
			if err != nil {
				return nil, withContext(err, fmt.Sprintf("packs[%d].types[%d]", i, j))
			}
			if seen[def.Type] {
				return nil, lim.conflict("pack document defines type %q twice", def.Type)
			}
			seen[def.Type] = true
			p.Types = append(p.Types, def)
		}
		out = append(out, p)
	}
	return out, nil
}

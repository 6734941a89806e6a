package profile

import (
	"slices"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/strictjson"
)

// Document is a materialized profile document (§5): the payload members of
// the current update exactly as signed, plus updated_at (that update's
// created_at) and event_id (its hash). Its JSON is the document a service
// serves; the embedded Payload's members appear at the top level.
//
// A Document is a plain value with no internal synchronization.
type Document struct {
	Payload
	// UpdatedAt is the created_at of the update, in Unix milliseconds.
	UpdatedAt int64 `json:"updated_at"`
	// EventID is the hash of the update envelope.
	EventID envelope.Hash `json:"event_id"`
}

// UpdatedTime returns UpdatedAt as a time.Time.
func (d *Document) UpdatedTime() time.Time { return time.UnixMilli(d.UpdatedAt) }

// Materialize returns the document of one update envelope: the payload as
// signed with updated_at = created_at and event_id = hash. It is a full
// replacement — nothing of an earlier document carries over.
//
// The envelope is verified first (VerifyUpdate with NoLimits: it was
// accepted under some service's limits). Which update is current is a
// matter of nonces; see Latest.
func Materialize(env *envelope.Envelope) (*Document, error) {
	p, err := VerifyUpdate(env, NoLimits())
	if err != nil {
		return nil, err
	}
	return &Document{Payload: *p, UpdatedAt: env.Event().CreatedAt, EventID: env.Hash()}, nil
}

// Latest returns the current update among accepted updates of one agent:
// the one with the greatest nonce, not the latest created_at (§5). The
// same envelope may appear more than once; two different envelopes with
// one nonce (a key that signed conflicting updates), updates of different
// agents or an empty list are invalid_request errors. It does not verify
// signatures; Materialize does.
func Latest(envs []*envelope.Envelope) (*envelope.Envelope, error) {
	var best *envelope.Envelope
	for _, e := range envs {
		if e == nil {
			return nil, identity.NewError(identity.CodeInvalidRequest, "nil update envelope")
		}
		if best == nil {
			best = e
			continue
		}
		be, ee := best.Event(), e.Event()
		switch {
		case ee.Actor != be.Actor:
			return nil, identity.NewError(identity.CodeInvalidRequest, "updates of different agents")
		case ee.Nonce == be.Nonce && e.Hash() != best.Hash():
			return nil, identity.Errorf(identity.CodeInvalidRequest, "two different updates share nonce %d", ee.Nonce)
		case ee.Nonce > be.Nonce:
			best = e
		}
	}
	if best == nil {
		return nil, identity.NewError(identity.CodeInvalidRequest, "no updates")
	}
	return best, nil
}

// documentWire is Document without its JSON methods.
type documentWire Document

var documentRequired = []string{"id", "name", "updated_at", "event_id"}

// ParseDocument strictly decodes a profile document: strict JSON, the
// closed profileDocument shape (payload members, updated_at, event_id; id,
// name, updated_at and event_id required) and the payload rules for its id
// with NoLimits. A parsed document is well-formed, not verified: only its
// signed update (Client.Get does this) makes it trustworthy.
//
// Errors are *identity.Error values with code invalid_response (documents
// come from services) that name the field.
func ParseDocument(b []byte) (*Document, error) {
	d := new(Document)
	if fe := decodeClosed(b, (*documentWire)(d), documentRequired); fe != nil {
		return nil, fe.toError(CodeInvalidResponse, "profile document")
	}
	if d.UpdatedAt < 0 {
		fe := &FieldError{"/updated_at", "is negative"}
		return nil, fe.toError(CodeInvalidResponse, "profile document")
	}
	if fe := d.Payload.check(d.ID, NoLimits().resolve()); fe != nil {
		return nil, fe.toError(CodeInvalidResponse, "profile document")
	}
	return d, nil
}

// UnmarshalJSON implements json.Unmarshaler with ParseDocument, so a
// Document never holds what the strict rules refuse.
func (d *Document) UnmarshalJSON(b []byte) error {
	v, err := ParseDocument(b)
	if err != nil {
		return err
	}
	*d = *v
	return nil
}

// compareDocument compares a served document (a strictly parsed JSON
// text) with the materialization of its update member by member, in RFC
// 8785 form, and returns nil when they are the same.
func compareDocument(raw []byte, want *Document) (*Discrepancy, error) {
	wantJSON, err := json.Marshal(want)
	if err != nil {
		return nil, err
	}
	got, err := canonicalMembers(raw)
	if err != nil {
		return nil, err
	}
	exp, err := canonicalMembers(wantJSON)
	if err != nil {
		return nil, err
	}
	var diff []string
	for name, v := range got {
		if w, ok := exp[name]; !ok || w != v {
			diff = append(diff, name)
		}
	}
	for name := range exp {
		if _, ok := got[name]; !ok {
			diff = append(diff, name)
		}
	}
	if len(diff) == 0 {
		return nil, nil
	}
	slices.Sort(diff)
	return &Discrepancy{Served: slices.Clone(raw), Members: diff}, nil
}

// canonicalMembers maps each top-level member of a JSON object to the RFC
// 8785 form of its value.
func canonicalMembers(b []byte) (map[string]string, error) {
	ms, err := strictjson.SplitObject(b)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ms))
	for _, m := range ms {
		c, err := strictjson.Canonicalize(m.Value)
		if err != nil {
			return nil, err
		}
		out[m.Name] = string(c)
	}
	return out, nil
}

package adp

import (
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/b64url"
)

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

package adp_test

import (
	"slices"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
)

// The closed field set envelope enforces for ADP events is the one adp
// builds and reads: a field added on one side only would make valid events
// unverifiable or let unknown ones through.
func TestEventFieldsMatchEnvelopeTable(t *testing.T) {
	got := []string{adp.FieldRoomID, adp.FieldBaseSeq, adp.FieldBaseHash, adp.FieldMentions}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(envelope.DiscourseProtocol.Fields))
	if !slices.Equal(got, want) || envelope.DiscourseProtocol.Name != adp.Protocol {
		t.Fatalf("adp fields %v, envelope table %v (%s)", got, want, envelope.DiscourseProtocol.Name)
	}
}

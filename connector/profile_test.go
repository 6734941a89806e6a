package connector

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentprotocols/go-sdk/profile/profiletest"
)

// TestProfileUpdate: the update is signed as the active Agent ID (id filled
// in, a different id refused) for a configured profile service only.
func TestProfileUpdate(t *testing.T) {
	_, srv := testHost(t)
	ps := profiletest.NewServer(nil)
	defer ps.Close()
	e := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL, func(o *Options) { o.Profiles = []string{ps.URL} })
	defer e.Close()
	ctx := ctxT(t)
	r := must[*ProfileUpdateResult](t)(e.ProfileUpdate(ctx, ProfileUpdateInput{ProfileService: ps.URL, Profile: jsontext.Value(`{"name":"Alice"}`)}))
	if !strings.Contains(string(r.Profile), e.AgentID().String()) || !strings.Contains(string(r.Profile), `"name":"Alice"`) || len(r.Envelope) == 0 {
		t.Fatalf("profile: %s", r.Profile)
	}
	other := testKey(t, "bob").AgentID().String()
	if _, err := e.ProfileUpdate(ctx, ProfileUpdateInput{ProfileService: ps.URL, Profile: jsontext.Value(`{"id":"` + other + `","name":"Bob"}`)}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("foreign id: %v", err)
	}
	// A second update goes through too (the nonce moved on).
	must[*ProfileUpdateResult](t)(e.ProfileUpdate(ctx, ProfileUpdateInput{ProfileService: ps.URL, Profile: jsontext.Value(`{"name":"Alice 2","description":"reviews"}`)}))
	// Member views carry the verified profile only when asked.
	room := createRoom(t, e, srv.URL)
	ml := must[*MembersListResult](t)(e.MembersList(ctx, "a", MembersListInput{RoomID: room}))
	if ml.Members[0].Profile != nil {
		t.Fatal("profile without include_profiles")
	}
	ml = must[*MembersListResult](t)(e.MembersList(ctx, "a", MembersListInput{RoomID: room, IncludeProfiles: true}))
	if p := ml.Members[0].Profile; p == nil || p.Name != "Alice 2" || p.Description != "reviews" {
		t.Fatalf("profile: %+v", p)
	}
}

package connector

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestResourcesTable: the table holds exactly §4.4's ten resources, five
// URIs and five per-room templates, each named once, described, JSON.
func TestResourcesTable(t *testing.T) {
	want := []string{URIIdentity, URIHosts, URIRooms, URIInboxPending, URIDraftsHeld,
		"agent-protocols://rooms/{room_id}", "agent-protocols://rooms/{room_id}/members",
		"agent-protocols://rooms/{room_id}/timeline", "agent-protocols://rooms/{room_id}/types",
		"agent-protocols://rooms/{room_id}/agent-status"}
	var got []string
	names := map[string]bool{}
	for _, r := range Resources() {
		got = append(got, r.URI)
		if r.Template != strings.Contains(r.URI, "{room_id}") || r.Name == "" || names[r.Name] ||
			r.Description == "" || r.MIMEType != MIMEJSON {
			t.Errorf("resource %+v", r)
		}
		names[r.Name] = true
	}
	if !slices.Equal(got, want) {
		t.Fatalf("resources %q, want %q", got, want)
	}
	// §4.4: connectors SHOULD notify these.
	for _, uri := range []string{URIInboxPending, URIDraftsHeld, "agent-protocols://rooms/{room_id}/timeline",
		"agent-protocols://rooms/{room_id}/agent-status", "agent-protocols://rooms/{room_id}"} {
		if r := Resources()[slices.Index(want, uri)]; r.Updated == "" {
			t.Errorf("%s: no update rule, which §4.4 asks for", uri)
		}
	}
}

// TestLookupResource: a URI names a static resource or one room's
// resource; anything else, a room_id that is empty or holds ?#% among
// them, names none.
func TestLookupResource(t *testing.T) {
	for _, c := range []struct {
		uri, want, room string
	}{
		{URIHosts, URIHosts, ""},
		{"agent-protocols://rooms/r1", "agent-protocols://rooms/{room_id}", "r1"},
		{"agent-protocols://rooms/r1/members", "agent-protocols://rooms/{room_id}/members", "r1"},
		{"agent-protocols://rooms/r1/agent-status", "agent-protocols://rooms/{room_id}/agent-status", "r1"},
		{"agent-protocols://rooms/", "", ""},
		{"agent-protocols://rooms//members", "", ""},
		{"agent-protocols://rooms/r1/nope", "", ""},
		{"agent-protocols://rooms/r1/members/x", "", ""},
		{"agent-protocols://rooms/r%31", "", ""},
		{"agent-protocols://rooms/r1?x", "", ""},
		{"agent-protocols://hosts/", "", ""},
		{"https://example.com/", "", ""},
	} {
		r, room, ok := LookupResource(c.uri)
		switch {
		case !ok && c.want != "":
			t.Errorf("%q: not found, want %s", c.uri, c.want)
		case ok && (r.URI != c.want || room != c.room):
			t.Errorf("%q: %s room %q, want %s room %q", c.uri, r.URI, room, c.want, c.room)
		}
	}
}

// TestResourcesRead reads every resource from an engine's local state, and
// checks the engine notifies the URIs whose rule says so as a room is
// created and written: a room that was never opened is ErrUnknownRoom,
// and a resource asked for another's URI is ErrNotFound.
func TestResourcesRead(t *testing.T) {
	_, srv := testHost(t)
	notified := make(chan string, 256)
	e := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL, func(o *Options) {
		o.Notify = func(uri string) {
			select {
			case notified <- uri:
			default:
			}
		}
	})
	defer e.Close()
	room := createRoom(t, e, srv.URL)
	say(t, e, room, "hello")
	ctx := ctxT(t)
	for _, r := range Resources() {
		uri := strings.Replace(r.URI, "{room_id}", room, 1)
		b, err := r.Read(ctx, e, uri)
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil || len(v) == 0 {
			t.Fatalf("%s: %s: %v", uri, b, err)
		}
		if r.Template {
			if _, err := r.Read(ctx, e, strings.Replace(r.URI, "{room_id}", "never-opened", 1)); !errors.Is(err, ErrUnknownRoom) {
				t.Errorf("%s of a room never opened: %v, want ErrUnknownRoom", r.URI, err)
			}
		}
		if _, err := r.Read(ctx, e, URIIdentity+"x"); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s read with a foreign URI: %v, want ErrNotFound", r.URI, err)
		}
	}
	if b, _ := Resources()[0].Read(ctx, e, URIIdentity); !strings.Contains(string(b), e.agent.String()) {
		t.Errorf("identity: %s", b)
	}
	want := map[string]bool{RoomURI(room): true, RoomURI(room, "timeline"): true}
	timeout := time.After(10 * time.Second)
	for len(want) > 0 {
		select {
		case uri := <-notified:
			delete(want, uri)
		case <-timeout:
			t.Fatalf("never notified: %v", want)
		}
	}
}

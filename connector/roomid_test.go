package connector

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// TestRoomIDBounds (ADP §7.1): room ids outside the charset or over
// MaxRoomIDLen are refused before any request; a failed first open is not
// retained; a stored record is checked to belong to the room it is read
// for.
func TestRoomIDBounds(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	e := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer e.Close()
	for _, id := range []string{"", "a\x00zz", strings.Repeat("a", MaxRoomIDLen+1), "..", "a/b", "a b", "é"} {
		if _, err := e.RoomOpen(ctx, "a", RoomOpenInput{Host: srv.URL, RoomID: id}); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("room_open %q: %v", id, err)
		}
		if _, err := e.Join(ctx, "a", RoomJoinInput{Host: srv.URL, RoomID: id, Role: "speaker"}); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("room_join %q: %v", id, err)
		}
	}
	for i := range 20 {
		if _, err := e.RoomOpen(ctx, "a", RoomOpenInput{Host: srv.URL, RoomID: fmt.Sprintf("missing%03d", i)}); err == nil {
			t.Fatal("opened a missing room")
		}
	}
	e.mu.Lock()
	n := len(e.rooms)
	e.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d failed opens retained", n)
	}
	a := createRoom(t, e, srv.URL)
	b := createRoom(t, e, srv.URL)
	// A record of room b stored under room a's key is refused on reading.
	if err := e.store.Update(func(tx stateTx) error {
		var raw []byte
		if _, err := tx.Get(bRecords, reckey(srv.URL, b, 1), (*jsontext.Value)(&raw)); err != nil {
			return err
		}
		return tx.Put(bRecords, reckey(srv.URL, a, 2), jsontext.Value(raw))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Timeline(ctx, "a", TimelineInput{RoomID: a}); err == nil {
		t.Fatal("a record of another room was read as this room's")
	}
}

// TestRoomIDSchema (ADP §7.1): the tool schemas bound room_id too, so a
// model is told which field to fix before the engine sees it.
func TestRoomIDSchema(t *testing.T) {
	_, srv := testHost(t)
	e := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer e.Close()
	tool, _ := LookupTool("agent_protocols_room_open")
	for _, id := range []string{"a\x00zz", strings.Repeat("a", MaxRoomIDLen+1), "a/b"} {
		args, _ := json.Marshal(map[string]string{"host": srv.URL, "room_id": id})
		_, err := tool.Call(ctxT(t), e, "s", args)
		var te *ToolError
		if !errors.As(err, &te) || te.Code != CodeInvalidArguments || !strings.Contains(string(te.Data), "room_id") {
			t.Errorf("room_id %q: %v", clip(id), err)
		}
	}
}

package connector

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/internal/httpc"
	"github.com/agentprotocols/go-sdk/internal/raceflag"
)

// TestRoomOpenBigRoom: a room of legal records opens whatever the host's
// page size. Through room_open, a
// room of 505 messages of 64 KiB with 32 mentions each, on a host that
// budgets its pages by count only, opens completely with the default
// options; and Options.PageSize and MaxResponseSize reach the host client
// (a 300 KiB bound with 8-record pages still reads it; a bound below one
// record cannot).
func TestRoomOpenBigRoom(t *testing.T) {
	if testing.Short() || raceflag.Enabled {
		t.Skip("writes 34 MB of records; no concurrency to check")
	}
	ctx := ctxT(t)
	_, srv := adphosttest.NewUnbudgetedServer(t, &adphost.Options{RateLimits: adphost.Unlimited(), Heartbeat: -1})
	alice, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: testKey(t, "alice").k, AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec, err := alice.CreateRoom(ctx, adp.RoomCreate{Topic: "big", Visibility: adp.VisibilityPublic, StartTime: now.UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if err := adphosttest.FillBigRoom(ctx, alice, rec.RoomID, 505); err != nil {
		t.Fatal(err)
	}
	f := false
	for name, mut := range map[string]func(*Options){
		"defaults":     func(*Options) {},
		"small bounds": func(o *Options) { o.PageSize, o.MaxResponseSize = 8, 300<<10 },
		"below one":    func(o *Options) { o.MaxResponseSize = 60 << 10 },
	} {
		t.Run(name, func(t *testing.T) {
			bob := openTest(t, t.TempDir(), testKey(t, "bob"), srv.URL, mut)
			defer bob.Close()
			res, err := bob.RoomOpen(ctx, "b", RoomOpenInput{Host: srv.URL, RoomID: rec.RoomID, Subscribe: &f})
			if name == "below one" { // the bound reached the client: no record fits
				if !errors.Is(err, httpc.ErrResponseTooLarge) {
					t.Fatalf("room_open with a 60 KiB bound: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Sync.SyncedSeq != 506 || res.Sync.HeadSeq != 506 {
				t.Fatalf("room_open synced %d of %d", res.Sync.SyncedSeq, res.Sync.HeadSeq)
			}
		})
	}
}

// TestHostExtraMembers: unknown members of a host's unsigned answers are
// ignored (§16), through the engine. A host that adds a
// member to its create response and room resource no longer makes
// room_create report a failure for a room it created, nor room_join fail.
func TestHostExtraMembers(t *testing.T) {
	h, srv, err := adphosttest.NewUnstarted(&adphost.Options{RateLimits: adphost.Unlimited(), Heartbeat: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		b := rec.Body.Bytes()
		if rec.Code/100 == 2 && bytes.HasPrefix(b, []byte(`{"id":`)) { // the create response, the room resource
			b = append([]byte(`{"x_vendor":true,`), b[1:]...)
		}
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		w.Write(b)
	})
	srv.Start()
	defer h.Close()
	defer srv.Close()
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	bob := openTest(t, t.TempDir(), testKey(t, "bob"), srv.URL)
	defer bob.Close()
	if _, err := bob.Join(ctxT(t), "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker"}); err != nil {
		t.Fatalf("room_join: %v", err)
	}
}

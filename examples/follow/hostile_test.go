package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/internal/raceflag"
	"github.com/agentprotocols/go-sdk/sse"
)

// TestTerminalEscapes: untrusted text reaches a terminal inert. A host's error
// code and message full of terminal control sequences (ESC, an OSC title,
// an OSC 52 clipboard write, a C1 CSI) reach stderr escaped.
func TestTerminalEscapes(t *testing.T) {
	evil := "\x1b[31m\x1b]0;pwned\a\x1b[2J\x1b]52;c;aGk=\a\u009b"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"error":{"code":"permission_denied\u001b[31m","message":"` + strings.ReplaceAll(strings.ReplaceAll(evil, "\x1b", `\u001b`), "\a", `\u0007`) + `"}}`))
	}))
	defer srv.Close()
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"--host", srv.URL, "--room", "r1", "--key", keyFile(t, "alice")}, &bytes.Buffer{}, &stderr)
	out := stderr.String()
	if code != exitRefused || strings.ContainsAny(out, "\x1b\a\u009b") || !strings.Contains(out, `\x1b]0;pwned\a`) {
		t.Fatalf("exit %d, stderr %q", code, out)
	}
}

// TestFollowBigRoom: a room of legal records is readable whatever the
// host's page size, through examples/follow:
// a room of 505 messages of 64 KiB with 32 mentions each, on a host that
// budgets its pages by count only, is printed completely.
func TestFollowBigRoom(t *testing.T) {
	if testing.Short() || raceflag.Enabled {
		t.Skip("writes 34 MB of records; no concurrency to check")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, srv := adphosttest.NewUnbudgetedServer(t, &adphost.Options{RateLimits: adphost.Unlimited(), Heartbeat: -1})
	client := func(name string) *adp.Client {
		c, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: testKey(name), AllowLoopbackHTTP: true})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	creator := client("creator")
	now := time.Now()
	rec, err := creator.CreateRoom(ctx, adp.RoomCreate{Topic: "big", Visibility: adp.VisibilityPublic,
		StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client("alice").Join(ctx, rec.RoomID, adp.Join{Role: adp.RoleObserver}); err != nil {
		t.Fatal(err)
	}
	if err := adphosttest.FillBigRoom(ctx, creator, rec.RoomID, 505); err != nil {
		t.Fatal(err)
	}
	if _, err := creator.CloseRoom(ctx, rec.RoomID, adp.Notice{Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr syncBuffer
	o := &options{host: srv.URL, room: rec.RoomID, keyFile: keyFile(t, "alice"), untilEnded: true,
		tune: func(so *sse.Options) {
			so.Backoff = sse.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}
		}}
	if code := follow(ctx, o, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if n := strings.Count(stdout.String(), "\n"); n != 508 { // create, join, 505 messages, close
		t.Fatalf("printed %d lines, want 508; stderr: %s", n, stderr.String())
	}
}

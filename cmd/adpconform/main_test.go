package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adpconform"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/identity"
)

// server starts adphost, optionally behind wrap.
func server(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	h, srv, err := adphosttest.NewUnstarted(nil)
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		srv.Config.Handler = wrap(h)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	return srv.URL
}

// noNonceHeader drops Max-Seen-Nonce from every answer.
func noNonceHeader(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			if k != identity.MaxSeenNonceHeader {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

// TestExitStatus: 0 when the selected MUST checks pass, 1 when one fails,
// 2 for usage errors; --json is the report.
func TestExitStatus(t *testing.T) {
	ctx := context.Background()
	good, bad := server(t, nil), server(t, noNonceHeader)
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"--only", "envelope", good}, &out, &errb); code != 0 {
		t.Fatalf("exit %d against the SDK host\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "CONFORMS") || !strings.Contains(out.String(), "envelope.nonce") {
		t.Fatalf("table:\n%s", out.String())
	}
	out.Reset()
	if code := run(ctx, []string{"--json", "--only", "envelope.nonce,envelope.hash", bad}, &out, &errb); code != 1 {
		t.Fatalf("exit %d against a host without Max-Seen-Nonce\n%s", code, out.String())
	}
	var rep adpconform.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out.String())
	}
	if r := rep.Result("envelope.nonce"); r == nil || r.Verdict != adpconform.Fail || r.Section == "" || r.Evidence == "" {
		t.Fatalf("envelope.nonce in the JSON report: %+v", r)
	}
	if r := rep.Result("envelope.hash"); r == nil || r.Verdict != adpconform.Pass {
		t.Fatalf("envelope.hash in the JSON report: %+v", r)
	}
	out.Reset()
	if code := run(ctx, []string{"--list"}, &out, &errb); code != 0 || strings.Count(out.String(), "\n") != len(adpconform.Checks()) || !strings.Contains(out.String(), "§24.11\t") {
		t.Fatalf("--list: exit %d\n%s", code, out.String())
	}
	for _, args := range [][]string{{}, {"a", "b"}, {"--bogus", good}, {"ftp://x"}} {
		if code := run(ctx, args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	key := filepath.Join(t.TempDir(), "key")
	os.WriteFile(key, []byte("short\n"), 0o600)
	if code := run(ctx, []string{"--moderator-key", key, good}, &out, &errb); code != 2 {
		t.Errorf("a malformed key file: exit %d, want 2", code)
	}
}

// TestModeratorKey: with --moderator-key every room is created by that
// agent.
func TestModeratorKey(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key")
	os.WriteFile(key, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	var out, errb bytes.Buffer
	url := server(t, nil)
	if code := run(context.Background(), []string{"--moderator-key", key, "--only", "room.update,join.public", url}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	mod, err := readKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := adp.NewClient(url, &adp.ClientOptions{Signer: mod, AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for s, err := range c.PublicRooms(context.Background(), adp.RoomQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		if s.Creator != mod.AgentID() {
			t.Fatalf("room %s was created by %s, not the moderator", s.ID, s.Creator)
		}
		n++
	}
	if n < 3 {
		t.Fatalf("%d rooms listed", n)
	}
}

package adphost_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata")

// recorder is a RoundTripper that writes every exchange as txtar files:
// "-- NN METHOD path --" holding the request (body) and the response
// (status, content type, body), with the loopback origin replaced by
// http://HOST and request JWTs by <jwt>, so that the transcript does not
// depend on the port.
type recorder struct {
	base   http.RoundTripper
	origin string
	mu     sync.Mutex
	n      int
	out    bytes.Buffer
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	rb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	fmt.Fprintf(&r.out, "-- %02d %s %s --\n", r.n, req.Method, r.clean(req.URL.RequestURI()))
	if req.Header.Get("Authorization") != "" {
		r.out.WriteString("Authorization: Bearer <jwt>\n")
	}
	if len(body) > 0 {
		r.out.WriteString(r.clean(string(body)) + "\n")
	}
	fmt.Fprintf(&r.out, "=> %d %s\n", resp.StatusCode, resp.Header.Get("Content-Type"))
	if h := resp.Header.Get("Max-Seen-Nonce"); h != "" {
		fmt.Fprintf(&r.out, "Max-Seen-Nonce: %s\n", h)
	}
	r.out.WriteString(strings.TrimRight(r.clean(string(rb)), "\n") + "\n")
	return resp, nil
}

func (r *recorder) clean(s string) string {
	s = strings.ReplaceAll(s, r.origin, "http://HOST")
	return strings.ReplaceAll(s, strings.TrimPrefix(r.origin, "http://"), "HOST")
}

// TestGoldenTranscripts records the main endpoints' requests and answers
// in a deterministic scenario and compares them with
// testdata/transcript.txtar (go test -run Golden -update rewrites it).
func TestGoldenTranscripts(t *testing.T) {
	var roomN, reqN int
	w := newWorld(t, &adphost.Options{
		NewRoomID:    func() string { roomN++; return fmt.Sprintf("room%016d", roomN) },
		NewRequestID: func() string { reqN++; return fmt.Sprintf("jr_%026d", reqN) },
	})
	rec := &recorder{base: w.hc.Transport, origin: w.url}
	hc := &http.Client{Transport: rec}
	ctx := context.Background()
	// The transcript is of the seed's exchanges: alice reads the
	// discovery document first, bob is told the host's draft.
	alice, bob := w.clientWith("alice", hc), w.clientIn("bob", hc, adp.Draft20260704)

	mustv(alice.Discover(ctx))
	room := mustv(alice.CreateRoom(ctx, roomSpec(t, adp.VisibilityRestricted, "Golden"))).RoomID
	mustv(alice.GetRoom(ctx, room))
	jr := mustv(bob.RequestJoin(ctx, room, adp.JoinRequestInput{Role: adp.RoleSpeaker, Reason: ptr("golden")}))
	mustv(alice.JoinRequests(ctx, room))
	mustv(alice.ReviewJoin(ctx, room, adp.JoinReview{Request: jr.Request, Decision: adp.DecisionApprove, Role: adp.RoleSpeaker}))
	mustv(bob.JoinRequest(ctx, room, jr.Request.ID))
	mustv(bob.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker, RequestID: jr.Request.ID}))
	w.clock.Advance(time.Second)
	mustv(bob.SendMessage(ctx, room, text("hello"), alice.AgentID()))
	mustv(bob.PutAgentStatus(ctx, room, adp.AgentStatusInput{State: "idle"}))
	mustv(alice.AgentStatuses(ctx, room))
	mustv(alice.AgentStatus(ctx, room, bob.AgentID()))
	collect(t, alice.PublicRooms(ctx, adp.RoomQuery{}))
	collect(t, bob.MyRooms(ctx, adp.RoomQuery{}))
	w.clock.Advance(time.Second)
	mustv(alice.CloseRoom(ctx, room, adp.Notice{Reason: "done"}))
	if _, _, err := alice.Archive(ctx, room); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join("testdata", "transcript.txtar")
	got := append([]byte("Golden HTTP transcript of the reference host (seed ADP draft): regenerate with go test -run Golden -update.\n"), rec.out.Bytes()...)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("transcript differs at line %d:\n got %s\nwant %s", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("transcript length %d lines, want %d", len(gl), len(wl))
	}
}

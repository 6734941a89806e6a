package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/b64url"
	"github.com/agentprotocols/go-sdk/internal/pulse"
	"github.com/agentprotocols/go-sdk/sse"
)

func TestParseKey(t *testing.T) {
	seed := bytes.Repeat([]byte{0xab}, 32)
	want, _ := identity.NewKeyFromSeed(seed)
	hx, b64 := hex.EncodeToString(seed), b64url.Encode(seed)
	good := map[string]string{
		"hex": hx, "HEX": strings.ToUpper(hx), "hex LF": hx + "\n", "hex CRLF": hx + "\r\n",
		"base64url": b64, "base64url LF": b64 + "\n",
	}
	for name, in := range good {
		k, err := parseKey([]byte(in))
		if err != nil || k.AgentID() != want.AgentID() {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := map[string]string{
		"empty": "", "raw bytes": string(seed), "hex 63": hx[:63], "hex 65": hx + "0", "hex non-digit": "g" + hx[1:],
		"padded base64url": b64 + "=", "std alphabet": strings.NewReplacer("-", "+", "_", "/").Replace(b64) + "+",
		"non-canonical trailing bits": b64[:42] + "v", "leading space": " " + hx, "two line breaks": hx + "\n\n",
		"64-byte key": hex.EncodeToString(append(seed, seed...)), "huge": strings.Repeat("a", 1000),
	}
	for name, in := range bad {
		if _, err := parseKey([]byte(in)); !errors.Is(err, errKeyFormat) {
			t.Errorf("%s: accepted or wrong error: %v", name, err)
		}
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{{}, {"--host", "x", "--room", "r"}, {"--host", "x", "--room", "r", "--key", "k", "extra"}, {"--after", "-1", "--host", "x", "--room", "r", "--key", "k"}} {
		var stderr bytes.Buffer
		if code := run(context.Background(), args, &bytes.Buffer{}, &stderr); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
	dir := t.TempDir()
	kf := filepath.Join(dir, "key")
	os.WriteFile(kf, []byte("not a key\n"), 0o600)
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"--host", "http://127.0.0.1:1", "--room", "r", "--key", kf}, &bytes.Buffer{}, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "64 hexadecimal or 43 unpadded base64url") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// syncBuffer is a bytes.Buffer safe to read while the command writes.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	lines int
	wrote pulse.Pulse // fired on each write; see waitLines
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines += bytes.Count(p, []byte("\n"))
	s.wrote.Fire()
	return s.b.Write(p)
}

// waitLines waits until n lines were written, for at most 20 s.
func (s *syncBuffer) waitLines(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a "not hours" guard only
	defer cancel()
	lines := func() int { s.mu.Lock(); defer s.mu.Unlock(); return s.lines }
	if s.wrote.Wait(ctx, func() bool { return lines() >= n }) != nil {
		t.Fatalf("%d lines written, want %d", lines(), n)
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testKey(name string) *identity.PrivateKey {
	seed := sha256.Sum256([]byte("follow " + name))
	k, _ := identity.NewKeyFromSeed(seed[:])
	return k
}

func keyFile(t *testing.T, name string) string {
	seed := sha256.Sum256([]byte("follow " + name))
	p := filepath.Join(t.TempDir(), name+".key")
	if err := os.WriteFile(p, []byte(hex.EncodeToString(seed[:])+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The command prints exactly the host's records after --after, once each,
// in order, across forced disconnects, and exits 0 after room.close.
func TestFollowUntilEnded(t *testing.T) {
	host, srv := adphosttest.NewServer(t, &adphost.Options{RateLimits: adphost.Unlimited(), Heartbeat: -1})
	ctx := context.Background()
	client := func(name string) *adp.Client {
		c, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: testKey(name), AllowLoopbackHTTP: true})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	creator, alice := client("creator"), client("alice")
	now := time.Now()
	rec, err := creator.CreateRoom(ctx, adp.RoomCreate{Topic: "follow", Visibility: adp.VisibilityPublic,
		StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	room := rec.RoomID
	if _, err := alice.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}); err != nil {
		t.Fatal(err)
	}
	seq := 2 // the room.create and alice's join
	say := func(n int) {
		seq += n
		for i := 0; i < n; i++ {
			if _, err := creator.SendMessage(ctx, room, adp.Message{ContentType: "text/plain", Content: adp.TextContent("line\x1b[2J")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	say(5)

	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	o := &options{host: srv.URL, room: room, keyFile: keyFile(t, "alice"), after: 3, json: true, untilEnded: true,
		tune: func(so *sse.Options) {
			so.Backoff = sse.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}
		}}
	go func() { done <- follow(ctx, o, &stdout, &stderr) }()
	for i := 0; i < 3; i++ {
		say(5)
		stdout.waitLines(t, seq-3) // every record after seq 3 is out: the stream is up
		host.Close()               // ends every live stream: a forced disconnect
		say(5)
	}
	if _, err := creator.CloseRoom(ctx, room, adp.Notice{Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("follow did not exit after room.close")
	}
	var want []string
	for rec, err := range client("auditor").Events(ctx, room, 3) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, string(rec.AppendJSON(nil)))
	}
	got := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("printed %d lines, host has %d after seq 3:\n%s", len(got), len(want), stdout.String())
	}

	// Readable output quotes what agents wrote: no escape reaches the terminal.
	var text syncBuffer
	o.json, o.after = false, 0
	if code := follow(ctx, o, &text, &stderr); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(text.String(), "\x1b") || !strings.Contains(text.String(), `message.create "line\x1b[2J"`) {
		t.Fatalf("readable output:\n%s", text.String())
	}
}

// A permanent refusal exits 1 with the protocol code.
func TestFollowRefused(t *testing.T) {
	_, srv := adphosttest.NewServer(t, &adphost.Options{RateLimits: adphost.Unlimited(), Heartbeat: -1})
	ctx := context.Background()
	creator, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: testKey("creator"), AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec, err := creator.CreateRoom(ctx, adp.RoomCreate{Topic: "follow", Visibility: adp.VisibilityPublic,
		StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run(ctx, []string{"--host", srv.URL, "--room", rec.RoomID, "--key", keyFile(t, "stranger")}, &bytes.Buffer{}, &stderr)
	if code != exitRefused || !strings.Contains(stderr.String(), "code membership_required") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// hostile wraps the reference host: on the live stream every record comes
// first tampered (received_at changed after hashing), then twice.
type hostile struct{ next http.Handler }

func (h hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.next.ServeHTTP(&hostileWriter{w: w}, r)
}

type hostileWriter struct {
	w   http.ResponseWriter
	buf []byte
}

func (hw *hostileWriter) Header() http.Header { return hw.w.Header() }
func (hw *hostileWriter) WriteHeader(s int)   { hw.w.WriteHeader(s) }
func (hw *hostileWriter) Flush()              { hw.w.(http.Flusher).Flush() }

func (hw *hostileWriter) Write(p []byte) (int, error) {
	if !strings.HasPrefix(hw.w.Header().Get("Content-Type"), "text/event-stream") {
		return hw.w.Write(p)
	}
	hw.buf = append(hw.buf, p...)
	for {
		i := bytes.Index(hw.buf, []byte("\n\n"))
		if i < 0 {
			return len(p), nil
		}
		frame := string(hw.buf[:i+2])
		hw.buf = hw.buf[i+2:]
		out := frame
		if strings.HasPrefix(frame, "event: room.event\n") || strings.Contains(frame, "\nevent: room.event\n") {
			out = strings.Replace(frame, `"received_at":1`, `"received_at":2`, 1) + frame + frame
		}
		if _, err := io.WriteString(hw.w, out); err != nil {
			return 0, err
		}
	}
}

// On a hostile stream the command still prints exactly the host's
// records, once each, in order.
func TestFollowHostileStream(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	origin, err := identity.ParseOrigin("http://"+srv.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	host, err := adphost.New(context.Background(), &adphost.Options{Origin: origin, RateLimits: adphost.Unlimited(), Heartbeat: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = hostile{host}
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(host.Close)

	ctx := context.Background()
	client := func(name string) *adp.Client {
		c, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: testKey(name), AllowLoopbackHTTP: true})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	creator, alice := client("creator"), client("alice")
	now := time.Now()
	rec, err := creator.CreateRoom(ctx, adp.RoomCreate{Topic: "hostile", Visibility: adp.VisibilityPublic,
		StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	room := rec.RoomID
	if _, err := alice.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	o := &options{host: srv.URL, room: room, keyFile: keyFile(t, "alice"), json: true, untilEnded: true,
		tune: func(so *sse.Options) {
			so.Backoff = sse.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}
		}}
	go func() { done <- follow(ctx, o, &stdout, &stderr) }()
	for i := 0; i < 20; i++ {
		if _, err := creator.SendMessage(ctx, room, adp.Message{ContentType: "text/plain", Content: adp.TextContent("hi")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := creator.CloseRoom(ctx, room, adp.Notice{}); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("follow did not exit after room.close")
	}
	var want []string
	for rec, err := range client("auditor").Events(ctx, room, 0) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, string(rec.AppendJSON(nil)))
	}
	if got := strings.TrimSuffix(stdout.String(), "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("printed:\n%s\nhost has %d records", got, len(want))
	}
	if !strings.Contains(stderr.String(), "invalid_record") {
		t.Fatalf("no tampered record reported:\n%s", stderr.String())
	}
}

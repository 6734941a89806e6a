package connector

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
)

// Environment of the crash child (TestCrashChild).
const (
	envCrashDir  = "ENGINE_CRASH_DIR"
	envCrashHost = "ENGINE_CRASH_HOST"
	envCrashRoom = "ENGINE_CRASH_ROOM"
	envCrashKey  = "ENGINE_CRASH_KEY" // the test key's name; bob when unset
)

// TestCrashChild is the child process of TestCrashDuringWrite: it opens the
// engine on the given state directory (replaying its outbox) and writes
// messages until it is killed. It does nothing in an ordinary test run.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(envCrashDir)
	if dir == "" {
		t.Skip("crash child: only run by TestCrashDuringWrite")
	}
	name := os.Getenv(envCrashKey)
	if name == "" {
		name = "bob"
	}
	e, err := Open(context.Background(), &Options{Dir: dir, Key: testKey(t, name),
		Hosts: []HostConfig{{Host: os.Getenv(envCrashHost)}}, AllowLoopbackHTTP: true, WritesPerMinute: -1, NoSubscribe: true})
	if err != nil {
		fmt.Println("open failed:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	room := os.Getenv(envCrashRoom)
	for i := 0; ; i++ {
		r, err := e.SendMessage(context.Background(), "c", SendMessageInput{RoomID: room, Content: "crash " + strconv.Itoa(i),
			OnHeadMismatch: OnMismatchSendAnyway})
		if err != nil || r.Status != StatusSent {
			fmt.Println("write failed:", r, err)
			os.Exit(4)
		}
		fmt.Println("sent", i)
	}
}

// recordingHost wraps the reference host and remembers every envelope
// POSTed to it (accepted or not) and every nonce_not_greater answer.
type recordingHost struct {
	h       http.Handler
	mu      sync.Mutex
	nonces  map[string]map[int64]envelope.Hash // actor → nonce → envelope hash
	reused  []string
	nonceNG int
	hits    int
	// before, when set, runs before a POSTed envelope reaches the host.
	before func(actor identity.AgentID)
	// after, when set, runs after the host answered a POSTed envelope,
	// before the answer is sent.
	after func(actor identity.AgentID)
	// down answers every POST with 503 without passing it on.
	down bool
}

func (rh *recordingHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rh.mu.Lock()
	rh.hits++
	rh.mu.Unlock()
	if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/rooms") {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var after func(identity.AgentID)
		var actor identity.AgentID
		if env, err := envelope.Parse(body); err == nil {
			ev := env.Event()
			rh.mu.Lock()
			a := ev.Actor.String()
			if rh.nonces[a] == nil {
				rh.nonces[a] = map[int64]envelope.Hash{}
			}
			if old, ok := rh.nonces[a][ev.Nonce]; ok && old != env.Hash() {
				rh.reused = append(rh.reused, fmt.Sprintf("%s nonce %d", a, ev.Nonce))
			}
			rh.nonces[a][ev.Nonce] = env.Hash()
			before, down := rh.before, rh.down
			after, actor = rh.after, ev.Actor
			rh.mu.Unlock()
			if down {
				http.Error(w, `{"error":{"code":"unavailable","message":"down"}}`, http.StatusServiceUnavailable)
				return
			}
			if before != nil {
				before(ev.Actor)
			}
		}
		rec := httptest.NewRecorder()
		rh.h.ServeHTTP(rec, r)
		if bytes.Contains(rec.Body.Bytes(), []byte("nonce_not_greater")) {
			rh.mu.Lock()
			rh.nonceNG++
			rh.mu.Unlock()
		}
		if after != nil {
			after(actor)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return
	}
	rh.h.ServeHTTP(w, r)
}

// newRecordingServer starts the reference host behind a recordingHost.
func newRecordingServer(t testing.TB) (*recordingHost, *httptest.Server) {
	srv := httptest.NewUnstartedServer(nil)
	o, err := identity.ParseOrigin("http://"+srv.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := adphost.New(context.Background(), &adphost.Options{Origin: o, RateLimits: adphost.Unlimited()})
	if err != nil {
		t.Fatal(err)
	}
	rh := &recordingHost{h: h, nonces: map[string]map[int64]envelope.Hash{}}
	srv.Config.Handler = rh
	srv.Start()
	t.Cleanup(func() { h.Close(); srv.CloseClientConnections(); srv.Close() })
	return rh, srv
}

// startCrashChild starts TestCrashChild in a child process writing to room
// on host as the test key name, with its state in dir; out is its stdout.
func startCrashChild(t *testing.T, dir, host, room, name string) (cmd *exec.Cmd, out io.ReadCloser) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashDir+"="+dir, envCrashHost+"="+host, envCrashRoom+"="+room, envCrashKey+"="+name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// TestCrashDuringWrite SIGKILLs a child process running the engine while
// it writes (50 repetitions, about 3 s; ENGINE_CRASH_REPS overrides), every
// other kill with a power loss (the state log cut after its last flush),
// restarting the engine after each: no nonce is ever used for two envelopes, no
// host ever answers nonce_not_greater, and every outbox entry left by a
// kill is accepted exactly once on restart (the outbox drains with no
// refused entry and every stored record is on the host, once).
func TestCrashDuringWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	reps := 50
	if n, err := strconv.Atoi(os.Getenv("ENGINE_CRASH_REPS")); err == nil && n > 0 {
		reps = n
	}
	rh, srv := newRecordingServer(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	dir := t.TempDir()
	bob := openTest(t, dir, testKey(t, "bob"), srv.URL, func(o *Options) { o.NoSubscribe = true })
	must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker"}))
	bob.Close()

	replayed, lost := 0, 0
	start := time.Now()
	for i := range reps {
		cmd, out := startCrashChild(t, dir, srv.URL, room, "bob")
		sc := bufio.NewScanner(out)
		if !sc.Scan() || sc.Text() != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("rep %d: child did not start: %q", i, sc.Text())
		}
		// Kill at a random point of the write loop.
		time.Sleep(time.Duration(rand.IntN(60_000)) * time.Microsecond)
		cmd.Process.Kill()
		go io.Copy(io.Discard, out)
		cmd.Wait()
		// Every other kill is a power loss too: the state log loses what
		// was written after its last flush.
		if i%2 == 1 {
			lost += losePower(t, dir)
		}

		// Restart: Open replays the outbox.
		var pending int
		st, err := openStateStore(dir, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		st.View(func(tx stateTx) error {
			return tx.Scan(bOutbox, "", func(string, []byte) error { pending++; return nil })
		})
		st.Close()
		replayed += pending
		e := openTest(t, dir, testKey(t, "bob"), srv.URL, func(o *Options) { o.NoSubscribe = true })
		var left, drafts int
		e.store.View(func(tx stateTx) error {
			tx.Scan(bOutbox, "", func(string, []byte) error { left++; return nil })
			return tx.Scan(bDrafts, "", func(string, []byte) error { drafts++; return nil })
		})
		e.Close()
		if left != 0 || drafts != 0 {
			t.Fatalf("rep %d: after restart the outbox holds %d entries and %d were refused", i, left, drafts)
		}
	}
	rh.mu.Lock()
	reused, nng := rh.reused, rh.nonceNG
	rh.mu.Unlock()
	if len(reused) > 0 || nng > 0 {
		t.Fatalf("nonce reuse: %v; nonce_not_greater answers: %d", reused, nng)
	}
	// Every record the host holds is in bob's store exactly once, and the
	// host holds every envelope bob's store recorded.
	e := openTest(t, dir, testKey(t, "bob"), srv.URL, func(o *Options) { o.NoSubscribe = true })
	defer e.Close()
	var items []TimelineItem
	after := int64(0)
	for page := 0; ; page++ {
		tl := must[*TimelineResult](t)(e.Timeline(ctx, "b", TimelineInput{RoomID: room, Refresh: page == 0, Limit: 200, AfterSeq: &after, Actors: []string{e.AgentID().String()}}))
		items = append(items, tl.Items...)
		if tl.NextAfterSeq == nil {
			break
		}
		after = *tl.NextAfterSeq
	}
	seen := map[string]bool{}
	var lastNonce int64
	for _, it := range items {
		if seen[it.EventID] {
			t.Fatalf("event %s accepted twice", it.EventID)
		}
		seen[it.EventID] = true
		raw := must[*TimelineResult](t)(e.Timeline(ctx, "b", TimelineInput{RoomID: room, AfterSeq: ptr(it.Seq - 1), Limit: 1, IncludeRecords: true})).Items[0].Record
		rec, err := adp.ParseRecord(raw)
		if err != nil {
			t.Fatal(err)
		}
		if n := rec.Envelope.Event().Nonce; n <= lastNonce {
			t.Fatalf("seq %d: nonce %d after %d", it.Seq, n, lastNonce)
		}
		lastNonce = rec.Envelope.Event().Nonce
	}
	rh.mu.Lock()
	posted := len(rh.nonces[e.AgentID().String()])
	for _, h := range rh.nonces[e.AgentID().String()] {
		if !seen[h.String()] {
			t.Errorf("envelope %s was sent but never accepted", h)
		}
	}
	rh.mu.Unlock()
	t.Logf("%d kills in %v, %d updates lost in %d power losses, %d outbox entries replayed after a kill, %d of bob's records, %d envelopes posted",
		reps, time.Since(start), lost, reps/2, replayed, len(items), posted)
}

func ptr[T any](v T) *T { return &v }

// TestCrashAfterOutboxFlush SIGKILLs the engine's process while its write's
// outbox entry is only in the state log (flushed, not yet folded into
// state.db): once while the envelope is on its way to
// the host, which never takes it, and once after the host accepted it,
// before its answer reached the connector. The restarted engine sends the
// entry again: either way the write is accepted exactly once, and the
// outbox is empty, with no refused write held.
func TestCrashAfterOutboxFlush(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	rh, srv := newRecordingServer(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	for _, accepted := range []bool{false, true} {
		name := map[bool]string{false: "bob", true: "carol"}[accepted]
		key := testKey(t, name)
		dir := t.TempDir()
		bob := openTest(t, dir, key, srv.URL, func(o *Options) { o.NoSubscribe = true })
		must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker"}))
		before := bob.head(t, room)
		bob.Close()

		// The first write's POST stops in the host until the child is
		// dead, then ends without an answer.
		reached := make(chan struct{}, 1)
		release := make(chan struct{})
		hold := func(actor identity.AgentID) {
			if actor != key.AgentID() {
				return
			}
			select {
			case reached <- struct{}{}:
				<-release
				panic(http.ErrAbortHandler)
			default:
			}
		}
		rh.mu.Lock()
		if accepted {
			rh.after = hold
		} else {
			rh.before = hold
		}
		rh.mu.Unlock()
		cmd, out := startCrashChild(t, dir, srv.URL, room, name)
		go io.Copy(io.Discard, out)
		select {
		case <-reached:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the child's write did not reach the host")
		}
		cmd.Process.Kill()
		cmd.Wait()
		rh.mu.Lock()
		rh.before, rh.after = nil, nil
		rh.mu.Unlock()
		close(release)

		// The entry is in the state log alone, in a flushed frame.
		if n := logOutboxPuts(t, dir); n != 1 {
			t.Fatalf("accepted=%v: %d outbox entries in the state log's flushed frames, want 1", accepted, n)
		}
		db, err := bolt.Open(filepath.Join(dir, "state.db"), 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var inBucket int
		db.View(func(tx *bolt.Tx) error {
			if b := tx.Bucket([]byte(bOutbox)); b != nil {
				inBucket = b.Stats().KeyN
			}
			return nil
		})
		db.Close()
		if inBucket != 0 {
			t.Fatalf("accepted=%v: state.db's outbox bucket holds %d entries", accepted, inBucket)
		}

		// Restart: Open folds the log and replays the entry.
		e := openTest(t, dir, key, srv.URL, func(o *Options) { o.NoSubscribe = true })
		var left, drafts int
		e.store.View(func(tx stateTx) error {
			tx.Scan(bOutbox, "", func(string, []byte) error { left++; return nil })
			return tx.Scan(bDrafts, "", func(string, []byte) error { drafts++; return nil })
		})
		tl := must[*TimelineResult](t)(e.Timeline(ctx, "b", TimelineInput{RoomID: room, Refresh: true, AfterSeq: &before,
			Actors: []string{key.AgentID().String()}}))
		var contents []string
		for _, it := range tl.Items {
			contents = append(contents, string(it.Content))
		}
		e.Close()
		if left != 0 || drafts != 0 {
			t.Fatalf("accepted=%v: after restart the outbox holds %d entries and %d were refused", accepted, left, drafts)
		}
		if len(contents) != 1 || contents[0] != `"crash 0"` {
			t.Fatalf("accepted=%v: bob's records after the restart: %q, want the one write", accepted, contents)
		}
	}
	rh.mu.Lock()
	defer rh.mu.Unlock()
	if len(rh.reused) > 0 || rh.nonceNG > 0 {
		t.Fatalf("nonce reuse: %v; nonce_not_greater answers: %d", rh.reused, rh.nonceNG)
	}
}

// head is the seq of the room's latest record as the engine has it.
func (e *Engine) head(t testing.TB, room string) int64 {
	t.Helper()
	st := must[*RoomStateResult](t)(e.RoomState(ctxT(t), "b", RoomStateInput{RoomID: room, Refresh: true}))
	return st.Sync.SyncedSeq
}

// logOutboxPuts counts the outbox entries put by the flushed frames of the
// state log in dir.
func logOutboxPuts(t *testing.T, dir string) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, walName))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	walkLog(raw, func(fr walFrame, _ int) {
		for _, v := range fr.changes[bOutbox] {
			if v != nil && fr.flags&walFlushed != 0 {
				n++
			}
		}
	})
	return n
}

// walkLog calls fn with each frame of the state log raw, in order (the
// frames numbered on from the first), and the offset after it.
func walkLog(raw []byte, fn func(fr walFrame, end int)) {
	var lsn uint64
	for off := 0; ; {
		fr, n := readWALFrame(raw[off:])
		if n == 0 || off > 0 && fr.lsn != lsn+1 {
			return
		}
		off += n
		lsn = fr.lsn
		fn(fr, off)
	}
}

// losePower cuts the state log in dir after its last flushed frame: the
// most a power loss can take from it (walStore). It reports how many
// frames it dropped.
func losePower(t *testing.T, dir string) int {
	t.Helper()
	path := filepath.Join(dir, walName)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	keep, frames, dropped := 0, 0, 0
	walkLog(raw, func(fr walFrame, end int) {
		frames++
		if fr.flags&walFlushed != 0 {
			keep, dropped = end, 0
		} else {
			dropped++
		}
	})
	if dropped > 0 {
		// Garbage where the dropped frames were: a torn write.
		if err := os.WriteFile(path, append(raw[:keep:keep], bytes.Repeat([]byte{0xa5}, len(raw)-keep)...), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dropped
}

package connector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	bolt "go.etcd.io/bbolt"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// storedNonce reads the durable nonce of an engine.
func storedNonce(t testing.TB, e *Engine) int64 {
	var n int64
	if err := e.store.View(func(tx stateTx) error { _, err := tx.Get(bMeta, "nonce", &n); return err }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHostAllowlist: a host outside the operator allowlist (or configured
// but disabled) is never contacted and nothing is signed for it, whatever
// the input names; no method adds hosts.
func TestHostAllowlist(t *testing.T) {
	var hits atomic.Int64
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer hostile.Close()
	disabled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer disabled.Close()
	_, srv := testHost(t)
	ctx := ctxT(t)
	e := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL, func(o *Options) {
		o.Hosts = append(o.Hosts, HostConfig{Host: disabled.URL, Disabled: true})
	})
	defer e.Close()
	room := createRoom(t, e, srv.URL)
	nonce := storedNonce(t, e)
	now := time.Now().UnixMilli()
	for _, h := range []string{hostile.URL, disabled.URL, "https://evil.example", hostile.URL + "/v1"} {
		calls := map[string]error{}
		_, calls["open"] = e.RoomOpen(ctx, "s", RoomOpenInput{Host: h, RoomID: room})
		_, calls["state"] = e.RoomState(ctx, "s", RoomStateInput{Host: h, RoomID: room})
		_, calls["join"] = e.Join(ctx, "s", RoomJoinInput{Host: h, RoomID: room, Role: "speaker"})
		_, calls["create"] = e.CreateRoom(ctx, "s", RoomCreateInput{Host: h, Topic: "x", Visibility: "public", StartTime: now, EndTime: now + 1000})
		_, calls["search"] = e.RoomsSearch(ctx, RoomsSearchInput{Host: h})
		_, calls["send"] = e.SendMessage(ctx, "s", SendMessageInput{Host: h, RoomID: room, Content: "hi"})
		_, calls["submit"] = e.SubmitEvent(ctx, "s", SubmitEventInput{Host: h, RoomID: room, Type: "room.close", Payload: jsontext.Value(`{}`)})
		_, calls["status"] = e.AgentStatusSet(ctx, "s", AgentStatusSetInput{Host: h, RoomID: room, State: "drafting"})
		_, calls["profile"] = e.ProfileUpdate(ctx, ProfileUpdateInput{ProfileService: h, Profile: jsontext.Value(`{"name":"x"}`)})
		for name, err := range calls {
			if !errors.Is(err, ErrHostNotAllowed) {
				t.Errorf("%s on %s: %v, want ErrHostNotAllowed", name, h, err)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("a non-allowlisted host was contacted %d times", n)
	}
	if n := storedNonce(t, e); n != nonce {
		t.Fatalf("nonce advanced from %d to %d: something was signed", nonce, n)
	}
	hl := must[*HostsResult](t)(e.HostsList(ctx))
	if len(hl.Hosts) != 2 || !hl.Hosts[0].Allowed || hl.Hosts[1].Allowed {
		t.Fatalf("hosts: %+v", hl.Hosts)
	}
}

// TestLockChild is the child process of TestSecondProcessFailsFast.
func TestLockChild(t *testing.T) {
	dir := os.Getenv("ENGINE_LOCK_DIR")
	if dir == "" {
		t.Skip("lock child: only run by TestSecondProcessFailsFast")
	}
	_, err := Open(context.Background(), &Options{Dir: dir, Key: testKey(t, "alice"), Hosts: []HostConfig{{Host: os.Getenv("ENGINE_LOCK_HOST")}},
		AllowLoopbackHTTP: true, LockTimeout: 100 * time.Millisecond})
	if errors.Is(err, ErrLocked) {
		fmt.Println("locked:", err)
		os.Exit(0)
	}
	fmt.Println("not locked:", err)
	os.Exit(5)
}

// TestSecondProcessFailsFast: a state directory has one owner; a second
// process (and a second Open in the same process) fails with ErrLocked
// naming the file, after the short lock timeout.
func TestSecondProcessFailsFast(t *testing.T) {
	_, srv := testHost(t)
	dir := t.TempDir()
	e := openTest(t, dir, testKey(t, "alice"), srv.URL)
	defer e.Close()
	_, err := Open(context.Background(), &Options{Dir: dir, Key: testKey(t, "alice"), Hosts: []HostConfig{{Host: srv.URL}},
		AllowLoopbackHTTP: true, LockTimeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "state.db") {
		t.Fatalf("second open: %v, want ErrLocked naming the file", err)
	}
	if testing.Short() {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ENGINE_LOCK_DIR="+dir, "ENGINE_LOCK_HOST="+srv.URL)
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "locked: connector: state directory is in use by another process") {
		t.Fatalf("second process: %v: %s", err, out)
	}
}

// countingTransport records the request URLs an engine sends.
type countingTransport struct {
	mu   sync.Mutex
	urls []string
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.urls = append(c.urls, r.Method+" "+r.URL.RequestURI())
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countingTransport) count(sub string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, u := range c.urls {
		if strings.Contains(u, sub) {
			n++
		}
	}
	return n
}

// TestRestartResumes: an engine restarted mid-conversation resumes from its
// stored verified record — it asks the host only for what came after it —
// keeps its inbox (same ids) and its nonce sequence, and writes on.
func TestRestartResumes(t *testing.T) {
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	dir := t.TempDir()
	bob := openTest(t, dir, testKey(t, "bob"), srv.URL, func(o *Options) { o.SnapshotEvery = 4 })
	must[*RoomJoinResult](t)(bob.Join(ctx, "b", RoomJoinInput{Host: srv.URL, RoomID: room, Role: "speaker"}))
	for i := range 5 {
		say(t, alice, room, "point "+string(rune('a'+i)))
	}
	m := say(t, alice, room, "bob?")
	_ = m
	must[*WriteResult](t)(alice.SendMessage(ctx, "a", SendMessageInput{RoomID: room, Content: "@bob", Mentions: []string{bob.AgentID().String()}, OnHeadMismatch: OnMismatchSendAnyway}))
	waitSynced(t, bob, room, 9)
	before := must[*InboxNextResult](t)(bob.InboxNext(ctx, "b", InboxNextInput{Kinds: []string{KindMention}, Claim: true}))
	if len(before.Items) != 1 {
		t.Fatalf("inbox before restart: %+v", before)
	}
	say(t, bob, room, "on it")
	// A draft held when the process stops survives it.
	seen := must[*RoomStateResult](t)(bob.RoomState(ctx, "b", RoomStateInput{RoomID: room}))
	say(t, alice, room, "meanwhile")
	waitSynced(t, bob, room, seen.Sync.SyncedSeq+1)
	held := must[*WriteResult](t)(bob.SendMessage(ctx, "b", SendMessageInput{RoomID: room, Content: "held across restart"}))
	if held.Status != StatusHeld {
		t.Fatalf("not held: %+v", held)
	}
	nonce := storedNonce(t, bob)
	bob.Close()

	// The room moves while bob is down.
	say(t, alice, room, "while you were away")
	ct := &countingTransport{}
	bob = openTest(t, dir, testKey(t, "bob"), srv.URL, func(o *Options) { o.HTTPClient = &http.Client{Transport: ct}; o.SnapshotEvery = 4 })
	defer bob.Close()
	waitSynced(t, bob, room, 12)
	if n := ct.count("after_seq=0"); n != 0 {
		t.Fatalf("restart downloaded the history from the start (%d requests): %v", n, ct.urls)
	}
	if n := ct.count("after_seq=11"); n == 0 {
		t.Fatalf("restart did not resume after the stored record 11: %v", ct.urls)
	}
	// Claims end with the process that made them: a new session sees it.
	after := must[*InboxNextResult](t)(bob.InboxNext(ctx, "b2", InboxNextInput{Kinds: []string{KindMention}}))
	if len(after.Items) != 1 || after.Items[0].ID != before.Items[0].ID {
		t.Fatalf("inbox after restart: %+v, want the same item %s", after, before.Items[0].ID)
	}
	tl := must[*TimelineResult](t)(bob.Timeline(ctx, "b2", TimelineInput{RoomID: room, AfterSeq: ptr(int64(9))}))
	if len(tl.Items) != 3 || tl.Items[2].Summary != "while you were away" || tl.Sync.HeadSeq != 12 {
		t.Fatalf("timeline after restart: %+v", tl)
	}
	d := must[*DraftGetResult](t)(bob.DraftGet(ctx, "b2", held.Draft.ID))
	if c := must[*WriteResult](t)(bob.DraftCommit(ctx, "b2", DraftCommitInput{DraftID: d.Draft.ID, Action: ActionSendAsIs})); c.Status != StatusSent {
		t.Fatalf("draft after restart: %+v", c)
	}
	w := must[*WriteResult](t)(bob.SendMessage(ctx, "b2", SendMessageInput{RoomID: room, Content: "back"}))
	if w.Status != StatusSent {
		t.Fatalf("write after restart: %+v", w)
	}
	if n := storedNonce(t, bob); n <= nonce {
		t.Fatalf("nonce %d not above %d", n, nonce)
	}
}

// TestLocalValidationFailsFast: a payload the room registry refuses fails
// before anything is sent or durably signed.
func TestLocalValidationFailsFast(t *testing.T) {
	rh, srv := newRecordingServer(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	now := time.Now().UnixMilli()
	cr := must[*RoomCreateResult](t)(alice.CreateRoom(ctx, "a", RoomCreateInput{Host: srv.URL, Topic: "votes", Visibility: "public",
		StartTime: now - 1000, EndTime: now + 3600_000, Types: []jsontext.Value{jsontext.Value(`{"type":"vote.cast","kind":"signal","title":"Vote",
		"schema":{"type":"object","properties":{"choice":{"enum":["yes","no"]}},"required":["choice"],"additionalProperties":false}}`)}}))
	room := cr.Room.RoomID
	rh.mu.Lock()
	posts := len(rh.nonces[alice.AgentID().String()])
	rh.mu.Unlock()
	nonce := storedNonce(t, alice)
	for _, bad := range []string{`{"choice":"maybe"}`, `{}`, `{"choice":"yes","x":1}`} {
		_, err := alice.SubmitEvent(ctx, "a", SubmitEventInput{RoomID: room, Type: "vote.cast", Payload: jsontext.Value(bad)})
		if !errors.Is(err, packs.ErrPayloadSchemaViolation) {
			t.Errorf("payload %s: %v, want payload_schema_violation", bad, err)
		}
	}
	if _, err := alice.SubmitEvent(ctx, "a", SubmitEventInput{RoomID: room, Type: "no.such", Payload: jsontext.Value(`{}`)}); !errors.Is(err, adp.ErrTypeNotDefined) {
		t.Errorf("undefined type: %v", err)
	}
	rh.mu.Lock()
	n := len(rh.nonces[alice.AgentID().String()])
	rh.mu.Unlock()
	if n != posts || storedNonce(t, alice) != nonce {
		t.Fatalf("an invalid write reached the host or the durable nonce")
	}
	ok := must[*WriteResult](t)(alice.SubmitEvent(ctx, "a", SubmitEventInput{RoomID: room, Type: "vote.cast", Payload: jsontext.Value(`{"choice":"yes"}`)}))
	if ok.Status != StatusSent || ok.Item.Kind != "signal" {
		t.Fatalf("valid vote: %+v", ok)
	}
}

// TestWriteRateLimit: the local limiter refuses writes past the burst
// before signing.
func TestWriteRateLimit(t *testing.T) {
	_, srv := testHost(t)
	e := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL, func(o *Options) { o.WritesPerMinute, o.WriteBurst = 1, 2 })
	defer e.Close()
	room := createRoom(t, e, srv.URL) // 1
	say(t, e, room, "one")            // 2
	nonce := storedNonce(t, e)
	_, err := e.SendMessage(ctxT(t), "a", SendMessageInput{RoomID: room, Content: "three"})
	if !errors.Is(err, ErrRateLimited) || storedNonce(t, e) != nonce {
		t.Fatalf("third write: %v", err)
	}
}

// TestKeyStore: encrypted by default, passphrase from env or fd (at least
// 12 characters for a new key file), explicit dev option, no overwrite,
// wrong passphrase fails.
func TestKeyStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.age")
	t.Setenv("TEST_PASS", "correct horse")
	pass := PassphraseEnv("TEST_PASS")
	id, err := GenerateKeyFile(path, pass, &KeyFileOptions{WorkFactor: 10})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), "age-encryption.org/v1") || strings.Contains(string(b), seedMagic) {
		t.Fatal("key file is not age encrypted")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	k, err := LoadKeyFile(path, pass)
	if err != nil || k.AgentID() != id {
		t.Fatalf("load: %v", err)
	}
	if strings.Contains(k.String(), seedMagic) || strings.Contains(k.String(), string(k.k.Seed())) {
		t.Fatal("Key.String leaks the seed")
	}
	t.Setenv("TEST_PASS", "wrong")
	if _, err := LoadKeyFile(path, pass); !errors.Is(err, ErrKeyFile) {
		t.Fatalf("wrong passphrase: %v", err)
	}
	if _, err := GenerateKeyFile(path, pass, &KeyFileOptions{WorkFactor: 10}); err == nil {
		t.Fatal("an existing key file was overwritten")
	}
	// Import, and the explicitly unencrypted development variant.
	seed := adptest.Seed("carol")
	ip := filepath.Join(dir, "import.age")
	t.Setenv("TEST_PASS", "eleven char")
	if _, err := ImportKeyFile(ip, seed, pass, &KeyFileOptions{WorkFactor: 10}); !errors.Is(err, ErrShortPassphrase) {
		t.Fatalf("import with an 11-character passphrase: %v, want ErrShortPassphrase", err)
	}
	if _, err := os.Stat(ip); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused import wrote the key file: %v", err)
	}
	t.Setenv("TEST_PASS", "twelve chars")
	if iid, err := ImportKeyFile(ip, seed, pass, &KeyFileOptions{WorkFactor: 10}); err != nil || iid != testKey(t, "carol").AgentID() {
		t.Fatalf("import: %v", err)
	}
	dev := filepath.Join(dir, "dev.key")
	did, err := ImportKeyFileUnencryptedDev(dev, seed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyFile(dev, pass); !errors.Is(err, ErrKeyFile) {
		t.Fatalf("an unencrypted key loaded as encrypted: %v", err)
	}
	if _, err := LoadKeyFileUnencryptedDev(path); !errors.Is(err, ErrKeyFile) {
		t.Fatalf("an encrypted key loaded as dev: %v", err)
	}
	if dk, err := LoadKeyFileUnencryptedDev(dev); err != nil || dk.AgentID() != did {
		t.Fatalf("dev load: %v", err)
	}
}

// TestStoreStrict: stored values are read back strictly, and an update
// that fails half-way leaves nothing behind.
func TestStoreStrict(t *testing.T) {
	st, err := openStateStore(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	boom := errors.New("boom")
	err = st.Update(func(tx stateTx) error {
		if err := tx.Put(bMeta, "nonce", int64(5)); err != nil {
			return err
		}
		if err := tx.Put(bOutbox, "x", map[string]int{"a": 1}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	st.View(func(tx stateTx) error {
		var n int64
		if ok, _ := tx.Get(bMeta, "nonce", &n); ok {
			t.Error("a failed transaction left the nonce behind")
		}
		return nil
	})
	// A value with a duplicate member (or any non-strict JSON) is refused.
	bs := st.(*walStore)
	if err := bs.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(bMeta))
		if err != nil {
			return err
		}
		return b.Put([]byte("dup"), []byte(`{"a":1,"a":2}`))
	}); err != nil {
		t.Fatal(err)
	}
	st.View(func(tx stateTx) error {
		var m map[string]int
		if _, err := tx.Get(bMeta, "dup", &m); err == nil {
			t.Error("a duplicate member was accepted")
		}
		return nil
	})
}

// tamperingHost rewrites history pages of an allowlisted host.
type tamperingHost struct {
	h        http.Handler
	old, new string
	on       atomic.Bool
}

func (th *tamperingHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !th.on.Load() || r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/events") {
		th.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	th.h.ServeHTTP(rec, r)
	body := strings.ReplaceAll(rec.Body.String(), th.old, th.new)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	io.WriteString(w, body)
}

// TestForgedHistoryNotStored: an allowlisted host that alters a record
// gets an error, and nothing of the forged history is stored or shown.
func TestForgedHistoryNotStored(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	o, err := identity.ParseOrigin("http://"+srv.Listener.Addr().String(), &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := adphost.New(context.Background(), &adphost.Options{Origin: o, RateLimits: adphost.Unlimited()})
	if err != nil {
		t.Fatal(err)
	}
	th := &tamperingHost{h: h, old: "genuine words", new: "forged words!"}
	srv.Config.Handler = th
	srv.Start()
	defer srv.Close()
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	say(t, alice, room, "genuine words")
	th.on.Store(true)
	bob := openTest(t, t.TempDir(), testKey(t, "bob"), srv.URL)
	defer bob.Close()
	if _, err := bob.RoomOpen(ctx, "b", RoomOpenInput{Host: srv.URL, RoomID: room}); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("open over a forged history: %v", err)
	}
	var recs int
	bob.store.View(func(tx stateTx) error {
		return tx.Scan(bRecords, "", func(string, []byte) error { recs++; return nil })
	})
	if recs != 0 {
		t.Fatalf("%d records stored from a forged history", recs)
	}
	if tl, err := bob.Timeline(ctx, "b", TimelineInput{RoomID: room}); err == nil {
		for _, it := range tl.Items {
			if strings.Contains(it.Summary, "forged") {
				t.Fatalf("forged content shown: %+v", it)
			}
		}
	}
}

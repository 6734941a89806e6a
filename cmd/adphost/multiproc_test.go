package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/pgtest"
	"github.com/agentprotocols/go-sdk/internal/raceflag"
	"github.com/agentprotocols/go-sdk/packs"
	"github.com/agentprotocols/go-sdk/sse"
)

// hostProc is one cmd/adphost process on a fixed loopback port.
type hostProc struct {
	tb   testing.TB
	args string
	env  []string
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startProc starts (or restarts) the process and waits for its origin line.
func (p *hostProc) start() {
	p.tb.Helper()
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestHostProcess$")
	p.cmd.Env = append(append(os.Environ(), p.env...), envHostArgs+"="+p.args)
	p.cmd.SysProcAttr = procAttr()
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		p.tb.Fatal(err)
	}
	p.cmd.Stderr = os.Stderr
	if err := p.cmd.Start(); err != nil {
		p.tb.Fatal(err)
	}
	p.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(p.cmd, p.done)
	rd := bufio.NewReader(out)
	if _, err := rd.ReadString('\n'); err != nil {
		p.tb.Fatalf("host process %s printed no origin: %v", p.addr, err)
	}
	go io.Copy(io.Discard, rd)
}

// kill SIGKILLs the process.
func (p *hostProc) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// stop interrupts the process.
func (p *hostProc) stop() {
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// transport reaches this process whatever the URL's host: the processes
// share one origin, as behind a reverse proxy.
func (p *hostProc) client() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", p.addr)
		},
		MaxIdleConnsPerHost: 4,
	}}
}

func agentKey(name string) *identity.PrivateKey {
	seed := make([]byte, 32)
	copy(seed, "multiproc "+name)
	k, err := identity.NewKeyFromSeed(seed)
	if err != nil {
		panic(err)
	}
	return k
}

func agentClient(t testing.TB, origin, name string, hc *http.Client) *adp.Client {
	c, err := adp.NewClient(origin, &adp.ClientOptions{Signer: agentKey(name), HTTPClient: hc, AllowLoopbackHTTP: true,
		RetryBackoff: 20 * time.Millisecond, MaxRetryWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestManyProcessesOneHost: two cmd/adphost processes on one PostgreSQL
// database behind one origin serve as one host. 50 agents write 20
// records each over 5 rooms, alternating between the processes, under the
// default quotas (the room's type has a rate_hint); followers on both
// processes see every record exactly once, in order; the same envelope
// posted to both processes at once makes one record; one process is
// SIGKILLed in the middle and restarted, and no acknowledged write is
// lost; every chain is linear and every room's archive verifies with
// cmd/adpverify.
func TestManyProcessesOneHost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts host processes")
	}
	db := pgtest.Database(t)
	addr0 := freeAddr(t)
	origin := "http://" + addr0
	procs := make([]*hostProc, 2)
	for i := range procs {
		addr := addr0
		if i > 0 {
			addr = freeAddr(t)
		}
		procs[i] = &hostProc{tb: t, addr: addr, args: "--addr " + addr + " --origin " + origin + " --postgres " + db}
		procs[i].start()
	}
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	hcs := []*http.Client{procs[0].client(), procs[1].client()}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const nRooms = 5
	nAgents, nWrites := 50, 20
	if raceflag.Enabled {
		// The race detector slows the two host processes (built with it)
		// tenfold; the claim is the same at 20 x 10.
		nAgents, nWrites = 20, 10
	}
	decl, err := packs.ParseDeclaration([]byte(`{"type":"load.note","kind":"message","title":"Load note","rate_hint":600,"schema":{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rooms := make([]string, nRooms)
	for r := range rooms {
		c := agentClient(t, origin, fmt.Sprintf("creator%d", r), hcs[r%2])
		rec, err := c.CreateRoom(ctx, adp.RoomCreate{Topic: fmt.Sprintf("load %d", r), Visibility: adp.VisibilityPublic,
			StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(), Types: []packs.Declaration{decl}})
		if err != nil {
			t.Fatal(err)
		}
		rooms[r] = rec.RoomID
	}

	// Followers: each room's creator follows it on both processes.
	type seen struct {
		mu   sync.Mutex
		seqs []int64
		grew chan struct{} // signalled after each append
	}
	followers := make([][2]*seen, nRooms)
	fctx, fcancel := context.WithCancel(ctx)
	var fwg sync.WaitGroup
	for r := range rooms {
		for p := range 2 {
			s := &seen{grew: make(chan struct{}, 1)}
			followers[r][p] = s
			c := agentClient(t, origin, fmt.Sprintf("creator%d", r), hcs[p])
			fwg.Go(func() {
				for it, err := range sse.Follow(fctx, &sse.Options{Client: c, RoomID: rooms[r], HTTPClient: hcs[p],
					Backoff: sse.Backoff{Initial: 50 * time.Millisecond, Max: 500 * time.Millisecond}}) {
					if err != nil {
						continue // reconnects (the killed process) are retried by Follow
					}
					if it.Kind == sse.KindRecord {
						s.mu.Lock()
						s.seqs = append(s.seqs, it.Record.Seq)
						s.mu.Unlock()
						select {
						case s.grew <- struct{}{}:
						default:
						}
					}
				}
			})
		}
	}

	// The writers, alternating processes; after half of all writes are
	// acknowledged process 1 is SIGKILLed, and restarted once process 0
	// has acknowledged nAgents writes without it.
	type ack struct {
		room string
		seq  int64
		hash string
	}
	var (
		acksMu  sync.Mutex
		acks    []ack
		nAcked  atomic.Int64
		down    atomic.Bool
		kill    sync.Once
		restart sync.Once
		// acknowledged while process 1 is down: its restart waits for these
		ackedWhileDown atomic.Int64
		restarted      = make(chan struct{}) // closed once process 1 is back
	)
	var wg sync.WaitGroup
	errs := make(chan error, nAgents)
	for a := range nAgents {
		wg.Go(func() {
			room := rooms[a%nRooms]
			cs := [2]*adp.Client{agentClient(t, origin, fmt.Sprintf("agent%d", a), hcs[0]), agentClient(t, origin, fmt.Sprintf("agent%d", a), hcs[1])}
			pick := func(i int) *adp.Client {
				if i%2 == 1 && down.Load() {
					return cs[0]
				}
				return cs[i%2]
			}
			if _, err := submit(ctx, func(i int) *adp.Client { return pick(a + i) }, room, adp.TypeRoomJoin,
				func(ctx context.Context, c *adp.Client, b adp.Base) (*envelope.Envelope, error) {
					return adp.NewJoin(ctx, c.Author(), b, adp.Join{Role: adp.RoleSpeaker})
				}); err != nil {
				errs <- fmt.Errorf("agent %d join: %w", a, err)
				return
			}
			for w := range nWrites {
				rec, err := submit(ctx, func(i int) *adp.Client { return pick(a + w + i) }, room, "load.note",
					func(ctx context.Context, c *adp.Client, b adp.Base) (*envelope.Envelope, error) {
						return adp.NewCustom(ctx, c.Author(), b, c.Verified(room).Registry(), "load.note", map[string]int{"n": w})
					})
				if err != nil {
					errs <- fmt.Errorf("agent %d write %d: %w", a, w, err)
					return
				}
				acksMu.Lock()
				acks = append(acks, ack{room, rec.Seq, rec.Hash.String()})
				acksMu.Unlock()
				if down.Load() && ackedWhileDown.Add(1) == int64(nAgents) {
					// The outage lasted while process 0 alone took a
					// write from as many agents as there are.
					restart.Do(func() {
						go func() {
							defer close(restarted)
							procs[1].start()
							down.Store(false)
							t.Log("process 1 restarted")
						}()
					})
				}
				if nAcked.Add(1) == int64(nAgents*nWrites/2) {
					kill.Do(func() {
						down.Store(true)
						procs[1].kill()
						t.Logf("process 1 SIGKILLed after %d acknowledged writes", nAgents*nWrites/2)
					})
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	select { // every write was acknowledged, so process 1 was killed
	case <-restarted:
	case <-ctx.Done():
		t.Fatal("process 1 was not restarted")
	}

	// The same signed envelope to both processes at once.
	same := rooms[0]
	c0, c1 := agentClient(t, origin, "agent0", hcs[0]), agentClient(t, origin, "agent0", hcs[1])
	if _, err := c0.Sync(ctx, same); err != nil {
		t.Fatal(err)
	}
	base, err := c0.Verified(same).BaseFor("load.note")
	if err != nil {
		t.Fatal(err)
	}
	env, err := adp.NewCustom(ctx, c0.Author(), base, c0.Verified(same).Registry(), "load.note", map[string]int{"n": -1})
	if err != nil {
		t.Fatal(err)
	}
	var r0, r1 *adp.Record
	var e0, e1 error
	var sw sync.WaitGroup
	sw.Go(func() { r0, e0 = c0.Submit(ctx, same, env) })
	sw.Go(func() { r1, e1 = c1.Submit(ctx, same, env) })
	sw.Wait()
	if e0 != nil || e1 != nil || r0.Seq != r1.Seq || r0.Hash != r1.Hash {
		t.Fatalf("one envelope to both processes: %v / %v, seqs %v / %v", e0, e1, r0, r1)
	}

	// Every chain linear (the client verifies each record and link),
	// every acknowledged write in it, and the counts right.
	logs := map[string][]*adp.Record{}
	v := agentClient(t, origin, "verifier", hcs[1])
	for _, room := range rooms {
		for rec, err := range v.Events(ctx, room, 0) {
			if err != nil {
				t.Fatal(err)
			}
			logs[room] = append(logs[room], rec)
		}
		want := 1 + nAgents/nRooms*(1+nWrites)
		if room == same {
			want++
		}
		if len(logs[room]) != want {
			t.Fatalf("room %s has %d records, want %d", room, len(logs[room]), want)
		}
	}
	for _, a := range acks {
		if got := logs[a.room][a.seq-1]; got.Hash.String() != a.hash {
			t.Fatalf("acknowledged record %s/%d is not in the log", a.room, a.seq)
		}
	}

	// Followers on both processes: every record exactly once, in order.
	guard := time.After(20 * time.Second) // a "not hours" guard only
	for r, room := range rooms {
		for p, s := range followers[r] {
		wait:
			for {
				s.mu.Lock()
				n := len(s.seqs)
				s.mu.Unlock()
				if n >= len(logs[room]) {
					break
				}
				select {
				case <-s.grew:
				case <-guard:
					break wait
				}
			}
			s.mu.Lock()
			seqs := append([]int64(nil), s.seqs...)
			s.mu.Unlock()
			if len(seqs) != len(logs[room]) {
				t.Fatalf("follower of room %d on process %d saw %d records, want %d", r, p, len(seqs), len(logs[room]))
			}
			for i, seq := range seqs {
				if seq != int64(i+1) {
					t.Fatalf("follower of room %d on process %d: record %d has seq %d", r, p, i, seq)
				}
			}
		}
	}
	fcancel()
	fwg.Wait()

	// Close every room and verify its archive with cmd/adpverify.
	dir := t.TempDir()
	verify := filepath.Join(dir, "verify")
	if out, err := exec.Command("go", "build", "-o", verify, "../adpverify").CombinedOutput(); err != nil {
		t.Fatalf("building cmd/adpverify: %v\n%s", err, out)
	}
	for r, room := range rooms {
		c := agentClient(t, origin, fmt.Sprintf("creator%d", r), hcs[(r+1)%2])
		if _, err := retry(ctx, func(int) (*adp.Record, error) { return c.CloseRoom(ctx, room, adp.Notice{}) }); err != nil {
			t.Fatal(err)
		}
		manifest, records, err := c.Archive(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		mp, rp := filepath.Join(dir, room+".json"), filepath.Join(dir, room+".jsonl")
		os.WriteFile(mp, manifest, 0o600)
		os.WriteFile(rp, records, 0o600)
		if out, err := exec.Command(verify, "archive", mp, rp).CombinedOutput(); err != nil {
			t.Fatalf("room %s: cmd/adpverify: %v\n%s", room, err, out)
		}
	}
}

// retry runs f until it succeeds, retrying a lost head race
// (room_head_mismatch), a busy room (rate_limited) and a process that is
// down (transport errors), for at most 200 attempts.
func retry(ctx context.Context, f func(attempt int) (*adp.Record, error)) (*adp.Record, error) {
	var err error
	for i := range 200 {
		var rec *adp.Record
		if rec, err = f(i); err == nil {
			return rec, nil
		}
		var e *identity.Error
		if errors.As(err, &e) && e.Code != adp.CodeRoomHeadMismatch && e.Code != identity.CodeRateLimited && e.Status != 0 {
			return nil, err
		}
		if !pause(ctx, i) {
			return nil, ctx.Err()
		}
	}
	return nil, fmt.Errorf("after 200 attempts: %w", err)
}

// submit writes one event exactly once, through the clients pick returns
// per attempt: after a transport error (a process killed mid-write) it
// sends the same envelope again, so that an envelope the dead process had
// accepted is answered by its exact resubmission instead of being written
// twice; after a lost head race, a busy room or a nonce another client of
// the same agent used, it signs the event again on a fresh base.
func submit(ctx context.Context, pick func(attempt int) *adp.Client, room, typ string, build func(context.Context, *adp.Client, adp.Base) (*envelope.Envelope, error)) (*adp.Record, error) {
	var env *envelope.Envelope
	var err error
	for i := range 200 {
		c := pick(i)
		if env == nil {
			var base adp.Base
			if _, err = c.Sync(ctx, room); err == nil {
				if base, err = c.Verified(room).BaseFor(typ); err == nil {
					env, err = build(ctx, c, base)
				}
			}
		}
		if env != nil {
			var rec *adp.Record
			if rec, err = c.Submit(ctx, room, env); err == nil {
				return rec, nil
			}
			var e *identity.Error
			if errors.As(err, &e) && e.Status != 0 {
				switch e.Code {
				case identity.CodeNonceNotGreater:
					c.Author().Nonces.ObserveMaxSeenNonce(ctx, e.MaxSeenNonce)
				case adp.CodeRoomHeadMismatch, identity.CodeRateLimited:
				default:
					return nil, err
				}
				env = nil
			}
		}
		if !pause(ctx, i) {
			return nil, ctx.Err()
		}
	}
	return nil, fmt.Errorf("after 200 attempts: %w", err)
}

func pause(ctx context.Context, i int) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Duration(i%10+1) * 5 * time.Millisecond):
		return true
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/pgstore"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/internal/pgtest"
	"github.com/agentprotocols/go-sdk/packs"
	"github.com/agentprotocols/go-sdk/sse"
)

// The benchmarks start real cmd/adphost processes (GOMAXPROCS=1 each)
// and drive them over loopback HTTP with pre-signed envelopes, so that
// the load generator spends its CPU on little more than the requests:
//
//	go test ./cmd/adphost -run '^$' -bench . -benchtime 3000x
//
// They report accepted writes per second, the ratio to one core's
// crypto/ed25519.Verify rate measured just before (the floor: every write
// costs at least one verification), and the CPU the host processes and
// the PostgreSQL cluster and the load generator (this process) used per
// second of the run (1.0 = one core; the machine has two).

const tickDecl = `{"type":"bench.tick","kind":"signal","title":"Bench tick","schema":{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}}`

// benchHosts starts n host processes on one store, returns them and the
// origin they share.
func benchHosts(b *testing.B, store string, n int, extra string) ([]*hostProc, string, string) {
	b.Helper()
	addr0 := freeAddr(b)
	origin := "http://" + addr0
	var flags string
	var db string
	switch store {
	case "bbolt":
		flags = " --data " + b.TempDir()
	case "pg":
		db = pgtest.Database(b)
		flags = " --postgres " + db
	}
	procs := make([]*hostProc, n)
	for i := range procs {
		addr := addr0
		if i > 0 {
			addr = freeAddr(b)
		}
		procs[i] = &hostProc{tb: b, addr: addr, args: "--addr " + addr + " --origin " + origin + " --no-quotas" + flags + extra, env: []string{"GOMAXPROCS=1"}}
		procs[i].start()
	}
	b.Cleanup(func() {
		for _, p := range procs {
			p.stop()
		}
	})
	return procs, origin, db
}

// verifyRate measures one core's crypto/ed25519.Verify rate (per second)
// for about 200 ms.
func verifyRate() float64 {
	pub, priv, _ := ed25519.GenerateKey(nil)
	msg := make([]byte, 32)
	sig := ed25519.Sign(priv, msg)
	n := 0
	start := time.Now()
	for time.Since(start) < 200*time.Millisecond {
		for range 100 {
			ed25519.Verify(pub, msg, sig)
		}
		n += 100
	}
	return float64(n) / time.Since(start).Seconds()
}

// cpu sums the CPU time of the host processes and of the cluster.
func cpu(procs []*hostProc) (hosts, db time.Duration) {
	for _, p := range procs {
		d, _ := pgtest.GroupCPUTime(p.cmd.Process.Pid)
		hosts += d
	}
	if c := pgtest.Current(); c != nil {
		db, _ = c.CPUTime()
	}
	return hosts, db
}

// BenchmarkHostWrites: accepted writes per second on one room and on 8
// rooms, memory vs bbolt vs PostgreSQL, one host process vs two (the
// latter on PostgreSQL only: the other stores are one process's). 16
// writers (BENCH_WRITERS=n for another count, a multiple of 16 keeps
// each room on one process), each an agent posting its own pre-signed
// signal writes in order (signals are anchored, not head-checked, so
// writers on one room do not refuse each other, §6.1).
func BenchmarkHostWrites(b *testing.B) {
	for _, store := range []string{"memory", "bbolt", "pg"} {
		for _, rooms := range []int{1, 8} {
			for _, n := range []int{1, 2} {
				if n == 2 && store != "pg" {
					continue
				}
				b.Run(fmt.Sprintf("%s/rooms=%d/procs=%d", store, rooms, n), func(b *testing.B) { benchWrites(b, store, rooms, n) })
			}
		}
	}
}

func benchWrites(b *testing.B, store string, nRooms, nProcs int) {
	ctx := context.Background()
	procs, origin, _ := benchHosts(b, store, nProcs, "")
	hcs := make([]*http.Client, nProcs)
	for i, p := range procs {
		hcs[i] = p.client()
	}
	decl, err := packs.ParseDeclaration([]byte(tickDecl))
	if err != nil {
		b.Fatal(err)
	}
	writers := 16
	if n, err := strconv.Atoi(os.Getenv("BENCH_WRITERS")); err == nil && n > 0 {
		writers = n
	}
	now := time.Now()
	type writer struct {
		reqs [][]byte // each a whole HTTP/1.1 request
		addr string
	}
	ws := make([]*writer, writers)
	rooms := make([]string, nRooms)
	bases := make([]adp.Base, nRooms)
	regs := make([]*packs.Registry, nRooms)
	creator := agentClient(b, origin, "bench-creator", hcs[0])
	for r := range rooms {
		rec, err := creator.CreateRoom(ctx, adp.RoomCreate{Topic: "bench", Visibility: adp.VisibilityPublic,
			StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(), Types: []packs.Declaration{decl}})
		if err != nil {
			b.Fatal(err)
		}
		rooms[r] = rec.RoomID
		bases[r] = adp.Base{RoomID: rec.RoomID, Seq: rec.Seq, Hash: rec.Hash}
		if _, err := creator.Sync(ctx, rec.RoomID); err != nil {
			b.Fatal(err)
		}
		regs[r] = creator.Verified(rec.RoomID).Registry()
	}
	per := max(b.N/writers, 1)
	for i := range ws {
		r := i % nRooms
		c := agentClient(b, origin, fmt.Sprintf("bench-writer-%d", i), hcs[i%nProcs])
		if _, err := c.Join(ctx, rooms[r], adp.Join{Role: adp.RoleSpeaker}); err != nil {
			b.Fatal(err)
		}
		w := &writer{addr: procs[i%nProcs].addr}
		for k := range per {
			env, err := adp.NewCustom(ctx, c.Author(), bases[r], regs[r], "bench.tick", map[string]int{"n": k})
			if err != nil {
				b.Fatal(err)
			}
			w.reqs = append(w.reqs, rawPost(origin, "/v1/rooms/"+rooms[r], env.AppendJSON(nil)))
		}
		ws[i] = w
	}
	floor := verifyRate()
	h0, d0 := cpu(procs)
	g0 := selfCPU()
	var accepted atomic.Int64
	var failed atomic.Value
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			if err := postAll(w.addr, w.reqs, &accepted); err != nil {
				failed.Store(err)
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	h1, d1 := cpu(procs)
	g1 := selfCPU()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	n := accepted.Load()
	rate := float64(n) / el.Seconds()
	b.ReportMetric(rate, "writes/s")
	b.ReportMetric(rate/floor, "x-verify-floor")
	b.ReportMetric((h1-h0).Seconds()/el.Seconds(), "host-cores")
	b.ReportMetric((g1-g0).Seconds()/el.Seconds(), "loadgen-cores")
	// CPU per accepted write (µs): h of the hosts, d of the database, g
	// of the load generator, for the arithmetic of BENCHMARKS.md.
	b.ReportMetric(float64((h1-h0).Microseconds())/float64(n), "h-µs/write")
	b.ReportMetric(float64((g1-g0).Microseconds())/float64(n), "g-µs/write")
	if store == "pg" {
		b.ReportMetric((d1-d0).Seconds()/el.Seconds(), "db-cores")
		b.ReportMetric(float64((d1-d0).Microseconds())/float64(n), "d-µs/write")
	}
}

// rawPost is a whole HTTP/1.1 POST of body, built once so that the load
// generator spends its CPU on writing and reading bytes, not on net/http.
func rawPost(origin, path string, body []byte) []byte {
	host := strings.TrimPrefix(origin, "http://")
	req := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, host, len(body))
	return append(req, body...)
}

// postAll sends reqs in order on one keep-alive connection to addr, each
// after the previous answer, and fails unless every answer is 200 (real
// HTTP to a real process; the answer is read whole, headers included).
func postAll(addr string, reqs [][]byte, accepted *atomic.Int64) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	rd := bufio.NewReaderSize(conn, 16<<10)
	for _, req := range reqs {
		if _, err := conn.Write(req); err != nil {
			return err
		}
		status, err := readAnswer(rd)
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("a write was answered %d", status)
		}
		accepted.Add(1)
	}
	return nil
}

// readAnswer reads one HTTP/1.1 response with a Content-Length body and
// returns its status.
func readAnswer(rd *bufio.Reader) (int, error) {
	line, err := rd.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	length := -1
	for {
		line, err := rd.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return 0, fmt.Errorf("bad Content-Length %q", v)
			}
		}
	}
	if length < 0 {
		return 0, errors.New("an answer without Content-Length")
	}
	if _, err := rd.Discard(length); err != nil {
		return 0, err
	}
	return status, nil
}

// BenchmarkCrossProcessDelivery: the latency from a write's acceptance
// (its answer at the writer) on process 0 to its arrival at a follower
// (sse.Follow) connected to process 1, on PostgreSQL (LISTEN/NOTIFY), one
// write at a time: the next goes out once the previous one arrived.
func BenchmarkCrossProcessDelivery(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	procs, origin, _ := benchHosts(b, "pg", 2, "")
	hc0, hc1 := procs[0].client(), procs[1].client()
	decl, _ := packs.ParseDeclaration([]byte(tickDecl))
	now := time.Now()
	writer := agentClient(b, origin, "bench-creator", hc0)
	rec, err := writer.CreateRoom(ctx, adp.RoomCreate{Topic: "latency", Visibility: adp.VisibilityPublic,
		StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(), Types: []packs.Declaration{decl}})
	if err != nil {
		b.Fatal(err)
	}
	room := rec.RoomID
	base := adp.Base{RoomID: room, Seq: rec.Seq, Hash: rec.Hash}
	writer.Sync(ctx, room)
	reg := writer.Verified(room).Registry()
	var mu sync.Mutex
	arrived := map[int64]time.Time{}
	grew := make(chan struct{}, 1) // signalled after each arrival
	follower := agentClient(b, origin, "bench-creator", hc1)
	ready := make(chan struct{})
	var once sync.Once
	go func() {
		for it, err := range sse.Follow(ctx, &sse.Options{Client: follower, RoomID: room, HTTPClient: hc1}) {
			once.Do(func() { close(ready) })
			if err == nil && it.Kind == sse.KindRecord {
				mu.Lock()
				arrived[it.Record.Seq] = time.Now()
				mu.Unlock()
				select {
				case grew <- struct{}{}:
				default:
				}
			}
		}
	}()
	<-ready // the room.create record: the stream is up
	envs := make([][]byte, b.N)
	for i := range envs {
		env, err := adp.NewCustom(ctx, writer.Author(), base, reg, "bench.tick", map[string]int{"n": i})
		if err != nil {
			b.Fatal(err)
		}
		envs[i] = env.AppendJSON(nil)
	}
	acked := map[int64]time.Time{}
	b.ResetTimer()
	for _, body := range envs {
		resp, err := hc0.Post(origin+"/v1/rooms/"+room, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("HTTP %d: %s", resp.StatusCode, raw)
		}
		r, err := adp.ParseRecord(bytes.TrimSpace(raw))
		if err != nil {
			b.Fatal(err)
		}
		acked[r.Seq] = time.Now()
		// One write in flight at a time: the next goes out once this one
		// reached the follower, so no delivery queues behind another.
		for delivered := false; !delivered; {
			mu.Lock()
			_, delivered = arrived[r.Seq]
			mu.Unlock()
			if !delivered {
				select {
				case <-grew:
				case <-ctx.Done():
					b.Fatalf("record %d never reached the follower on process 1", r.Seq)
				}
			}
		}
	}
	b.StopTimer()
	guard := time.After(10 * time.Second) // a "not hours" guard only
wait:
	for {
		mu.Lock()
		n := len(arrived)
		mu.Unlock()
		if n >= len(acked)+1 {
			break
		}
		select {
		case <-grew:
		case <-guard:
			break wait
		}
	}
	var lat []time.Duration
	mu.Lock()
	for seq, at := range acked {
		got, ok := arrived[seq]
		if !ok {
			b.Fatalf("record %d never reached the follower on process 1", seq)
		}
		lat = append(lat, max(got.Sub(at), 0))
	}
	mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkRoomCacheMemory: the resident memory of a host process holding
// 10,000 rooms in PostgreSQL, 100 of them active (written and read) and
// every other one read once, with --room-cache 200. b.N is ignored.
func BenchmarkRoomCacheMemory(b *testing.B) {
	ctx := context.Background()
	db := pgtest.Database(b)
	st, err := pgstore.Open(ctx, db, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const total, active = 10000, 100
	creator := envelope.NewAuthor(agentKey("bench-creator"))
	now := time.Now()
	ids := make([]string, total)
	var wg sync.WaitGroup
	var fail atomic.Value
	next := atomic.Int64{}
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				id := fmt.Sprintf("bench%015d", i)
				ids[i] = id
				env, err := adp.NewRoomCreate(ctx, creator, adp.RoomCreate{Topic: "room " + strconv.Itoa(i), Visibility: adp.VisibilityPublic,
					StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli()})
				if err == nil {
					rec := adp.NewRecord(id, nil, now.UnixMilli(), env)
					ev, _ := adp.ParseEvent(env)
					err = st.Append(ctx, &adphost.Commit{Record: rec,
						Nonce: adphost.NonceAdvance{Actor: ev.Actor, Nonce: ev.Nonce, Now: 2, ExpiresAt: 1}, // already expired: 8 goroutines append out of nonce order
						Index: &adphost.RoomIndex{Summary: adp.RoomSummary{ID: id, Status: adp.StatusScheduled, Creator: ev.Actor,
							Topic: "room", Visibility: adp.VisibilityPublic, StartTime: now.Add(-time.Minute).UnixMilli(),
							EndTime: now.Add(time.Hour).UnixMilli(), Members: 1}, Members: []adphost.MemberIndex{{Agent: ev.Actor, Role: adp.RoleModerator, Status: adp.MemberActive}}}})
				}
				if err != nil {
					fail.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := fail.Load().(error); err != nil {
		b.Fatal(err)
	}
	addr := freeAddr(b)
	origin := "http://" + addr
	p := &hostProc{tb: b, addr: addr, args: "--addr " + addr + " --origin " + origin + " --no-quotas --room-cache 200 --postgres " + db, env: []string{"GOMAXPROCS=1"}}
	p.start()
	defer p.stop()
	hc := p.client()
	get := func(path string) {
		resp, err := hc.Get(origin + path)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for _, id := range ids { // every room once: the cache must stay bounded
		get("/v1/rooms/" + id)
	}
	for range 5 { // the active rooms, again and again, with writes
		for i := range active {
			get("/v1/rooms/" + ids[i] + "/events")
		}
	}
	w := agentClient(b, origin, "bench-writer", hc)
	for i := range active {
		if _, err := w.Join(ctx, ids[i], adp.Join{Role: adp.RoleSpeaker}); err != nil {
			b.Fatal(err)
		}
		if _, err := w.SendMessage(ctx, ids[i], adp.Message{ContentType: "text/plain", Content: adp.TextContent("hello")}); err != nil {
			b.Fatal(err)
		}
	}
	get("/v1/rooms/public?limit=100")
	rss := vmRSS(b, p.cmd.Process.Pid)
	b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
}

// selfCPU is this process's CPU time (the load generator's), from /proc.
func selfCPU() time.Duration {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * time.Second / 100
}

// vmRSS reads a process's resident set size.
func vmRSS(b *testing.B, pid int) int64 {
	s, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		b.Skip("no /proc")
	}
	for _, line := range strings.Split(string(s), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

package adphost_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/packs"
)

// floorNs times n Ed25519 verifications of an event-sized message, the
// least every accepted write costs; the write benchmarks report their
// speed as a fraction of it, measured alongside them (the machine is
// shared, so only ratios taken in the same window mean anything).
func floorNs(n int) time.Duration {
	pub, msg, sig := floorInput()
	start := time.Now()
	for range n {
		if !ed25519.Verify(pub, msg, sig) {
			panic("floor signature does not verify")
		}
	}
	return time.Since(start)
}

func floorInput() (pub, msg, sig []byte) {
	k := key("floor")
	msg = bytes.Repeat([]byte("m"), 400)
	return ed25519.PublicKey(k.AgentID().PublicKey()), msg, ed25519.Sign(ed25519.NewKeyFromSeed(k.Seed()), msg)
}

// BenchmarkEd25519Floor is the baseline, as in BENCHMARKS.md:
// crypto/ed25519.Verify on a 400-byte message.
func BenchmarkEd25519Floor(b *testing.B) {
	pub, msg, sig := floorInput()
	b.ResetTimer()
	for range b.N {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("does not verify")
		}
	}
}

// benchRoom is a room on a Host with a signal type, and the envelopes to
// write to it: signal writes anchored on the room.create record, so they
// can be signed before the clock starts (a non-signal write needs the
// head the previous write makes).
type benchRoom struct {
	id     string
	create envelope.Hash // the room.create record's hash
	envs   [][]byte
}

const benchType = `{"type":"bench.ping","kind":"signal","title":"Ping","schema":{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}}`

func newBenchHost(b testing.TB) (*adphost.Host, *clock) {
	c := newClock()
	h, err := adphost.New(context.Background(), &adphost.Options{
		Origin: identity.MustParseOrigin("https://bench.example"), Now: c.Now, RateLimits: adphost.Unlimited(), Heartbeat: -1,
	})
	if err != nil {
		b.Fatal(err)
	}
	return h, c
}

// post writes one envelope through the handler, without sockets.
func post(b testing.TB, h http.Handler, path string, body []byte) []byte {
	return serve(b, h, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
}

// serve runs one request through the handler and returns the answer's
// body, failing b unless it is a success.
func serve(b testing.TB, h http.Handler, req *http.Request) []byte {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code/100 != 2 {
		b.Fatalf("%s: %d %s", req.URL.Path, rec.Code, rec.Body.Bytes())
	}
	return rec.Body.Bytes()
}

// prepare creates a room through the handler and signs n writes for it.
func prepare(b testing.TB, h *adphost.Host, c *clock, name string, n int) benchRoom {
	ctx := context.Background()
	author := &envelope.Author{Signer: key(name), Nonces: identity.NewNonceSource(&identity.NonceOptions{Now: c.Now}), Now: c.Now}
	d, err := packs.ParseDeclaration([]byte(benchType))
	if err != nil {
		b.Fatal(err)
	}
	spec := adp.RoomCreate{Topic: "bench", Visibility: adp.VisibilityPublic, StartTime: t0.UnixMilli(), EndTime: t0.Add(time.Hour).UnixMilli(), Types: []packs.Declaration{d}}
	env, err := adp.NewRoomCreate(ctx, author, spec)
	if err != nil {
		b.Fatal(err)
	}
	var cr adp.CreateResponse
	if err := json.Unmarshal(post(b, h, "/v1/rooms", env.AppendJSON(nil)), &cr); err != nil {
		b.Fatal(err)
	}
	reg := packs.NewRegistry(nil)
	if err := reg.Declare(ctx, 1, d); err != nil {
		b.Fatal(err)
	}
	base := adp.Base{RoomID: cr.ID, Seq: 1, Hash: cr.Hash}
	br := benchRoom{id: cr.ID, create: cr.Hash, envs: make([][]byte, n)}
	for i := range n {
		env, err := adp.NewCustom(ctx, author, base, reg, "bench.ping", map[string]int{"n": i})
		if err != nil {
			b.Fatal(err)
		}
		br.envs[i] = env.AppendJSON(nil)
	}
	return br
}

// BenchmarkHostWrite measures accepted writes through the handler
// (httptest, no sockets) in one room: envelope verification, nonce and
// rate checks, the room rules (with schema validation), the record, the
// store append. x-floor is the write rate as a fraction of the Ed25519
// verification rate.
func BenchmarkHostWrite(b *testing.B) {
	h, c := newBenchHost(b)
	br := prepare(b, h, c, "writer", b.N)
	measureWrites(b, h, br.id, br.envs)
}

// BenchmarkHostJoin measures membership writes as BenchmarkHostWrite
// measures signals: b.N agents join one public room as observers, each
// with a room.join signed before the clock starts. A membership write
// changes the room's index entry, which goes into the Store with its
// record; the room grows by one member per write, so compare runs of the
// same -benchtime Nx.
func BenchmarkHostJoin(b *testing.B) {
	c := newClock()
	h, err := adphost.New(context.Background(), &adphost.Options{
		Origin: identity.MustParseOrigin("https://bench.example"), Now: c.Now, RateLimits: adphost.Unlimited(), Heartbeat: -1,
		MaxObservers: -1,
	})
	if err != nil {
		b.Fatal(err)
	}
	br := prepare(b, h, c, "creator", 0)
	ctx := context.Background()
	base := adp.Base{RoomID: br.id, Seq: 1, Hash: br.create}
	envs := make([][]byte, b.N)
	for i := range b.N {
		author := &envelope.Author{Signer: key(fmt.Sprintf("joiner %d", i)), Nonces: identity.NewNonceSource(&identity.NonceOptions{Now: c.Now}), Now: c.Now}
		env, err := adp.NewJoin(ctx, author, base, adp.Join{Role: adp.RoleObserver})
		if err != nil {
			b.Fatal(err)
		}
		envs[i] = env.AppendJSON(nil)
	}
	measureWrites(b, h, br.id, envs)
}

// measureWrites posts envs to room through the handler and reports
// ns/write and x-floor: the write rate as a fraction of the Ed25519
// verification rate, measured alternately in the same window.
func measureWrites(b *testing.B, h http.Handler, room string, envs [][]byte) {
	b.ReportAllocs()
	b.ResetTimer()
	// Writes and floor verifications alternate in chunks, so that both
	// see the same load; ns/op covers both, ns/write the writes alone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var writes, floor, writesCPU, floorCPU time.Duration
	cpuOK := true
	// Each chunk's requests are built before its clock starts: a server
	// hands its handler a parsed request, while httptest.NewRequest parses
	// the text of one (about 6 µs, a tenth of a write, in a profile).
	reqs := make([]*http.Request, 50)
	for i := 0; i < len(envs); i += 50 {
		n := min(50, len(envs)-i)
		for j := range n {
			reqs[j] = httptest.NewRequest(http.MethodPost, "/v1/rooms/"+room, bytes.NewReader(envs[i+j]))
		}
		c0, ok0 := threadCPU()
		start := time.Now()
		for j := range n {
			serve(b, h, reqs[j])
		}
		writes += time.Since(start)
		c1, ok1 := threadCPU()
		floor += floorNs(n)
		c2, ok2 := threadCPU()
		writesCPU, floorCPU = writesCPU+c1-c0, floorCPU+c2-c1
		cpuOK = cpuOK && ok0 && ok1 && ok2
	}
	b.StopTimer()
	b.ReportMetric(float64(writes.Nanoseconds())/float64(len(envs)), "ns/write")
	b.ReportMetric(float64(floor)/float64(writes), "x-floor")
	if cpuOK && writesCPU > 0 {
		// The same ratio in the thread's CPU time: steady on a loaded
		// machine, but blind to garbage collection on other threads.
		b.ReportMetric(float64(floorCPU)/float64(writesCPU), "x-floor-cpu")
	}
}

// BenchmarkHostWrite8Rooms writes to 8 rooms at once, one writer per
// room; run with -cpu 1,2 to compare one core with two (ns/write is per
// write across all rooms).
func BenchmarkHostWrite8Rooms(b *testing.B) {
	const rooms = 8
	h, c := newBenchHost(b)
	per := b.N/rooms + 1
	brs := make([]benchRoom, rooms)
	for i := range rooms {
		brs[i] = prepare(b, h, c, fmt.Sprint("writer", i), per)
	}
	floorBefore := floorNs(500)
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, br := range brs {
		wg.Go(func() {
			for _, env := range br.envs {
				post(b, h, "/v1/rooms/"+br.id, env)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	nsPerWrite := float64(b.Elapsed().Nanoseconds()) / float64(rooms*per)
	floor := float64((floorBefore + floorNs(500)).Nanoseconds()) / 1000
	b.ReportMetric(nsPerWrite, "ns/write")
	b.ReportMetric(1e9/nsPerWrite, "writes/s")
	// x-floor: write throughput over the single-goroutine verification
	// rate; on two free cores it can approach twice the one-room ratio.
	b.ReportMetric(floor/nsPerWrite, "x-floor")
}

// BenchmarkHistoryPaging reads a 10,000-record history through the client
// over loopback HTTP, verifying every record (hash, signature, chain and
// room rules), and reports records/s.
func BenchmarkHistoryPaging(b *testing.B) {
	const records = 10000
	c := newClock()
	h, srv := adphosttest.NewServer(b, &adphost.Options{Now: c.Now, RateLimits: adphost.Unlimited(), Heartbeat: -1})
	br := prepare(b, h, c, "history", records-1)
	for _, env := range br.envs {
		post(b, h, "/v1/rooms/"+br.id, env)
	}
	floorBefore := floorNs(1000)
	b.ResetTimer()
	for range b.N {
		cl, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: key("reader"), HTTPClient: srv.Client(), Now: c.Now, AllowLoopbackHTTP: true, PageSize: 1000})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, err := range cl.Events(context.Background(), br.id, 0) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != records {
			b.Fatalf("%d records", n)
		}
	}
	b.StopTimer()
	rate := float64(records*b.N) / b.Elapsed().Seconds()
	floorRate := 2000 / (floorBefore + floorNs(1000)).Seconds()
	b.ReportMetric(rate, "records/s")
	// x-floor: verified records per second over single-goroutine
	// Ed25519 verifications per second (the client checks signatures on
	// every core, so two free cores can exceed 1).
	b.ReportMetric(rate/floorRate, "x-floor")
}

// BenchmarkHostWriteCallgrind writes 10,000 signal envelopes through the
// handler into one room, as BenchmarkHostWrite does at -benchtime 10000x,
// or runs as many floor verifications, once: for valgrind, whose
// instruction counts do not depend on the machine's load. The
// environment variable CALLGRIND_MODE picks what runs after the common
// setup (the host, the room and the signed envelopes): "write", "floor"
// or "none"; each mode's total instructions (callgrind's I refs) minus
// those of "none", divided by 10,000, is its cost per write or verify:
//
//	CGO_ENABLED=0 go test -c -o adphost.test ./adphost
//	CALLGRIND_MODE=write GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
//	  ./adphost.test -test.run '^$' -test.bench HostWriteCallgrind -test.benchtime 1x
func BenchmarkHostWriteCallgrind(b *testing.B) {
	const writes = 10_000
	h, c := newBenchHost(b)
	br := prepare(b, h, c, "writer", writes)
	pub, msg, sig := floorInput()
	mode := os.Getenv("CALLGRIND_MODE")
	// The setup's garbage is collected now, so that no mode pays for it.
	runtime.GC()
	for b.Loop() {
		switch mode {
		case "floor":
			for range writes {
				if !ed25519.Verify(pub, msg, sig) {
					b.Fatal("floor signature does not verify")
				}
			}
		case "write", "":
			for _, env := range br.envs {
				post(b, h, "/v1/rooms/"+br.id, env)
			}
		}
	}
}

// BenchmarkHostWriteStages times, one at a time and warm, the stages of a
// BenchmarkHostWrite write that run outside the handler's bookkeeping, on
// the same envelopes (ns/op is per envelope): the budget BENCHMARKS.md
// draws for a write. Run with -cpu 1.
func BenchmarkHostWriteStages(b *testing.B) {
	const n = 2000
	h, c := newBenchHost(b)
	br := prepare(b, h, c, "writer", n)
	envs := make([]*envelope.Envelope, n)
	recs := make([]*adp.Record, n)
	for i, raw := range br.envs {
		rec, err := adp.ParseRecord(post(b, h, "/v1/rooms/"+br.id, raw))
		if err != nil {
			b.Fatal(err)
		}
		envs[i], recs[i] = rec.Envelope, rec
	}
	d, err := packs.ParseDeclaration([]byte(benchType))
	if err != nil {
		b.Fatal(err)
	}
	reg := packs.NewRegistry(nil)
	if err := reg.Declare(context.Background(), 1, d); err != nil {
		b.Fatal(err)
	}
	per := func(b *testing.B, f func(i int) error) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := f(i % n); err != nil {
				b.Fatal(err)
			}
			i++
		}
	}
	b.Run("floor", func(b *testing.B) {
		pub, msg, sig := floorInput()
		per(b, func(int) error {
			if !ed25519.Verify(pub, msg, sig) {
				return fmt.Errorf("floor signature does not verify")
			}
			return nil
		})
	})
	b.Run("envelope.Parse", func(b *testing.B) {
		per(b, func(i int) error { _, err := envelope.Parse(br.envs[i]); return err })
	})
	b.Run("envelope.Parse+Verify", func(b *testing.B) {
		per(b, func(i int) error {
			env, err := envelope.Parse(br.envs[i])
			if err == nil {
				err = env.Verify()
			}
			return err
		})
	})
	b.Run("identity.VerifySignature", func(b *testing.B) {
		per(b, func(i int) error {
			h, sig := envs[i].Hash(), envs[i].Signature()
			return envs[i].Actor().Verify(h[:], sig[:])
		})
	})
	b.Run("adp.ParseEvent", func(b *testing.B) {
		per(b, func(i int) error { _, err := adp.ParseEvent(envs[i]); return err })
	})
	b.Run("type-schema", func(b *testing.B) {
		per(b, func(i int) error {
			ev, err := adp.ParseEvent(envs[i])
			if err == nil {
				err = reg.Validate(ev.Type, ev.Payload)
			}
			return err
		})
	})
	b.Run("Record.ComputeHash", func(b *testing.B) {
		per(b, func(i int) error { recs[i].ComputeHash(); return nil })
	})
	b.Run("Record.AppendJSON", func(b *testing.B) {
		var buf []byte
		per(b, func(i int) error { buf = recs[i].AppendJSON(buf[:0]); return nil })
	})
}

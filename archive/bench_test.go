package archive_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha3"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/cputime"
)

// bench100k is a 100,000-record archive, generated once per process.
var bench100k = sync.OnceValues(func() (*archive.Manifest, []byte) {
	var log bytes.Buffer
	log.Grow(100_000 * 800)
	m := generate(100_000, runtime.GOMAXPROCS(0), func(l []byte) { log.Write(l); log.WriteByte('\n') })
	return m, log.Bytes()
})

// sigTriple is what crypto/ed25519.Verify needs for one record.
type sigTriple struct {
	pub  ed25519.PublicKey
	hash envelope.Hash
	sig  [64]byte
}

var benchTriples = sync.OnceValue(func() []sigTriple {
	_, log := bench100k()
	var out []sigTriple
	for _, l := range lines(log) {
		rec, err := adp.ParseRecord(l)
		if err != nil {
			panic(err)
		}
		out = append(out, sigTriple{rec.Envelope.Actor().PublicKey(), rec.Envelope.Hash(), rec.Envelope.Signature()})
	}
	return out
})

// floorRate measures crypto/ed25519.Verify alone, on one goroutine, over
// the archive's own signatures: records/s per core, by wall time and by
// the process's CPU time.
func floorRate(b *testing.B) (wall, cpu float64) {
	ts := benchTriples()
	start, cpu0 := time.Now(), cputime.Process()
	for _, t := range ts[:20_000] {
		if !ed25519.Verify(t.pub, t.hash[:], t.sig[:]) {
			b.Fatal("bad signature")
		}
	}
	return 20_000 / time.Since(start).Seconds(), 20_000 / (cputime.Process() - cpu0).Seconds()
}

// BenchmarkVerify100k verifies a 100,000-record archive (messages,
// reactions, review findings, polls and votes; signatures, replay with
// schema validation, digests) from memory.
//
//	ed25519-floor      crypto/ed25519.Verify alone, one goroutine
//	workers=N          archive.Verify with N signature workers (GOMAXPROCS as set)
//	procs=1            workers=1 with GOMAXPROCS=1: everything on one core
//
// records/s is the throughput; floor-ratio divides it by the same run's
// ed25519 floor (one goroutine) times the number of workers: the share
// of each worker's time that is signature checking's irreducible floor.
// With workers=1 the sequencer runs on the second core; procs=1 puts the
// whole pipeline on one core.
//
// cpu-floor-ratio is the same comparison by CPU time (user + system, of
// the whole process, garbage collection included) instead of wall time:
// verification's records per CPU-second over the floor's. On a machine
// shared with other work it is the figure to read, since wall-time rates
// there measure the neighbours too.
func BenchmarkVerify100k(b *testing.B) {
	m, log := bench100k()
	b.Run("ed25519-floor", func(b *testing.B) {
		// One op verifies 20,000 of the archive's signatures.
		benchTriples()
		var cpu float64
		for b.Loop() {
			_, cpu = floorRate(b)
		}
		b.ReportMetric(float64(20_000*b.N)/b.Elapsed().Seconds(), "records/s")
		b.ReportMetric(cpu, "records/cpu-s")
	})
	run := func(b *testing.B, workers int) { benchVerify(b, m, log, workers) }
	for _, w := range []int{1, 2} {
		b.Run("workers="+string(rune('0'+w)), func(b *testing.B) { run(b, w) })
	}
	b.Run("procs=1", func(b *testing.B) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		run(b, 1)
	})
}

// benchVerify verifies a 100,000-record archive with the given number of
// workers and reports the rates of BenchmarkVerify100k.
func benchVerify(b *testing.B, m *archive.Manifest, log []byte, workers int) {
	floor, floorCPU := floorRate(b)
	b.SetBytes(int64(len(log)))
	cpu0 := cputime.Process()
	for b.Loop() {
		rep, err := archive.Verify(context.Background(), m, bytes.NewReader(log), &archive.VerifyOptions{Workers: workers})
		if err != nil || rep.Records != 100_000 {
			b.Fatal(err)
		}
	}
	cpu := float64(100_000*b.N) / (cputime.Process() - cpu0).Seconds()
	rate := float64(100_000*b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "records/s")
	b.ReportMetric(rate/floor/float64(workers), "floor-ratio")
	b.ReportMetric(cpu, "records/cpu-s")
	b.ReportMetric(cpu/floorCPU, "cpu-floor-ratio")
}

// benchLater100k is bench100k in the 2026-09-24 draft.
var benchLater100k = sync.OnceValues(func() (*archive.Manifest, []byte) {
	var log bytes.Buffer
	log.Grow(100_000 * 800)
	m := generateIn(adp.Draft20260924, 100_000, runtime.GOMAXPROCS(0), func(l []byte) { log.Write(l); log.WriteByte('\n') })
	return m, log.Bytes()
})

// BenchmarkVerifyLater100k is BenchmarkVerify100k for a 2026-09-24
// archive of the same room: records with accepted_at, the §18 manifest
// (no digest over the records), the later draft's freshness rules. The
// floor is the seed archive's signatures, the same Ed25519 work.
func BenchmarkVerifyLater100k(b *testing.B) {
	m, log := benchLater100k()
	run := func(b *testing.B, workers int) { benchVerify(b, m, log, workers) }
	for _, w := range []int{1, 2} {
		b.Run("workers="+string(rune('0'+w)), func(b *testing.B) { run(b, w) })
	}
	b.Run("procs=1", func(b *testing.B) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		run(b, 1)
	})
}

// memSampler records the peak of the heap in use and of the memory the
// runtime holds from the OS (minus what it released), via runtime/metrics.
type memSampler struct {
	stop              chan struct{}
	done              chan struct{}
	peakHeap, peakSys uint64
}

func startSampler() *memSampler {
	s := &memSampler{stop: make(chan struct{}), done: make(chan struct{})}
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	read := func() {
		metrics.Read(samples)
		heap := samples[0].Value.Uint64() + samples[1].Value.Uint64()
		sys := samples[2].Value.Uint64() - samples[3].Value.Uint64()
		s.peakHeap, s.peakSys = max(s.peakHeap, heap), max(s.peakSys, sys)
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-s.stop:
				read()
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *memSampler) finish() { close(s.stop); <-s.done }

// BenchmarkVerifyMemory1M verifies a 1,000,000-record archive and
// reports the peak heap in use and peak runtime memory (total minus
// released) during verification:
//
//	pipe              in seq order, streamed through an io.Pipe from the
//	                  generator, so no file is needed (the manifest, whose
//	                  digest covers every signature, comes from a first
//	                  generation pass outside the timer)
//	reversed-file     the log written to a temporary file in reverse seq
//	                  order, verified from the *os.File: every record but
//	                  seq 1 waits, as an offset, for its turn
//	reversed-stream   the same file behind a plain io.Reader: every record
//	                  but seq 1 is spilled to the verifier's temporary file
//
// Run it on its own: -bench VerifyMemory1M -benchtime 1x (the reversed
// cases need about 1.6 GB of temporary disk).
func BenchmarkVerifyMemory1M(b *testing.B) {
	const n = 1_000_000
	procs := runtime.GOMAXPROCS(0)
	measure := func(b *testing.B, m *archive.Manifest, open func() io.Reader) {
		for i := 0; i < b.N; i++ {
			r := open()
			runtime.GC()
			debug.FreeOSMemory()
			s := startSampler()
			b.StartTimer()
			rep, err := archive.Verify(context.Background(), m, r, &archive.VerifyOptions{TempDir: b.TempDir()})
			b.StopTimer()
			s.finish()
			if c, ok := r.(io.Closer); ok {
				c.Close()
			}
			if err != nil || rep.Records != n {
				b.Fatal(err)
			}
			b.ReportMetric(float64(s.peakHeap)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(s.peakSys)/(1<<20), "peak-sys-MiB")
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
	}
	b.Run("pipe", func(b *testing.B) {
		b.StopTimer()
		m := generate(n, procs, func([]byte) {})
		measure(b, m, func() io.Reader {
			pr, pw := io.Pipe()
			go func() {
				bw := make([]byte, 0, 64<<10)
				generate(n, 1, func(l []byte) {
					bw = append(append(bw, l...), '\n')
					if len(bw) > 60<<10 {
						pw.Write(bw)
						bw = bw[:0]
					}
				})
				pw.Write(bw)
				pw.Close()
			}()
			return pr
		})
	})
	// The reversed log, written once.
	var (
		revOnce sync.Once
		revPath string
		revM    *archive.Manifest
	)
	reversedLog := func(b *testing.B) {
		revOnce.Do(func() {
			dir := os.TempDir()
			fwd, err := os.CreateTemp(dir, "adp-bench-*.jsonl")
			if err != nil {
				b.Fatal(err)
			}
			defer os.Remove(fwd.Name())
			defer fwd.Close()
			bw := bufio.NewWriterSize(fwd, 1<<20)
			offs := make([]int64, 0, n+1)
			pos := int64(0)
			revM = generate(n, procs, func(l []byte) {
				offs = append(offs, pos)
				bw.Write(l)
				bw.WriteByte('\n')
				pos += int64(len(l)) + 1
			})
			offs = append(offs, pos)
			if err := bw.Flush(); err != nil {
				b.Fatal(err)
			}
			rev, err := os.CreateTemp(dir, "adp-bench-rev-*.jsonl")
			if err != nil {
				b.Fatal(err)
			}
			defer rev.Close()
			rw := bufio.NewWriterSize(rev, 1<<20)
			var line []byte
			for i := n - 1; i >= 0; i-- {
				line = slices.Grow(line[:0], int(offs[i+1]-offs[i]))[:offs[i+1]-offs[i]]
				if _, err := fwd.ReadAt(line, offs[i]); err != nil {
					b.Fatal(err)
				}
				rw.Write(line)
			}
			if err := rw.Flush(); err != nil {
				b.Fatal(err)
			}
			revPath = rev.Name()
		})
		if revPath == "" {
			b.Fatal("no reversed log")
		}
	}
	b.Cleanup(func() {
		if revPath != "" {
			os.Remove(revPath)
		}
	})
	for _, stream := range []bool{false, true} {
		name := "reversed-file"
		if stream {
			name = "reversed-stream"
		}
		b.Run(name, func(b *testing.B) {
			b.StopTimer()
			reversedLog(b)
			measure(b, revM, func() io.Reader {
				f, err := os.Open(revPath)
				if err != nil {
					b.Fatal(err)
				}
				if stream { // hide ReadAt and Seek
					return struct {
						io.Reader
						io.Closer
					}{f, f}
				}
				return f
			})
		})
	}
}

// BenchmarkStages breaks the per-record cost of verification down by
// stage, single-threaded, over the first 20,000 records of the 100k
// archive (ns/op is per record).
func BenchmarkStages(b *testing.B) {
	_, log := bench100k()
	ls := lines(log)[:20_000]
	recs := make([]*adp.Record, len(ls))
	envs := make([][]byte, len(ls))
	for i, l := range ls {
		r, err := adp.ParseRecord(l)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Envelope.Verify(); err != nil {
			b.Fatal(err)
		}
		recs[i], envs[i] = r, r.Envelope.AppendJSON(nil)
	}
	ts := benchTriples()
	per := func(b *testing.B, f func(i int)) {
		i := 0
		for b.Loop() {
			f(i % len(ls))
			i++
		}
	}
	b.Run("ed25519.Verify", func(b *testing.B) {
		per(b, func(i int) { ed25519.Verify(ts[i].pub, ts[i].hash[:], ts[i].sig[:]) })
	})
	b.Run("identity.VerifySignature", func(b *testing.B) {
		per(b, func(i int) { identity.VerifySignature(ts[i].pub, ts[i].hash[:], ts[i].sig[:]) })
	})
	b.Run("adp.ParseRecord", func(b *testing.B) { per(b, func(i int) { adp.ParseRecord(ls[i]) }) })
	b.Run("envelope.Parse", func(b *testing.B) { per(b, func(i int) { envelope.Parse(envs[i]) }) })
	b.Run("Record.AppendJSON", func(b *testing.B) {
		var buf []byte
		per(b, func(i int) { buf = recs[i].AppendJSON(buf[:0]) })
	})
	b.Run("Record.ComputeHash", func(b *testing.B) { per(b, func(i int) { recs[i].ComputeHash() }) })
	b.Run("events-digest-sha3", func(b *testing.B) {
		h := sha3New()
		per(b, func(i int) { h.Write(ls[i]) })
	})
	b.Run("Room.Apply(verified)", func(b *testing.B) {
		var room *adp.Room
		ctx := context.Background()
		per(b, func(i int) {
			if i == 0 {
				b.StopTimer()
				room = adp.NewRoom(recs[0].RoomID, nil)
				b.StartTimer()
			}
			if err := room.Apply(ctx, recs[i]); err != nil {
				b.Fatal(err)
			}
		})
	})
}

func sha3New() *sha3.SHA3 { return sha3.New256() }

// BenchmarkVerifyCallgrind verifies a 2,000-record archive of the same mix
// as bench100k with one worker, or checks its signatures with
// crypto/ed25519.Verify, once: small enough to run under valgrind, whose
// instruction counts do not depend on the machine's load. The
// environment variable CALLGRIND_MODE picks what runs after the common
// setup: "verify", "floor" or "none"; the difference of each to "none"
// in total instructions (callgrind's I refs) is the cost of that part:
//
//	CGO_ENABLED=0 go test -c -o archive.test ./archive
//	CALLGRIND_MODE=verify GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
//	  ./archive.test -test.run '^$' -test.bench VerifyCallgrind -test.benchtime 1x
//
// CALLGRIND_DRAFT=2026-09-24 makes the archive the 2026-09-24 draft's.
func BenchmarkVerifyCallgrind(b *testing.B) {
	var log bytes.Buffer
	d := adp.Draft20260704
	if s := os.Getenv("CALLGRIND_DRAFT"); s != "" {
		var err error
		if d, err = adp.ParseDraft(s); err != nil {
			b.Fatal(err)
		}
	}
	m := generateIn(d, 2_000, 1, func(l []byte) { log.Write(l); log.WriteByte('\n') })
	var ts []sigTriple
	for _, l := range lines(log.Bytes()) {
		rec, err := adp.ParseRecordIn(d, l)
		if err != nil {
			b.Fatal(err)
		}
		ts = append(ts, sigTriple{rec.Envelope.Actor().PublicKey(), rec.Envelope.Hash(), rec.Envelope.Signature()})
	}
	ctx := context.Background()
	mode := os.Getenv("CALLGRIND_MODE")
	for b.Loop() {
		switch mode {
		case "floor":
			for _, t := range ts {
				if !ed25519.Verify(t.pub, t.hash[:], t.sig[:]) {
					b.Fatal("bad signature")
				}
			}
		case "verify", "":
			rep, err := archive.Verify(ctx, m, bytes.NewReader(log.Bytes()), &archive.VerifyOptions{Workers: 1})
			if err != nil || rep.Records != 2_000 {
				b.Fatal(err)
			}
		}
	}
}

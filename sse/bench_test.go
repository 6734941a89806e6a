package sse_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"iter"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/sse"
)

// benchRoom is a chain of n records, messages from a few authors,
// generated once per process: record JSON, and per record the public key,
// event hash and signature for the floor.
type benchRoom struct {
	id   string
	recs [][]byte
	keys []ed25519.PublicKey
	msgs [][32]byte
	sigs [][64]byte
}

var (
	benchMu   sync.Mutex
	benchData = map[int]*benchRoom{}
)

const benchMax = 100_000

// benchRecords builds the room. Messages name record 1 as their base:
// without a replayer the client checks signatures, hashes and the chain,
// not the head precondition, so the envelopes can be signed in parallel.
func benchRecords(tb testing.TB, n int) *benchRoom {
	benchMu.Lock()
	defer benchMu.Unlock()
	if r := benchData[n]; r != nil {
		return r
	}
	{
		ctx := context.Background()
		r := &benchRoom{id: "d8ftedhpqhsusbg001tg"}
		authors := make([]*envelope.Author, 4)
		for i := range authors {
			authors[i] = &envelope.Author{Signer: key(tb, byte(0x40+i)), Nonces: identity.NewNonceSource(nil), Now: func() time.Time { return T0 }}
		}
		create, err := adp.NewRoomCreate(ctx, authors[0], adp.RoomCreate{Topic: "bench", Visibility: adp.VisibilityPublic,
			StartTime: T0.UnixMilli(), EndTime: T0.Add(time.Hour).UnixMilli()})
		if err != nil {
			tb.Fatal(err)
		}
		first := adp.NewRecord(r.id, nil, T0.UnixMilli(), create)
		envs := make([]*envelope.Envelope, n)
		envs[0] = create
		var wg sync.WaitGroup
		workers := runtime.GOMAXPROCS(0)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 1 + w; i < n; i += workers {
					env, err := adp.NewMessage(ctx, authors[i%len(authors)], adp.Base{RoomID: r.id, Seq: 1, Hash: first.Hash},
						adp.Message{ContentType: "text/markdown", Content: adp.TextContent("A review comment of ordinary length, with **markdown** and a [link](https://example.com/pr/42).")})
					if err != nil {
						panic(err)
					}
					envs[i] = env
				}
			}(w)
		}
		wg.Wait()
		var prev *adp.Record
		for i, env := range envs {
			rec := adp.NewRecord(r.id, prev, T0.UnixMilli()+int64(i), env)
			prev = rec
			r.recs = append(r.recs, rec.AppendJSON(nil))
			r.keys = append(r.keys, env.Actor().PublicKey())
			r.msgs = append(r.msgs, env.Hash())
			r.sigs = append(r.sigs, env.Signature())
		}
		benchData[n] = r
	}
	return benchData[n]
}

// streamServer streams the first n records as room.event items, then
// holds the stream open. It accepts any token: the benchmark measures the
// subscriber.
func streamServer(r *benchRoom, n int) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		bw := bufio.NewWriterSize(w, 64<<10)
		for _, rec := range r.recs[:n] {
			bw.WriteString("event: room.event\ndata: ")
			bw.Write(rec)
			bw.WriteString("\n\n")
		}
		bw.Flush()
		w.(http.Flusher).Flush()
		<-req.Context().Done()
	}))
}

func emptyHistory() sse.History {
	return sse.HistoryFunc(func(context.Context, string, int64) iter.Seq2[*adp.Record, error] {
		return func(func(*adp.Record, error) bool) {}
	})
}

// followN follows the stream until n records were delivered; each calls
// onRecord with the count so far.
func followN(tb testing.TB, r *benchRoom, srv *httptest.Server, n int, onRecord func(int)) {
	opts := &sse.Options{
		API: srv.URL + "/v1", RoomID: r.id, Signer: key(tb, 0x13), History: emptyHistory(),
		Origins: &identity.OriginOptions{AllowLoopbackHTTP: true},
	}
	got := 0
	for it, err := range sse.Follow(context.Background(), opts) {
		if err != nil {
			tb.Fatal(err)
		}
		if it.Kind == sse.KindError {
			tb.Fatal(it.Err)
		}
		if it.Kind != sse.KindRecord {
			continue
		}
		if got++; it.Record.Seq != int64(got) {
			tb.Fatalf("record %d has seq %d", got, it.Record.Seq)
		}
		if onRecord != nil {
			onRecord(got)
		}
		if got == n {
			return
		}
	}
}

// BenchmarkFollowVsFloor measures verified records/s through the whole
// subscriber — HTTP, go-sse framing, strict record parse, record hash,
// chain link, envelope hash and strict signature check, delivery — against
// the raw crypto/ed25519.Verify floor over the same signatures, in the
// same run. Each iteration times the floor, then the subscriber, over
// 10,000 records; on a shared machine the fastest of each is the least
// disturbed, so the reported rates and ratio use the best iteration of
// each.
//
//	go test ./sse -run ^$ -bench FollowVsFloor -benchtime 5x
func BenchmarkFollowVsFloor(b *testing.B) {
	const n = 10_000
	r := benchRecords(b, n)
	srv := streamServer(r, n)
	defer srv.Close()
	ids := make([]identity.AgentID, n)
	for i := range ids {
		ids[i], _ = identity.AgentIDFromPublicKey(r.keys[i])
	}
	floor, strict, follow := time.Duration(1<<62), time.Duration(1<<62), time.Duration(1<<62)
	for b.Loop() {
		t0 := time.Now()
		for i := 0; i < n; i++ {
			if !ed25519.Verify(r.keys[i], r.msgs[i][:], r.sigs[i][:]) {
				b.Fatal("floor: bad signature")
			}
		}
		t1 := time.Now()
		for i := 0; i < n; i++ {
			if ids[i].Verify(r.msgs[i][:], r.sigs[i][:]) != nil {
				b.Fatal("strict: bad signature")
			}
		}
		t2 := time.Now()
		followN(b, r, srv, n, nil)
		t3 := time.Now()
		floor, strict, follow = min(floor, t1.Sub(t0)), min(strict, t2.Sub(t1)), min(follow, t3.Sub(t2))
	}
	fl, st, fo := n/floor.Seconds(), n/strict.Seconds(), n/follow.Seconds()
	b.ReportMetric(fl, "floor-rec/s")
	b.ReportMetric(st, "strict-rec/s")
	b.ReportMetric(fo, "follow-rec/s")
	b.ReportMetric(fo/fl, "ratio")
	b.ReportMetric(fo/st, "ratio-strict")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkFollowMemory100k follows 100,000 records and reports the live
// heap after 10,000 and after 100,000 (after a GC each time): a subscriber
// holds the last verified record and a bounded reorder buffer, never the
// room.
//
//	go test ./sse -run ^$ -bench FollowMemory100k -benchtime 1x
func BenchmarkFollowMemory100k(b *testing.B) {
	r := benchRecords(b, benchMax)
	srv := streamServer(r, benchMax)
	defer srv.Close()
	for b.Loop() {
		var at10k, at100k uint64
		var ms runtime.MemStats
		followN(b, r, srv, benchMax, func(got int) {
			if got == 10_000 || got == benchMax {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				if got == 10_000 {
					at10k = ms.HeapAlloc
				} else {
					at100k = ms.HeapAlloc
				}
			}
		})
		b.ReportMetric(float64(at10k)/(1<<20), "MiB@10k")
		b.ReportMetric(float64(at100k)/(1<<20), "MiB@100k")
		b.ReportMetric(float64(int64(at100k)-int64(at10k))/(1<<20), "MiB-growth")
	}
	b.ReportMetric(0, "ns/op")
}

// TestFollowMemoryFlat is the memory bound as a test, on a shorter room:
// following 10,000 more records after the first 5,000 grows the heap by
// less than 1 MiB (the room's own bytes are held by the test server;
// retaining the records would take about 10 MiB).
func TestFollowMemoryFlat(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("builds a 15,000-record room; heap figures need a build without -race")
	}
	const n = 15_000
	r := benchRecords(t, n)
	srv := streamServer(r, n)
	defer srv.Close()
	var at5k, atN uint64
	var ms runtime.MemStats
	followN(t, r, srv, n, func(got int) {
		if got == 5_000 || got == n {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			if got == 5_000 {
				at5k = ms.HeapAlloc
			} else {
				atN = ms.HeapAlloc
			}
		}
	})
	if growth := int64(atN) - int64(at5k); growth > 1<<20 {
		t.Fatalf("heap grew by %d bytes over 10,000 records", growth)
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/pgtest"
	"github.com/agentprotocols/go-sdk/packs"
)

// BenchmarkFanout: one room with 1,000 live subscribers (250 observers,
// 4 streams each, the most one agent may hold on a room) on one host
// process (memory store, GOMAXPROCS=1), written at a steady rate by one
// writer (FANOUT_RATE writes per second, default 20; b.N writes):
//
//	go test ./cmd/adphost -run '^$' -bench Fanout -benchtime 200x
//
// It reports the latency from a write's acceptance (its answer at the
// writer) to its arrival at each subscriber, p50 and p99 over every
// delivery; the host's CPU per delivered record (the writes included);
// and the host's resident memory per subscriber (the growth of its RSS
// when the streams open, over their number).
func BenchmarkFanout(b *testing.B) {
	const observers, perObserver = 250, 4
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rate := 20.0
	if r, err := strconv.ParseFloat(os.Getenv("FANOUT_RATE"), 64); err == nil && r > 0 {
		rate = r
	}
	procs, origin, _ := benchHosts(b, "memory", 1, "")
	p := procs[0]
	hc := p.client()
	decl, err := packs.ParseDeclaration([]byte(tickDecl))
	if err != nil {
		b.Fatal(err)
	}
	writer := agentClient(b, origin, "fanout-writer", hc)
	now := time.Now()
	rec, err := writer.CreateRoom(ctx, adp.RoomCreate{Topic: "fan-out", Visibility: adp.VisibilityPublic,
		StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(), Types: []packs.Declaration{decl}})
	if err != nil {
		b.Fatal(err)
	}
	room := rec.RoomID
	base := adp.Base{RoomID: room, Seq: rec.Seq, Hash: rec.Hash}
	names := make([]string, observers)
	var wg sync.WaitGroup
	var failed atomic.Value
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				names[i] = fmt.Sprint("fanout-observer-", i)
				if _, err := agentClient(b, origin, names[i], hc).Join(ctx, room, adp.Join{Role: adp.RoleObserver}); err != nil {
					failed.Store(err)
				}
			}
		})
	}
	for i := range observers {
		next <- i
	}
	close(next)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	if _, err := writer.Sync(ctx, room); err != nil {
		b.Fatal(err)
	}
	reg := writer.Verified(room).Registry()
	first := writer.Verified(room).Latest().Seq + 1 // the first bench write's seq
	envs := make([][]byte, b.N)
	for i := range envs {
		env, err := adp.NewCustom(ctx, writer.Author(), base, reg, "bench.tick", map[string]int{"n": i})
		if err != nil {
			b.Fatal(err)
		}
		envs[i] = env.AppendJSON(nil)
	}

	// The subscribers: one connection each, read line by line; an event's
	// arrival is the blank line that ends it.
	rss0 := vmRSS(b, p.cmd.Process.Pid) // the room is created: the host's baseline
	subs := observers * perObserver
	arrived := make([][]int64, subs) // Unix ns by write
	var delivered atomic.Int64
	want := int64(b.N * subs)
	allDelivered := make(chan struct{}) // closed by the delivery that makes want
	ready := make(chan error, subs)
	sc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", p.addr)
		},
		MaxIdleConnsPerHost: subs,
	}}
	aud, err := identity.ParseOrigin(origin, &identity.OriginOptions{AllowLoopbackHTTP: true})
	if err != nil {
		b.Fatal(err)
	}
	for s := range subs {
		arrived[s] = make([]int64, b.N)
		go func() {
			tok, err := identity.MintRequestToken(ctx, agentKey(names[s/perObserver]), aud, nil)
			if err != nil {
				ready <- err
				return
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, origin+"/v1/rooms/"+room+"/events/live", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := sc.Do(req)
			if err == nil && resp.StatusCode != http.StatusOK {
				msg, _ := io.ReadAll(resp.Body)
				err = fmt.Errorf("subscription %d: HTTP %d %s", s, resp.StatusCode, msg)
			}
			ready <- err
			if err != nil {
				return
			}
			defer resp.Body.Close()
			rd := bufio.NewReader(resp.Body)
			seq := int64(-1)
			for {
				line, err := rd.ReadSlice('\n')
				if err != nil {
					return
				}
				switch {
				case bytes.HasPrefix(line, []byte("id: ")):
					seq, _ = strconv.ParseInt(string(bytes.TrimSpace(line[4:])), 10, 64)
				case len(line) == 1 && seq >= first && seq < first+int64(b.N):
					arrived[s][seq-first] = time.Now().UnixNano()
					if delivered.Add(1) == want {
						close(allDelivered)
					}
					seq = -1
				}
			}
		}()
	}
	for range subs {
		if err := <-ready; err != nil {
			b.Fatal(err)
		}
	}
	rss1 := vmRSS(b, p.cmd.Process.Pid) // every subscription has its response headers

	acked := make([]int64, b.N)
	h0, _ := pgtest.GroupCPUTime(p.cmd.Process.Pid)
	b.ResetTimer()
	pace := time.NewTicker(time.Duration(float64(time.Second) / rate)) // the write rate
	defer pace.Stop()
	for i, body := range envs {
		if i > 0 {
			<-pace.C
		}
		resp, err := hc.Post(origin+"/v1/rooms/"+room, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		at := time.Now().UnixNano()
		r, err := adp.ParseRecord(bytes.TrimSpace(raw))
		if err != nil {
			b.Fatalf("HTTP %d: %s", resp.StatusCode, raw)
		}
		if r.Seq != first+int64(i) {
			b.Fatalf("write %d got seq %d, want %d", i, r.Seq, first+int64(i))
		}
		acked[i] = at
	}
	select {
	case <-allDelivered:
	case <-time.After(30 * time.Second): // reported below
	}
	b.StopTimer()
	h1, _ := pgtest.GroupCPUTime(p.cmd.Process.Pid)
	if n := delivered.Load(); n < want {
		b.Fatalf("%d of %d deliveries within 30 s", n, want)
	}
	lat := make([]time.Duration, 0, want)
	for s := range subs {
		for i, at := range arrived[s] {
			lat = append(lat, time.Duration(max(at-acked[i], 0)))
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64((h1-h0).Nanoseconds())/float64(want)/1000, "host-µs/delivery")
	b.ReportMetric(float64(rss1-rss0)/float64(subs)/1024, "KiB/subscriber")
}

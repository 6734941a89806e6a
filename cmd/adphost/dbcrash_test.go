package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost/pgstore"
	"github.com/agentprotocols/go-sdk/envelope"
	"github.com/agentprotocols/go-sdk/internal/pgtest"
	"github.com/agentprotocols/go-sdk/internal/raceflag"
	"github.com/agentprotocols/go-sdk/packs"
	"github.com/agentprotocols/go-sdk/sse"
)

// TestDatabaseCrash: three cmd/adphost processes on one PostgreSQL
// database, a few dozen writers on one room (so that writes are appended
// in group-commit batches) spread over the three, and the database
// crashed (an immediate shutdown) in the middle of the burst and
// restarted a second later. While it is down every failed write is
// answered 503 service_unavailable with Retry-After, and the writers send
// the same envelope again; within 15 s of its return every process takes
// a new write; at the end every process serves the stored head, the
// history it serves verifies, every acknowledged write is in it, and no
// write is in it twice.
func TestDatabaseCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts host processes and a PostgreSQL cluster of its own")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cluster := pgtest.Own(t)
	db, drop, err := cluster.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer drop()

	addr0 := freeAddr(t)
	origin := "http://" + addr0
	procs := make([]*hostProc, 3)
	hcs := make([]*http.Client, len(procs))
	for i := range procs {
		addr := addr0
		if i > 0 {
			addr = freeAddr(t)
		}
		procs[i] = &hostProc{tb: t, addr: addr, args: "--addr " + addr + " --origin " + origin + " --no-quotas --postgres " + db}
		procs[i].start()
		hcs[i] = procs[i].client()
	}
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()

	nWriters, nWrites := 24, 15
	if raceflag.Enabled {
		nWriters, nWrites = 12, 8
	}
	decl, err := packs.ParseDeclaration([]byte(tickDecl))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	creator := agentClient(t, origin, "crash-creator", hcs[0])
	created, err := creator.CreateRoom(ctx, adp.RoomCreate{Topic: "crash", Visibility: adp.VisibilityPublic,
		StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(), Types: []packs.Declaration{decl}})
	if err != nil {
		t.Fatal(err)
	}
	room := created.RoomID
	base := adp.Base{RoomID: room, Seq: created.Seq, Hash: created.Hash}
	if _, err := creator.Sync(ctx, room); err != nil {
		t.Fatal(err)
	}
	reg := creator.Verified(room).Registry()
	url := origin + "/v1/rooms/" + room

	// Every writer, and a prober per process, joins before the burst.
	type member struct {
		name string
		c    *adp.Client
	}
	join := func(name string, p int) member {
		c := agentClient(t, origin, name, hcs[p])
		if _, err := retry(ctx, func(int) (*adp.Record, error) { return c.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}) }); err != nil {
			t.Fatalf("%s joins: %v", name, err)
		}
		return member{name, c}
	}
	writers := make([]member, nWriters)
	for a := range writers {
		writers[a] = join(fmt.Sprintf("crash-writer-%d", a), a%len(procs))
	}
	probers := make([]member, len(procs))
	for p := range probers {
		probers[p] = join(fmt.Sprintf("crash-prober-%d", p), p)
	}

	// A follower on every process: what it is sent must be stored.
	var (
		unavailable atomic.Int64 // 503 answers, each with Retry-After
		otherFails  sync.Map     // any other failing answer → count
		acksMu      sync.Mutex
		acks        []*adp.Record
		nAcked      atomic.Int64
		crash       sync.Once
		upAt        atomic.Pointer[time.Time]
	)
	// send posts env to process p until it is stored: after a transport
	// error or a 503 it sends the same envelope again (the host may have
	// stored it; the exact-resubmission rule answers the record then).
	send := func(p func(attempt int) int, env *envelope.Envelope) (*adp.Record, error) {
		body := env.AppendJSON(nil)
		for attempt := 0; ctx.Err() == nil; attempt++ {
			resp, err := hcs[p(attempt)].Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				pause(ctx, attempt)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK:
				return adp.ParseRecord(bytes.TrimSpace(b))
			case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "" &&
				bytes.Contains(b, []byte(`"service_unavailable"`)):
				unavailable.Add(1)
			case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "1":
				// A room that stayed busy (lost append races): not stored.
			default:
				key := fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(b))
				n, _ := otherFails.LoadOrStore(key, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
				return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
			}
			pause(ctx, attempt)
		}
		return nil, ctx.Err()
	}

	var wg sync.WaitGroup
	errs := make(chan error, nWriters+len(procs))
	crashAfter := int64(nWriters * nWrites / 3)
	for a, w := range writers {
		wg.Go(func() {
			for n := range nWrites {
				env, err := adp.NewCustom(ctx, w.c.Author(), base, reg, "bench.tick", map[string]int{"n": n})
				if err != nil {
					errs <- err
					return
				}
				rec, err := send(func(i int) int { return (a + n + i) % len(procs) }, env)
				if err != nil {
					errs <- fmt.Errorf("%s write %d: %w", w.name, n, err)
					return
				}
				acksMu.Lock()
				acks = append(acks, rec)
				acksMu.Unlock()
				if nAcked.Add(1) == crashAfter {
					crash.Do(func() {
						go func() {
							if err := cluster.Crash(); err != nil {
								errs <- err
								return
							}
							t.Logf("the database crashed after %d acknowledged writes", crashAfter)
							time.Sleep(time.Second)
							if err := cluster.Restart(ctx); err != nil {
								errs <- err
								return
							}
							up := time.Now()
							t.Log("the database is back")
							// Every process takes a write within 15 s.
							defer upAt.Store(&up) // once the probers are in wg
							for p, pr := range probers {
								wg.Go(func() {
									env, err := adp.NewCustom(ctx, pr.c.Author(), base, reg, "bench.tick", map[string]int{"n": -1})
									if err == nil {
										_, err = send(func(int) int { return p }, env)
									}
									if d := time.Since(up); err != nil || d > 15*time.Second {
										errs <- fmt.Errorf("process %d took a write %v after the database came back: %v", p, d, err)
									} else {
										t.Logf("process %d took a write %v after the database came back", p, d.Round(time.Millisecond))
									}
								})
							}
						}()
					})
				}
			}
		})
	}
	// The crash goroutine adds the probers to wg before the writers end.
	for upAt.Load() == nil && ctx.Err() == nil {
		select {
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	otherFails.Range(func(k, v any) bool {
		t.Errorf("%d answers %s", v.(*atomic.Int64).Load(), k)
		return true
	})
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d acknowledged writes; %d answers 503 service_unavailable while the database was down", len(acks), unavailable.Load())

	// The Store's head, and every process serving it.
	st, err := pgstore.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	head, err := st.Head(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(1 + len(writers) + len(probers) + len(writers)*nWrites + len(probers))
	if head != want {
		t.Fatalf("the stored log has %d records, want %d", head, want)
	}
	for p, hc := range hcs {
		v := agentClient(t, origin, "crash-verifier", hc)
		res, err := v.GetRoom(ctx, room)
		if err != nil || res.Seq != head {
			t.Fatalf("process %d serves %v, %v; the stored head is %d", p, res, err, head)
		}
		var log []*adp.Record
		for rec, err := range v.Events(ctx, room, 0) { // verified record by record
			if err != nil {
				t.Fatalf("process %d's history: %v", p, err)
			}
			log = append(log, rec)
		}
		if int64(len(log)) != head {
			t.Fatalf("process %d serves %d records, the stored head is %d", p, len(log), head)
		}
		if p > 0 {
			continue
		}
		for _, a := range acks {
			if got := log[a.Seq-1]; got.Hash != a.Hash {
				t.Fatalf("acknowledged record %d is not in the log", a.Seq)
			}
		}
		seen := map[string]int64{}
		for _, rec := range log {
			ev, err := adp.ParseEvent(rec.Envelope)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type != "bench.tick" {
				continue
			}
			k := ev.Actor.String() + " " + string(ev.Payload)
			if prev, ok := seen[k]; ok {
				t.Fatalf("%s is in the log twice, at %d and %d", k, prev, rec.Seq)
			}
			seen[k] = rec.Seq
		}
	}

	// A follower on each process gets a write made now, through another.
	for p, hc := range hcs {
		fctx, fcancel := context.WithTimeout(ctx, 15*time.Second)
		got := make(chan int64, 16)
		f := agentClient(t, origin, probers[p].name, hc)
		go func() {
			for it, err := range sse.Follow(fctx, &sse.Options{Client: f, RoomID: room, HTTPClient: hc}) {
				if err == nil && it.Kind == sse.KindRecord {
					got <- it.Record.Seq
				}
			}
		}()
		// Follow subscribes before it backfills (§17.3): once the backfill
		// has delivered the room's head, the live stream is up, and the
		// write below reaches this follower through it.
		for seq := int64(0); seq < head+int64(p); {
			select {
			case seq = <-got:
			case <-fctx.Done():
				t.Fatalf("the follower on process %d never caught up with record %d", p, head+int64(p))
			}
		}
		env, err := adp.NewCustom(ctx, probers[(p+1)%len(procs)].c.Author(), base, reg, "bench.tick", map[string]int{"n": -2 - p})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := send(func(int) int { return (p + 1) % len(procs) }, env)
		if err != nil {
			t.Fatal(err)
		}
		for seq := int64(0); seq < rec.Seq; {
			select {
			case seq = <-got:
			case <-fctx.Done():
				t.Fatalf("the follower on process %d never got record %d", p, rec.Seq)
			}
		}
		fcancel()
	}
}

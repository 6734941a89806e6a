package pgstore_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/adphost/pgstore"
	"github.com/agentprotocols/go-sdk/adphost/storetest"
	"github.com/agentprotocols/go-sdk/internal/cputime"
	"github.com/agentprotocols/go-sdk/internal/pgtest"
)

// BenchmarkAppend: the database CPU of the append transaction and of the
// write-state read, without a host: 8 rooms, 2 appenders each (one room's
// appends serialized, as under a host's room lock), each append of one
// record (batch=1) or of batch consecutive records with AppendBatch
// (group commit).
//
//	go test ./adphost/pgstore -run '^$' -bench Append -benchtime 4000x
func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct {
		read  bool
		batch int
	}{{false, 1}, {true, 1}, {false, 2}, {false, 8}} {
		b.Run(fmt.Sprintf("read=%v/batch=%d", c.read, c.batch), func(b *testing.B) { benchAppend(b, c.read, c.batch) })
	}
}

func benchAppend(b *testing.B, read bool, batch int) {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, pgtest.Database(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const rooms = 8
	per := max(b.N/rooms, 1)
	chains := make([][]*adp.Record, rooms)
	for r := range chains {
		recs := benchChain(b, fmt.Sprintf("bench%d", r), per+1)
		if err := s.Append(ctx, storetest.Commit(recs[0])); err != nil {
			b.Fatal(err)
		}
		chains[r] = recs[1:]
	}
	d0, _ := pgtest.Current().CPUTime()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for r := range rooms {
		var mu sync.Mutex
		next := 0
		for range 2 {
			wg.Go(func() {
				for {
					mu.Lock()
					if next >= len(chains[r]) {
						mu.Unlock()
						return
					}
					end := min(next+batch, len(chains[r]))
					var cs []*adphost.Commit
					for _, rec := range chains[r][next:end] {
						c := storetest.Commit(rec)
						if read {
							if _, err := s.WriteState(ctx, rec.RoomID, c.Nonce.Actor, rec.Envelope.Hash()); err != nil {
								b.Error(err)
							}
						}
						cs = append(cs, c)
					}
					next = end
					if err := s.AppendBatch(ctx, cs); err != nil {
						b.Error(err)
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	el := time.Since(start)
	d1, _ := pgtest.Current().CPUTime()
	n := rooms * per
	b.ReportMetric(float64(n)/el.Seconds(), "appends/s")
	b.ReportMetric(float64((d1-d0).Microseconds())/float64(n), "d-µs/append")
	b.ReportMetric((d1-d0).Seconds()/el.Seconds(), "db-cores")
}

// BenchmarkRecords: the latency and database CPU of one history read of
// limit records (1: a catch-up, 100: a default page, 1000: the largest)
// from a room of 2,000 short messages, under the default page budget.
//
//	go test ./adphost/pgstore -run '^$' -bench Records
func BenchmarkRecords(b *testing.B) {
	ctx := context.Background()
	const n = 2000
	s := benchRoom(b, "read", n)
	for _, limit := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			d0, _ := pgtest.Current().CPUTime()
			for i := range b.N {
				after := int64(i*7919) % (n - int64(limit))
				recs, err := s.Records(ctx, "read", after, limit, adphost.DefaultMaxPageBytes)
				if err != nil || len(recs) != limit {
					b.Fatalf("%d records, %v", len(recs), err)
				}
			}
			d1, _ := pgtest.Current().CPUTime()
			b.ReportMetric(float64((d1-d0).Microseconds())/float64(b.N), "d-µs/read")
		})
	}
}

// benchRoom returns a Store on a fresh database holding the first n
// records of room (benchChain); the benchmark's cleanup closes it.
func benchRoom(b *testing.B, room string, n int) *pgstore.Store {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, pgtest.Database(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	for _, rec := range benchChain(b, room, n) {
		if err := s.Append(ctx, storetest.Commit(rec)); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// benchChain returns the first n records of a room: its room.create and
// then short messages, by one author.
func benchChain(b *testing.B, room string, n int) []*adp.Record {
	ctx := context.Background()
	a := storetest.Author(room)
	env, err := adp.NewRoomCreate(ctx, a, adp.RoomCreate{Topic: "b", Visibility: adp.VisibilityPublic,
		StartTime: storetest.T0.UnixMilli(), EndTime: storetest.T0.Add(time.Hour).UnixMilli()})
	if err != nil {
		b.Fatal(err)
	}
	recs := []*adp.Record{adp.NewRecord(room, nil, storetest.T0.UnixMilli(), env)}
	for k := range n - 1 {
		last := recs[len(recs)-1]
		env, err := adp.NewMessage(ctx, a, adp.Base{RoomID: room, Seq: last.Seq, Hash: last.Hash},
			adp.Message{ContentType: "text/plain", Content: adp.TextContent(fmt.Sprint(k))})
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, adp.NewRecord(room, last, last.ReceivedAt+1, env))
	}
	return recs
}

// BenchmarkHostHistory: the latency of one anonymous history page of
// limit records through a host on PostgreSQL (GET …/events over loopback
// HTTP), from a room of 2,000 short messages, and the database CPU per
// page.
//
//	go test ./adphost/pgstore -run '^$' -bench HostHistory
func BenchmarkHostHistory(b *testing.B) {
	const n = 2000
	s := benchRoom(b, "history", n)
	_, srv := adphosttest.NewServer(b, &adphost.Options{Store: s, Now: func() time.Time { return storetest.T0 }, Heartbeat: -1})
	get := func(after int64, limit int) {
		resp, err := srv.Client().Get(fmt.Sprintf("%s/v1/rooms/history/events?after_seq=%d&limit=%d", srv.URL, after, limit))
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %s %v", resp.Status, body, err)
		}
	}
	get(0, 1) // loads the room
	for _, limit := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			d0, _ := pgtest.Current().CPUTime()
			c0 := cputime.Process()
			for i := range b.N {
				get(int64(i*7919)%(n-int64(limit)), limit)
			}
			c1 := cputime.Process()
			d1, _ := pgtest.Current().CPUTime()
			b.ReportMetric(float64((d1-d0).Microseconds())/float64(b.N), "d-µs/read")
			// The host and its client share this process.
			b.ReportMetric(float64((c1-c0).Microseconds())/float64(b.N), "cpu-µs/read")
		})
	}
}

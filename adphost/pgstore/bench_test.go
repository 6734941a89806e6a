package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/pgstore"
	"github.com/agentprotocols/go-sdk/adphost/storetest"
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
		room := fmt.Sprintf("bench%d", r)
		a := storetest.Author(room)
		env, err := adp.NewRoomCreate(ctx, a, adp.RoomCreate{Topic: "b", Visibility: adp.VisibilityPublic,
			StartTime: storetest.T0.UnixMilli(), EndTime: storetest.T0.Add(time.Hour).UnixMilli()})
		if err != nil {
			b.Fatal(err)
		}
		recs := []*adp.Record{adp.NewRecord(room, nil, storetest.T0.UnixMilli(), env)}
		for k := range per {
			last := recs[len(recs)-1]
			env, err := adp.NewMessage(ctx, a, adp.Base{RoomID: room, Seq: last.Seq, Hash: last.Hash},
				adp.Message{ContentType: "text/plain", Content: adp.TextContent(fmt.Sprint(k))})
			if err != nil {
				b.Fatal(err)
			}
			recs = append(recs, adp.NewRecord(room, last, last.ReceivedAt+1, env))
		}
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

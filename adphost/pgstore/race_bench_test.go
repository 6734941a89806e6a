package pgstore_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/adphosttest"
	"github.com/agentprotocols/go-sdk/adphost/pgstore"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/pgtest"
	"github.com/agentprotocols/go-sdk/packs"
)

// raceStore counts a pgstore.Store's snapshot reads (room loads, and any
// rebuild of a replica) and its failed batch appends (lost races).
type raceStore struct {
	*pgstore.Store
	snaps, batches, failed atomic.Int64
}

func (s *raceStore) Snapshot(ctx context.Context, room string) (int64, []byte, error) {
	s.snaps.Add(1)
	return s.Store.Snapshot(ctx, room)
}

func (s *raceStore) AppendBatch(ctx context.Context, cs []*adphost.Commit) error {
	s.batches.Add(1)
	err := s.Store.AppendBatch(ctx, cs)
	if err != nil {
		s.failed.Add(1)
	}
	return err
}

// BenchmarkTwoHostsOneRoom: 8 writers post signals to one room of 20,000
// records (BENCH_ROOM_RECORDS) for 5 s through one host, then for 5 s
// through two hosts on the same database, half the writers each, whose
// group-commit batches lose the append race to each other. It reports
// each phase's accepted writes per second, latency p50 and p99, and the
// two-host phase's failed batches and snapshot reads (a replica rebuilt
// from the Store). b.N is ignored.
//
//	go test ./adphost/pgstore -run '^$' -bench TwoHostsOneRoom -benchtime 1x
func BenchmarkTwoHostsOneRoom(b *testing.B) {
	ctx := context.Background()
	target := int64(20_000)
	if n, err := strconv.ParseInt(os.Getenv("BENCH_ROOM_RECORDS"), 10, 64); err == nil && n > 0 {
		target = n
	}
	st, err := pgstore.Open(ctx, pgtest.Database(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	rs := &raceStore{Store: st}
	_, srv1 := adphosttest.NewServer(b, &adphost.Options{Store: rs, RateLimits: adphost.Unlimited()})
	client := func(url, name string) *adp.Client {
		seed := sha256.Sum256([]byte("two hosts " + name))
		k, err := identity.NewKeyFromSeed(seed[:])
		if err != nil {
			b.Fatal(err)
		}
		c, err := adp.NewClient(url, &adp.ClientOptions{Signer: k, AllowLoopbackHTTP: true, RetryBackoff: time.Millisecond, MaxRetryWait: 50 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	d, err := packs.ParseDeclaration([]byte(`{"type":"team.nudge","kind":"signal","title":"Nudge","schema":{"type":"object"}}`))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	creator := client(srv1.URL, "creator")
	created, err := creator.CreateRoom(ctx, adp.RoomCreate{Topic: "race", Visibility: adp.VisibilityPublic,
		StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(), Types: []packs.Declaration{d}})
	if err != nil {
		b.Fatal(err)
	}
	room := created.RoomID
	const writers = 8
	names := make([]string, writers)
	cs := make([]*adp.Client, writers)
	for i := range cs {
		names[i] = fmt.Sprint("writer", i)
		cs[i] = client(srv1.URL, names[i])
		if _, err := cs[i].Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}); err != nil {
			b.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			for {
				if head, err := st.Head(ctx, room); err != nil || head >= target {
					return
				}
				c.SendCustom(ctx, room, "team.nudge", map[string]int{})
			}
		})
	}
	wg.Wait()

	phase := func(name string) {
		b.Helper()
		s0, b0, f0 := rs.snaps.Load(), rs.batches.Load(), rs.failed.Load()
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var mu sync.Mutex
		var lats []time.Duration
		start := time.Now()
		for _, c := range cs {
			wg.Go(func() {
				for pctx.Err() == nil {
					t := time.Now()
					if _, err := c.SendCustom(pctx, room, "team.nudge", map[string]int{}); err == nil {
						mu.Lock()
						lats = append(lats, time.Since(t))
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		el := time.Since(start)
		slices.Sort(lats)
		if len(lats) == 0 {
			b.Fatalf("%s: no write accepted", name)
		}
		b.ReportMetric(float64(len(lats))/el.Seconds(), name+"-writes/s")
		b.ReportMetric(float64(lats[len(lats)/2].Microseconds())/1000, name+"-p50-ms")
		b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds())/1000, name+"-p99-ms")
		b.ReportMetric(float64(rs.batches.Load()-b0), name+"-batches")
		b.ReportMetric(float64(rs.failed.Load()-f0), name+"-failed-batches")
		b.ReportMetric(float64(rs.snaps.Load()-s0), name+"-snapshot-reads")
	}
	b.ResetTimer()
	phase("1host")
	_, srv2 := adphosttest.NewServer(b, &adphost.Options{Store: rs, RateLimits: adphost.Unlimited()})
	for i := range writers / 2 {
		cs[i] = client(srv2.URL, names[i])
	}
	phase("2hosts")
}

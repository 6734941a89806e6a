package pgstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
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
	"github.com/agentprotocols/go-sdk/envelope"
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

// BenchmarkTwoHostsOneRoom: 8 writers post pre-signed signals to one room
// of 20,000 records (BENCH_ROOM_RECORDS) for 5 s through one host, then
// for 5 s through two hosts on the same database, half the writers each,
// whose group-commit batches lose the append race to each other. It
// reports each phase's accepted writes per second, latency p50 and p99,
// batches, failed batches and snapshot reads (a replica rebuilt from the
// Store). b.N is ignored.
//
//	go test ./adphost/pgstore -run '^$' -bench TwoHostsOneRoom -benchtime 1x
func BenchmarkTwoHostsOneRoom(b *testing.B) {
	ctx := context.Background()
	target := 20_000
	if n, err := strconv.Atoi(os.Getenv("BENCH_ROOM_RECORDS")); err == nil && n > 0 {
		target = n
	}
	st, err := pgstore.Open(ctx, pgtest.Database(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	rs := &raceStore{Store: st}
	_, srv1 := adphosttest.NewServer(b, &adphost.Options{Store: rs, RateLimits: adphost.Unlimited()})
	key := func(name string) *identity.PrivateKey {
		seed := sha256.Sum256([]byte("two hosts " + name))
		k, err := identity.NewKeyFromSeed(seed[:])
		if err != nil {
			b.Fatal(err)
		}
		return k
	}
	d, err := packs.ParseDeclaration([]byte(`{"type":"team.nudge","kind":"signal","title":"Nudge","schema":{"type":"object","properties":{"n":{"type":"integer"}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	creator, err := adp.NewClient(srv1.URL, &adp.ClientOptions{Signer: key("creator"), AllowLoopbackHTTP: true})
	if err != nil {
		b.Fatal(err)
	}
	created, err := creator.CreateRoom(ctx, adp.RoomCreate{Topic: "race", Visibility: adp.VisibilityPublic,
		StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(), Types: []packs.Declaration{d}})
	if err != nil {
		b.Fatal(err)
	}
	room := created.RoomID
	base := adp.Base{RoomID: room, Seq: created.Seq, Hash: created.Hash}
	reg := packs.NewRegistry(nil)
	if err := reg.Declare(ctx, 1, d); err != nil {
		b.Fatal(err)
	}

	// Each writer signs its signals ahead (anchored on the room.create,
	// so they need no head), and posts them in order.
	const writers = 8
	type writer struct {
		author *envelope.Author
		url    string
		hc     *http.Client
		n      int
	}
	ws := make([]*writer, writers)
	for i := range ws {
		w := &writer{author: envelope.NewAuthor(key(fmt.Sprint("writer", i))), url: srv1.URL, hc: srv1.Client()}
		c, err := adp.NewClient(srv1.URL, &adp.ClientOptions{Signer: w.author.Signer, AllowLoopbackHTTP: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Join(ctx, room, adp.Join{Role: adp.RoleSpeaker}); err != nil {
			b.Fatal(err)
		}
		ws[i] = w
	}
	sign := func(w *writer, n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			env, err := adp.NewCustom(ctx, w.author, base, reg, "team.nudge", map[string]int{"n": w.n})
			if err != nil {
				b.Fatal(err)
			}
			w.n++
			out[i] = env.AppendJSON(nil)
		}
		return out
	}
	// post sends one write and reports whether it was accepted.
	post := func(w *writer, body []byte) bool {
		resp, err := w.hc.Post(w.url+"/v1/rooms/"+room, "application/json", bytes.NewReader(body))
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	var wg sync.WaitGroup
	for _, w := range ws {
		bodies := sign(w, target/writers)
		wg.Go(func() {
			for _, body := range bodies {
				post(w, body)
			}
		})
	}
	wg.Wait()

	phase := func(name string) {
		b.Helper()
		bodies := make([][][]byte, writers)
		for i, w := range ws {
			bodies[i] = sign(w, 1500)
		}
		s0, b0, f0 := rs.snaps.Load(), rs.batches.Load(), rs.failed.Load()
		deadline := time.Now().Add(5 * time.Second)
		var mu sync.Mutex
		var lats []time.Duration
		start := time.Now()
		for i, w := range ws {
			wg.Go(func() {
				for _, body := range bodies[i] {
					if time.Now().After(deadline) {
						return
					}
					t := time.Now()
					if post(w, body) {
						mu.Lock()
						lats = append(lats, time.Since(t))
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		el := time.Since(start)
		if len(lats) == 0 {
			b.Fatalf("%s: no write accepted", name)
		}
		slices.Sort(lats)
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
	// The second host loads the room before the clock starts.
	if resp, err := srv2.Client().Get(srv2.URL + "/v1/rooms/" + room); err == nil {
		resp.Body.Close()
	}
	for _, w := range ws[:writers/2] {
		w.url, w.hc = srv2.URL, srv2.Client()
	}
	phase("2hosts")
}

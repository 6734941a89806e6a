package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/adphost/storetest"
	"github.com/agentprotocols/go-sdk/internal/cputime"
)

// BenchmarkCommit: the cost of one group-commit transaction of the host's
// writes, as cmd/adphost's HostWrites sees them on a quiet machine (a few
// writes per transaction): on 1 room, one batch of k records; on 8 rooms,
// k rooms' batches of one record each. Each room has 400 records before
// the timer starts. It reports the pages a transaction writes and the
// process's CPU (user and system, the fdatasyncs included) per write:
//
//	go test ./adphost/boltstore -run '^$' -bench Commit -benchtime 2000x
func BenchmarkCommit(b *testing.B) {
	for _, rooms := range []int{1, 8} {
		for _, k := range []int{1, 4, 8} {
			b.Run(fmt.Sprintf("rooms=%d/writes=%d", rooms, k), func(b *testing.B) { benchCommit(b, rooms, k) })
		}
	}
}

func benchCommit(b *testing.B, nRooms, k int) {
	ctx := context.Background()
	s, err := Open(filepath.Join(b.TempDir(), "host.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const before = 400
	txs := max(b.N/k, 1)
	per := before + txs*k/nRooms + 1
	chains := make([][]*adphost.Commit, nRooms)
	for r := range chains {
		chains[r] = benchChain(b, fmt.Sprintf("room%02d", r), per)
		for i := 0; i < before; i += 50 {
			if err := appendRun(ctx, s, chains[r][i:min(i+50, before)]); err != nil {
				b.Fatal(err)
			}
		}
		chains[r] = chains[r][before:]
	}
	// One transaction's updates: one batch of k records on one room, one
	// record of each of k rooms on several.
	groups := make([][]*update, txs)
	for t := range groups {
		if nRooms == 1 {
			cs := chains[0][t*k : (t+1)*k]
			groups[t] = []*update{{fn: func(tx *bolt.Tx) error { return s.appendCommits(tx, cs) }}}
			continue
		}
		for j := range k {
			n := t*k + j
			cs := chains[n%nRooms][n/nRooms : n/nRooms+1]
			groups[t] = append(groups[t], &update{fn: func(tx *bolt.Tx) error { return s.appendCommits(tx, cs) }})
		}
	}
	w0 := pagesWritten(s)
	c0 := cputime.Process()
	b.ResetTimer()
	for _, g := range groups {
		s.commit(g)
		for _, u := range g {
			if u.err != nil {
				b.Fatal(u.err)
			}
		}
	}
	b.StopTimer()
	cpu, pages := cputime.Process()-c0, pagesWritten(s)-w0
	b.ReportMetric(float64(pages)/float64(txs), "pages/tx")
	b.ReportMetric(float64(cpu.Microseconds())/float64(txs*k), "cpu-µs/write")
}

// appendRun appends consecutive records of one room in one transaction
// (the first with its index entry).
func appendRun(ctx context.Context, s *Store, cs []*adphost.Commit) error {
	if cs[0].Index != nil {
		if err := s.Append(ctx, cs[0]); err != nil {
			return err
		}
		cs = cs[1:]
	}
	return s.AppendBatch(ctx, cs)
}

// benchChain returns n commits of a new public room: its room.create, then
// signals-sized messages by one writer of its own.
func benchChain(b *testing.B, room string, n int) []*adphost.Commit {
	ctx := context.Background()
	env, err := adp.NewRoomCreate(ctx, storetest.Author("creator"), adp.RoomCreate{Topic: "bench " + room, Visibility: adp.VisibilityPublic,
		StartTime: storetest.T0.UnixMilli(), EndTime: storetest.T0.Add(time.Hour).UnixMilli()})
	if err != nil {
		b.Fatal(err)
	}
	recs := []*adp.Record{adp.NewRecord(room, nil, storetest.T0.UnixMilli(), env)}
	writer := storetest.Author("writer " + room)
	for len(recs) < n {
		last := recs[len(recs)-1]
		env, err := adp.NewMessage(ctx, writer, adp.Base{RoomID: room, Seq: last.Seq, Hash: last.Hash},
			adp.Message{ContentType: "text/plain", Content: adp.TextContent(fmt.Sprintf("tick %d", len(recs)))})
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, adp.NewRecord(room, last, last.ReceivedAt+1, env))
	}
	cs := make([]*adphost.Commit, n)
	for i, rec := range recs {
		cs[i] = storetest.Commit(rec)
	}
	return cs
}

// pagesWritten is how many pages the store's transactions wrote.
func pagesWritten(s *Store) int64 {
	st := s.db.Stats()
	return st.TxStats.GetWrite()
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost/boltstore"
	"github.com/agentprotocols/go-sdk/internal/raceflag"
	"github.com/agentprotocols/go-sdk/packs"
)

// TestKilledHostKeepsAcknowledgedWrites: a host process on a bbolt file
// (--data), 16 writers on one room and 16 more on rooms of their own
// (group commit within a room and across rooms), SIGKILLed in the middle
// of the burst: the file opens again, every acknowledged write is in it,
// and its history is whole (every record follows the one before).
func TestKilledHostKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts host processes")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	addr := freeAddr(t)
	origin := "http://" + addr
	p := &hostProc{tb: t, addr: addr, args: "--addr " + addr + " --no-quotas --data " + dir}
	p.start()
	hc := p.client()

	nShared, nOwn, nWrites := 16, 16, 60
	if raceflag.Enabled {
		nShared, nOwn, nWrites = 8, 8, 30
	}
	decl, err := packs.ParseDeclaration([]byte(tickDecl))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	newRoom := func(c *adp.Client) (string, adp.Base) {
		rec, err := c.CreateRoom(ctx, adp.RoomCreate{Topic: "kill", Visibility: adp.VisibilityPublic,
			StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(), Types: []packs.Declaration{decl}})
		if err != nil {
			t.Fatal(err)
		}
		return rec.RoomID, adp.Base{RoomID: rec.RoomID, Seq: rec.Seq, Hash: rec.Hash}
	}
	creator := agentClient(t, origin, "kill-creator", hc)
	shared, sharedBase := newRoom(creator)
	if _, err := creator.Sync(ctx, shared); err != nil {
		t.Fatal(err)
	}
	reg := creator.Verified(shared).Registry()

	type writer struct {
		room string
		base adp.Base
		reqs [][]byte
	}
	var ws []*writer
	for i := range nShared + nOwn {
		c := agentClient(t, origin, fmt.Sprintf("kill-writer-%d", i), hc)
		w := &writer{room: shared, base: sharedBase}
		if i >= nShared {
			w.room, w.base = newRoom(c)
		} else if _, err := c.Join(ctx, shared, adp.Join{Role: adp.RoleSpeaker}); err != nil {
			t.Fatal(err)
		}
		for n := range nWrites {
			env, err := adp.NewCustom(ctx, c.Author(), w.base, reg, "bench.tick", map[string]int{"n": n})
			if err != nil {
				t.Fatal(err)
			}
			w.reqs = append(w.reqs, rawPost(origin, "/v1/rooms/"+w.room, env.AppendJSON(nil)))
		}
		ws = append(ws, w)
	}

	// Each writer posts its writes in order on one connection, and keeps
	// the record of every 200 answer, until the connection dies.
	var (
		mu     sync.Mutex
		acked  []*adp.Record
		nAcked atomic.Int64
		kill   sync.Once
	)
	killAt := int64((nShared + nOwn) * nWrites / 2)
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer conn.Close()
			rd := bufio.NewReaderSize(conn, 16<<10)
			for _, req := range w.reqs {
				if _, err := conn.Write(req); err != nil {
					return
				}
				resp, err := http.ReadResponse(rd, nil)
				if err != nil {
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Errorf("a write was answered %d %s (%v)", resp.StatusCode, body, err)
					return
				}
				rec, err := adp.ParseRecord(body)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked = append(acked, rec)
				mu.Unlock()
				if nAcked.Add(1) == killAt {
					kill.Do(p.kill)
				}
			}
		})
	}
	wg.Wait()
	kill.Do(p.kill)
	t.Logf("SIGKILLed after %d acknowledged writes; %d acknowledged in all", killAt, len(acked))

	st, err := boltstore.Open(filepath.Join(dir, "host.db"), nil)
	if err != nil {
		t.Fatalf("reopening the file after the kill: %v", err)
	}
	defer st.Close()
	logs := map[string][]*adp.Record{}
	for _, w := range ws {
		if _, ok := logs[w.room]; ok {
			continue
		}
		recs, err := st.Records(ctx, w.room, 0, 10_000, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for i, rec := range recs {
			if rec.Seq != int64(i+1) || (i > 0 && rec.PreHash != recs[i-1].Hash) || rec.CheckHash() != nil {
				t.Fatalf("room %s: record %d does not follow the one before", w.room, rec.Seq)
			}
		}
		logs[w.room] = recs
	}
	for _, a := range acked {
		log := logs[a.RoomID]
		if a.Seq > int64(len(log)) || log[a.Seq-1].Hash != a.Hash {
			t.Fatalf("acknowledged record %s/%d is not in the file", a.RoomID, a.Seq)
		}
	}
}

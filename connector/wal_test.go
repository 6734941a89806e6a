package connector

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	bolt "go.etcd.io/bbolt"
)

// openWALTest opens a state store in dir.
func openWALTest(t testing.TB, dir string) *walStore {
	t.Helper()
	st, err := openStateStore(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return st.(*walStore)
}

// kill closes the store's files as a killed process leaves them: no fold,
// no flush (what was written stays in the file).
func (s *walStore) kill() {
	s.flushMu.Lock()
	s.closed = true
	s.flushMu.Unlock()
	s.f.Close()
	s.db.Close()
}

// walModel is what the store must hold: bucket → key → JSON value.
type walModel map[string]map[string]string

// check compares every read of the store with the model: Get and Has of
// every key, Scan of every prefix and ScanFrom every key.
func (m walModel) check(t *testing.T, tx stateTx, where string) {
	t.Helper()
	for _, b := range []string{"a", "b", "c"} {
		for i := range 12 {
			k := fmt.Sprintf("k%02d", i)
			want, ok := m[b][k]
			var got any
			found, err := tx.Get(b, k, &got)
			if err != nil || found != ok || tx.Has(b, k) != ok {
				t.Fatalf("%s: %s/%s: found %v (Has %v), err %v; want found %v", where, b, k, found, tx.Has(b, k), err, ok)
			}
			if ok {
				raw, _ := json.Marshal(got, json.Deterministic(true))
				if string(raw) != want {
					t.Fatalf("%s: %s/%s = %s, want %s", where, b, k, raw, want)
				}
			}
		}
		var keys []string
		for k := range m[b] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, prefix := range []string{"", "k0", "k1", "x"} {
			for _, from := range []string{"", "k05", "k10", "k99"} {
				var want, got []string
				for _, k := range keys {
					if strings.HasPrefix(k, prefix) && k >= max(from, prefix) {
						want = append(want, k+"="+m[b][k])
					}
				}
				if err := tx.ScanFrom(b, prefix, from, func(k string, raw []byte) error {
					got = append(got, k+"="+string(raw))
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: ScanFrom(%s, %q, %q) = %q, want %q", where, b, prefix, from, got, want)
				}
			}
		}
	}
}

// TestWALReads holds every read of the store (within an update and in a
// View) to a model through random updates, deferred or flushed, folds,
// kills and reopenings.
func TestWALReads(t *testing.T) {
	dir := t.TempDir()
	s := openWALTest(t, dir)
	defer func() { s.Close() }()
	m := walModel{}
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 400 {
		next := walModel{}
		for b, kv := range m {
			next[b] = map[string]string{}
			for k, v := range kv {
				next[b][k] = v
			}
		}
		fail := rng.IntN(10) == 0
		update := s.Update
		if rng.IntN(2) == 0 {
			update = s.UpdateDeferred
		}
		err := update(func(tx stateTx) error {
			for range 1 + rng.IntN(4) {
				b := []string{"a", "b", "c"}[rng.IntN(3)]
				k := fmt.Sprintf("k%02d", rng.IntN(12))
				if next[b] == nil {
					next[b] = map[string]string{}
				}
				if rng.IntN(3) == 0 {
					delete(next[b], k)
					if err := tx.Delete(b, k); err != nil {
						return err
					}
				} else {
					v := fmt.Sprintf(`{"step":%d}`, step)
					next[b][k] = v
					if err := tx.Put(b, k, jsontext.Value(v)); err != nil {
						return err
					}
				}
			}
			// Within the update, its own changes are read back.
			next.check(t, tx, fmt.Sprintf("step %d, in the update", step))
			if fail {
				return errors.New("boom")
			}
			return nil
		})
		if fail != (err != nil) {
			t.Fatalf("step %d: err %v", step, err)
		}
		if !fail {
			m = next
		}
		s.View(func(tx stateTx) error { m.check(t, tx, fmt.Sprintf("step %d", step)); return nil })
		switch rng.IntN(20) {
		case 0:
			s.mu.Lock()
			err = s.fold()
			s.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
		case 1:
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(filepath.Join(dir, walName)); err != nil || fi.Size() != 0 {
				t.Fatalf("step %d: after Close the log is %v bytes (%v)", step, fi.Size(), err)
			}
			s = openWALTest(t, dir)
		case 2:
			s.kill()
			s = openWALTest(t, dir)
		}
		s.View(func(tx stateTx) error { m.check(t, tx, fmt.Sprintf("step %d, after", step)); return nil })
	}
}

// TestWALPowerLoss: a power loss keeps every update flushed before it
// returned and, of the deferred ones, a prefix; it never keeps part of an
// update, nor a deferred update without the ones before it.
func TestWALPowerLoss(t *testing.T) {
	dir := t.TempDir()
	s := openWALTest(t, dir)
	s.delay = time.Hour // no background flush
	put := func(update func(func(stateTx) error) error, k string) {
		t.Helper()
		if err := update(func(tx stateTx) error {
			if err := tx.Put("a", k, 1); err != nil {
				return err
			}
			return tx.Put("b", k, 1)
		}); err != nil {
			t.Fatal(err)
		}
	}
	put(s.UpdateDeferred, "d1")
	put(s.Update, "f1") // flushes d1 with it
	put(s.UpdateDeferred, "d2")
	put(s.UpdateDeferred, "d3")
	s.kill()
	if n := losePower(t, dir); n != 2 {
		t.Fatalf("the power loss dropped %d updates, want the 2 deferred last", n)
	}
	s = openWALTest(t, dir)
	defer func() { s.Close() }()
	s.View(func(tx stateTx) error {
		for k, want := range map[string]bool{"d1": true, "f1": true, "d2": false, "d3": false} {
			if tx.Has("a", k) != want || tx.Has("b", k) != want {
				t.Errorf("%s: kept a %v, b %v; want %v", k, tx.Has("a", k), tx.Has("b", k), want)
			}
		}
		return nil
	})
	// The log goes on after what it kept.
	put(s.Update, "f2")
	s.kill()
	s = openWALTest(t, dir)
	s.View(func(tx stateTx) error {
		if !tx.Has("a", "f2") || tx.Has("a", "d2") {
			t.Error("the update after the power loss was not kept alone")
		}
		return nil
	})
}

// TestWALDeferredFlush: a deferred update is flushed by the background
// flush, without another update.
func TestWALDeferredFlush(t *testing.T) {
	s := openWALTest(t, t.TempDir())
	defer s.Close()
	flushed := make(chan struct{}, 1)
	s.flushMu.Lock()
	s.delay = time.Millisecond
	s.onFlush = func() { flushed <- struct{}{} }
	s.flushMu.Unlock()
	if err := s.UpdateDeferred(func(tx stateTx) error { return tx.Put("a", "k", 1) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-flushed:
	case <-time.After(10 * time.Second):
		t.Fatal("no background flush")
	}
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if s.flushed != s.written {
		t.Fatalf("flushed through update %d of %d", s.flushed, s.written)
	}
}

// TestWALFailure: after a failed write of the log, the store takes no
// more updates and shows none of the failed one; reopening reads back
// what the log kept.
func TestWALFailure(t *testing.T) {
	dir := t.TempDir()
	s := openWALTest(t, dir)
	if err := s.Update(func(tx stateTx) error { return tx.Put("a", "kept", 1) }); err != nil {
		t.Fatal(err)
	}
	s.f.Close() // every later write of the log fails
	if err := s.Update(func(tx stateTx) error { return tx.Put("a", "lost", 1) }); err == nil {
		t.Fatal("an update whose log write failed succeeded")
	}
	if err := s.Update(func(tx stateTx) error { return tx.Put("a", "later", 1) }); err == nil {
		t.Fatal("an update after a failed log write succeeded")
	}
	s.View(func(tx stateTx) error {
		if tx.Has("a", "lost") || tx.Has("a", "later") || !tx.Has("a", "kept") {
			t.Error("the failed updates are visible, or the one before is not")
		}
		return nil
	})
	s.db.Close()
	s = openWALTest(t, dir)
	defer s.Close()
	s.View(func(tx stateTx) error {
		if !tx.Has("a", "kept") || tx.Has("a", "lost") {
			t.Error("reopened: the log's update is lost, or the failed one is kept")
		}
		return nil
	})
}

// TestWALOlderStateDB: a log that starts after the last update state.db
// folded (state.db replaced by an older copy) is refused, not skipped.
func TestWALOlderStateDB(t *testing.T) {
	dir := t.TempDir()
	s := openWALTest(t, dir)
	if err := s.Update(func(tx stateTx) error { return tx.Put("a", "k", 1) }); err != nil {
		t.Fatal(err)
	}
	s.Close() // folded: state.db is at update 1
	old, err := os.ReadFile(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	s = openWALTest(t, dir)
	for range 2 {
		if err := s.Update(func(tx stateTx) error { return tx.Put("a", "k", 2) }); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	s.fold() // state.db at update 3, the log starts over
	s.mu.Unlock()
	if err := s.Update(func(tx stateTx) error { return tx.Put("a", "k", 3) }); err != nil {
		t.Fatal(err)
	}
	s.kill()
	if err := os.WriteFile(filepath.Join(dir, "state.db"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openStateStore(dir, time.Second); err == nil || !strings.Contains(err.Error(), "older than its log") {
		t.Fatalf("opening an older state.db under its log: %v", err)
	}
}

// TestOutboxJournalMigration: Open moves what an outbox journal of an
// earlier version holds above the stored nonce into the outbox, raises the
// stored nonce, and removes the journal.
func TestOutboxJournalMigration(t *testing.T) {
	dir := t.TempDir()
	s := openWALTest(t, dir)
	if err := s.Update(func(tx stateTx) error { return tx.Put(bMeta, "nonce", int64(5)) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	var journal []byte
	for n := int64(4); n <= 7; n++ {
		journal = append(journal, legacyJournalFrame(t, n, &outboxEntry{Host: "http://h", RoomID: "r", CreatedAt: n})...)
	}
	journal = append(journal, 0, 0, 1) // a frame cut short
	if err := os.WriteFile(filepath.Join(dir, journalName), journal, 0o600); err != nil {
		t.Fatal(err)
	}
	s = openWALTest(t, dir)
	defer s.Close()
	var ids []string
	var nonce int64
	s.View(func(tx stateTx) error {
		tx.Get(bMeta, "nonce", &nonce)
		return tx.Scan(bOutbox, "", func(k string, _ []byte) error { ids = append(ids, k); return nil })
	})
	if want := []string{outboxID(6), outboxID(7)}; !slices.Equal(ids, want) || nonce != 7 {
		t.Fatalf("outbox %q, nonce %d; want %q and 7", ids, nonce, want)
	}
	if _, err := os.Stat(filepath.Join(dir, journalName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the journal is still there: %v", err)
	}
}

// BenchmarkStoreUpdate compares a flushed update, a deferred one and a
// bbolt commit (what an update was before the state log) of one record,
// its room and an outbox entry's removal.
func BenchmarkStoreUpdate(b *testing.B) {
	rec := jsontext.Value(`{"seq":1,"record":"` + strings.Repeat("x", 1500) + `"}`)
	change := func(i int) func(tx stateTx) error {
		return func(tx stateTx) error {
			k := fmt.Sprintf("%020d", i)
			if err := tx.Put(bRecords, k, rec); err != nil {
				return err
			}
			if err := tx.Put(bRooms, "room", map[string]int{"synced_seq": i}); err != nil {
				return err
			}
			return tx.Delete(bOutbox, k)
		}
	}
	for _, mode := range []string{"flushed", "deferred", "bbolt"} {
		b.Run(mode, func(b *testing.B) {
			s := openWALTest(b, b.TempDir())
			defer s.Close()
			i := 0
			for b.Loop() {
				i++
				var err error
				switch mode {
				case "flushed":
					err = s.Update(change(i))
				case "deferred":
					err = s.UpdateDeferred(change(i))
				case "bbolt":
					err = s.db.Update(func(btx *bolt.Tx) error {
						return change(i)(&boltChanges{btx})
					})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// boltChanges applies a change function straight to a bbolt transaction.
type boltChanges struct{ tx *bolt.Tx }

func (c *boltChanges) Get(string, string, any) (bool, error) { return false, nil }
func (c *boltChanges) Has(string, string) bool               { return false }
func (c *boltChanges) Scan(string, string, func(string, []byte) error) error {
	return nil
}
func (c *boltChanges) ScanFrom(string, string, string, func(string, []byte) error) error {
	return nil
}
func (c *boltChanges) Put(bucket, key string, v any) error {
	b, err := c.tx.CreateBucketIfNotExists([]byte(bucket))
	if err != nil {
		return err
	}
	raw, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		return err
	}
	return b.Put([]byte(key), raw)
}
func (c *boltChanges) Delete(bucket, key string) error {
	if b := c.tx.Bucket([]byte(bucket)); b != nil {
		return b.Delete([]byte(key))
	}
	return nil
}

// TestWALViewIsASnapshot: a View sees the state as of its start, also
// while updates land under it.
func TestWALViewIsASnapshot(t *testing.T) {
	s := openWALTest(t, t.TempDir())
	defer s.Close()
	if err := s.Update(func(tx stateTx) error {
		for _, k := range []string{"k1", "k2", "k3"} {
			if err := tx.Put("a", k, 1); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	read := func(tx stateTx) string {
		var out []string
		tx.Scan("a", "", func(k string, raw []byte) error { out = append(out, k+"="+string(raw)); return nil })
		var v int
		ok, _ := tx.Get("a", "k1", &v)
		return fmt.Sprintf("%q k1=%d,%v has(k4)=%v", out, v, ok, tx.Has("a", "k4"))
	}
	s.View(func(tx stateTx) error {
		before := read(tx)
		done := make(chan error)
		go func() {
			done <- s.Update(func(tx stateTx) error {
				for _, k := range []string{"k1", "k4"} {
					if err := tx.Put("a", k, 2); err != nil {
						return err
					}
				}
				return tx.Delete("a", "k2")
			})
		}()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if after := read(tx); after != before {
			t.Errorf("a View saw an update that landed under it: %s, then %s", before, after)
		}
		return nil
	})
}

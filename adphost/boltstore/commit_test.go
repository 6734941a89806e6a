package boltstore

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"

	bolt "go.etcd.io/bbolt"

	"github.com/agentprotocols/go-sdk/adphost"
)

// TestGroupCommit: updates that arrive while a transaction is under way
// share the next one; one refused by its own check gets its refusal and
// the others go on in that transaction; one that fails after a change
// rolls the transaction back, and every other update of it is run again
// on its own, so that it commits.
func TestGroupCommit(t *testing.T) { synctest.Test(t, testGroupCommit) }

func testGroupCommit(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "host.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bucket := []byte("test")
	put := func(tx *bolt.Tx, k string) error {
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		return b.Put([]byte(k), []byte{1})
	}
	has := func(k string) bool {
		var ok bool
		s.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucket)
			ok = b != nil && b.Get([]byte(k)) != nil
			return nil
		})
		return ok
	}
	// round holds a transaction open while the updates queue, then lets
	// them run; it returns each update's error and transaction IDs.
	round := func(fns ...func(*bolt.Tx) error) ([]error, [][]int) {
		started, release := make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			s.update(func(*bolt.Tx) error {
				close(started)
				<-release
				return nil
			})
		})
		<-started
		errs, txs := make([]error, len(fns)), make([][]int, len(fns))
		var mu sync.Mutex
		for i, fn := range fns {
			wg.Go(func() {
				errs[i] = s.update(func(tx *bolt.Tx) error {
					mu.Lock()
					txs[i] = append(txs[i], tx.ID())
					mu.Unlock()
					return fn(tx)
				})
			})
		}
		synctest.Wait() // every update is queued behind the held transaction
		if n := s.updates.Waiting(); n != len(fns) {
			t.Fatalf("%d updates queued, want %d", n, len(fns))
		}
		close(release)
		wg.Wait()
		return errs, txs
	}

	fns := []func(*bolt.Tx) error{}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		fns = append(fns, func(tx *bolt.Tx) error { return put(tx, k) })
	}
	errs, txs := round(fns...)
	for i := range fns {
		if errs[i] != nil || len(txs[i]) != 1 || txs[i][0] != txs[0][0] {
			t.Fatalf("update %d: %v in transactions %v; want all five in one (%v)", i, errs[i], txs[i], txs)
		}
	}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		if !has(k) {
			t.Fatalf("%s was not committed", k)
		}
	}

	boom := errors.New("boom")
	errs, txs = round(
		func(tx *bolt.Tx) error { return put(tx, "f") },
		func(*bolt.Tx) error { return adphost.ErrHeadMoved },
		func(tx *bolt.Tx) error { return put(tx, "g") },
	)
	if errs[0] != nil || !errors.Is(errs[1], adphost.ErrHeadMoved) || errs[2] != nil || txs[0][0] != txs[2][0] || len(txs[0]) != 1 {
		t.Fatalf("a refusal in the group: %v in %v", errs, txs)
	}
	errs, txs = round(
		func(tx *bolt.Tx) error { return put(tx, "h") },
		func(tx *bolt.Tx) error {
			if err := put(tx, "i"); err != nil {
				return err
			}
			return boom
		},
		func(tx *bolt.Tx) error { return put(tx, "j") },
	)
	if errs[0] != nil || !errors.Is(errs[1], boom) || errs[2] != nil {
		t.Fatalf("a failure in the group: %v", errs)
	}
	// The others committed each in a transaction of its own (a
	// rolled-back transaction's ID is used again; committed ones differ).
	if last := func(i int) int { return txs[i][len(txs[i])-1] }; last(0) == last(2) {
		t.Fatalf("after a failure the others run again, each alone: transactions %v", txs)
	}
	if !has("f") || !has("g") || !has("h") || !has("j") || has("i") {
		t.Fatal("the committed keys are not those of the updates that succeeded")
	}
}

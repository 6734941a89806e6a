package boltstore

import (
	"errors"

	bolt "go.etcd.io/bbolt"

	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/identity"
)

// Group commit. A bbolt commit costs two fdatasyncs and the writing of
// every page it dirtied, whatever it holds; the Store's updates (appends
// above all, from every room) share commits: the update that finds no
// commit under way leads one, with no hand-off to another goroutine;
// updates arriving meanwhile queue, and when the leader's commit is done
// the first of them leads everything queued, in one read-write
// transaction. Each update returns only once its transaction is durably
// committed, as with one transaction each.
//
// An update refused by its own checks (a moved head, a used nonce, a full
// quota) makes that refusal before it changes anything, so the others of
// its transaction go on; any other failure rolls the transaction back,
// and each of its updates is run again in a transaction of its own, so
// that one update's failure never becomes another's.

// maxGroup bounds the updates of one transaction.
const maxGroup = 256

// update is one update of a group commit.
type update struct {
	fn  func(*bolt.Tx) error
	err error
}

// update runs fn in a read-write transaction, shared with the updates
// queued meanwhile, and returns once that transaction is committed. fn
// must make every refusal of its own (see refusal) before its first
// change: the transaction goes on without it. fn may run twice (the
// second time alone), so it reads everything it needs from tx.
func (s *Store) update(fn func(*bolt.Tx) error) error {
	u := &update{fn: fn}
	s.updates.Do(u, func(_, _ *update, n int) bool { return n < maxGroup }, s.commit)
	return u.err
}

// commit runs the group's updates in one transaction, setting each one's
// error.
func (s *Store) commit(group []*update) {
	err := s.recent.write(s.db, func(tx *bolt.Tx) error {
		for _, g := range group {
			if g.err = g.fn(tx); g.err != nil && !refusal(g.err) {
				return g.err
			}
		}
		return nil
	})
	if err == nil {
		return
	}
	if len(group) == 1 {
		group[0].err = err
		return
	}
	for _, g := range group {
		g.err = s.recent.write(s.db, g.fn)
	}
}

// refusal reports whether err is an update's refusal of its own, made
// before it changed anything: a moved head, a duplicate envelope, a used
// nonce or quota (an identity error).
func refusal(err error) bool {
	var e *identity.Error
	return errors.Is(err, adphost.ErrHeadMoved) || errors.Is(err, adphost.ErrDuplicateEvent) || errors.As(err, &e)
}

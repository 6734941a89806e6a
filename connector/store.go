package connector

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// stateStore is the engine's durable state: buckets of JSON values under
// string keys. Update runs fn in one atomic transaction (all of its puts
// and deletes land, or none do), durable when it returns; UpdateDeferred
// is Update whose flush to the disk may come later (a power loss can lose
// the last deferred transactions, whole; a killed process loses none);
// View sees a consistent snapshot.
type stateStore interface {
	Update(fn func(stateTx) error) error
	UpdateDeferred(fn func(stateTx) error) error
	View(fn func(stateTx) error) error
	Close() error
}

// stateTx is one transaction of a stateStore. Values are JSON; Get decodes strictly
// (stored bytes are read back like untrusted input).
type stateTx interface {
	// Get decodes the value at (bucket, key) into v; false when absent.
	Get(bucket, key string, v any) (bool, error)
	// Has reports whether (bucket, key) holds a value, without reading it.
	Has(bucket, key string) bool
	// Put stores v as JSON at (bucket, key).
	Put(bucket, key string, v any) error
	// Delete removes (bucket, key); absent keys are not an error.
	Delete(bucket, key string) error
	// Scan calls fn for every key with the prefix, in key order, with the
	// raw JSON value, which fn may keep; fn returning errStop ends the
	// scan early.
	Scan(bucket, prefix string, fn func(key string, raw []byte) error) error
	// ScanFrom is Scan starting at the first key >= from.
	ScanFrom(bucket, prefix, from string, fn func(key string, raw []byte) error) error
}

var errStop = errors.New("stop")

// CheckPermissions refuses a path whose mode has any of the forbidden
// permission bits (for example 0o022: writable by group or others) with
// ErrInsecurePermissions. The engine checks its state directory (0o022)
// and key files (0o022; 0o077 for an unencrypted development key); the
// connector binary checks its config, which holds the host allowlist
// (0o022). On Windows, where modes do not describe access, it checks
// nothing.
func CheckPermissions(path string, forbidden fs.FileMode) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if m := fi.Mode().Perm(); m&forbidden != 0 {
		return fmt.Errorf("%w: %s has mode %v; chmod go-rwx it", ErrInsecurePermissions, path, m)
	}
	return nil
}

// openStateStore opens (creating) Dir/state.db behind its state log
// (wal.go). A second process on the same directory fails after
// lockTimeout with ErrLocked.
func openStateStore(dir string, lockTimeout time.Duration) (stateStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// Another user who can write the directory could replace state.db
	// (the verified snapshots, the stored nonce).
	if err := CheckPermissions(dir, 0o022); err != nil {
		return nil, err
	}
	if lockTimeout <= 0 {
		lockTimeout = time.Second
	}
	path := filepath.Join(dir, "state.db")
	// The free list is not written with every commit but rebuilt by
	// scanning the file when it is opened: one page fewer to write and
	// flush per commit, at no cost to durability (a commit is its data
	// pages and its meta page, flushed in that order, either way).
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s (lock not acquired within %v)", ErrLocked, path, lockTimeout)
		}
		return nil, err
	}
	s, err := openWAL(dir, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

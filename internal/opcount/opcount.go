// Package opcount counts the costly operations whose number per request
// tests assert: Ed25519 signature verifications (identity), record-hash
// computations (adp), envelopes read by the general token-by-token parse
// (envelope) and the connector's store commits and state-log writes
// flushed to the disk. Counting is off unless a test turns it on with
// Start; off, a counted operation costs one atomic load.
package opcount

import "sync/atomic"

var (
	on           atomic.Bool
	verifies     atomic.Int64
	recordHashes atomic.Int64
	syncs        atomic.Int64
	generalParse atomic.Int64
	logFlushes   atomic.Int64
)

// Counts are the operations counted since Start.
type Counts struct {
	// Verifies is the number of Ed25519 signature verifications.
	Verifies int64
	// RecordHashes is the number of record-hash computations.
	RecordHashes int64
	// SyncedCommits is the number of store transactions committed with
	// an fsync.
	SyncedCommits int64
	// GeneralParses is the number of envelopes read by the general
	// (token-by-token) parse rather than by the path for AppendJSON's
	// own text.
	GeneralParses int64
	// LogFlushes is the number of state-log writes flushed to the disk
	// before the update returned.
	LogFlushes int64
}

// Start zeroes the counters and turns counting on, for the whole process:
// a test that counts must not run in parallel with other work in its
// process.
func Start() {
	verifies.Store(0)
	recordHashes.Store(0)
	syncs.Store(0)
	generalParse.Store(0)
	logFlushes.Store(0)
	on.Store(true)
}

// Stop turns counting off and returns what was counted since Start.
func Stop() Counts {
	on.Store(false)
	return Read()
}

// Read returns what was counted since Start so far.
func Read() Counts {
	return Counts{Verifies: verifies.Load(), RecordHashes: recordHashes.Load(), SyncedCommits: syncs.Load(), GeneralParses: generalParse.Load(),
		LogFlushes: logFlushes.Load()}
}

// Verify counts one Ed25519 signature verification.
func Verify() { count(&verifies) }

// RecordHash counts one record-hash computation.
func RecordHash() { count(&recordHashes) }

// SyncedCommit counts one store transaction committed with an fsync.
func SyncedCommit() { count(&syncs) }

// GeneralParse counts one envelope read by the general parse.
func GeneralParse() { count(&generalParse) }

// LogFlush counts one state-log write flushed to the disk.
func LogFlush() { count(&logFlushes) }

// count adds one to c while counting is on.
func count(c *atomic.Int64) {
	if on.Load() {
		c.Add(1)
	}
}

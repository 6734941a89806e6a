package adp

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// VerifySignatures checks the envelope signatures of recs ahead of an
// ordered check, on up to GOMAXPROCS goroutines with at least minPerWorker
// records each (serially when there are too few for two). Signature checks
// dominate the cost of verifying records, and an envelope remembers a
// successful check, so the ordered check that follows (Room.Apply,
// Record.CheckHash, a chain link) does not repeat it. Failures are not
// reported here: the ordered check repeats them and reports them in seq
// order. It returns when every check has finished.
func VerifySignatures(recs []*Record, minPerWorker int) {
	workers := min(runtime.GOMAXPROCS(0), len(recs)/max(minPerWorker, 1))
	if workers <= 1 {
		for _, rec := range recs {
			_ = rec.Envelope.Verify()
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(recs)); i = next.Add(1) - 1 {
				_ = recs[i].Envelope.Verify()
			}
		})
	}
	wg.Wait()
}

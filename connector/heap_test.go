package connector

import (
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestOpenHeap measures room_open's heap on rooms of 201 and 801
// records of 60 KiB (history is stored page by page, never held whole): the peak above the baseline (host included),
// what stays after a GC, and the bytes allocated. A measurement, not a
// check: it runs only with CONNECTOR_HEAP=1 (see BENCHMARKS.md).
func TestOpenHeap(t *testing.T) {
	if os.Getenv("CONNECTOR_HEAP") == "" {
		t.Skip("set CONNECTOR_HEAP=1 to measure")
	}
	_, srv := testHost(t)
	ctx := ctxT(t)
	alice := openTest(t, t.TempDir(), testKey(t, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(t, alice, srv.URL)
	big := strings.Repeat("y", 60<<10)
	for _, n := range []int{200, 600} {
		for i := 0; i < n; i++ {
			say(t, alice, room, big)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		var peak atomic.Uint64
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > peak.Load() {
					peak.Store(m.HeapAlloc)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		bob := openTest(t, t.TempDir(), testKey(t, "bob"), srv.URL, func(o *Options) { o.NoSubscribe = true })
		start := time.Now()
		r := must[*RoomOpenResult](t)(bob.RoomOpen(ctx, "b", RoomOpenInput{Host: srv.URL, RoomID: room}))
		d := time.Since(start)
		close(stop)
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		t.Logf("records %d: open %v, peak heap above baseline %d MiB, retained %d MiB, total alloc %d MiB", r.Sync.SyncedSeq, d, (int64(peak.Load())-int64(base))>>20, (int64(after.HeapAlloc)-int64(base))>>20, (after.TotalAlloc-ms.TotalAlloc)>>20)
		bob.Close()
	}
}

package connector

import (
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkRoomOpenHeap measures room_open's memory on rooms of 201 and
// 801 records of 60 KiB messages (history is stored page by page as it is
// verified, never held whole): each iteration is a fresh engine opening
// the room. Beside B/op it reports the peak heap above the baseline
// (host included, sampled every 5 ms: peak-MiB) and what stays after a GC
// with the engine still open (retained-MiB). Run:
//
//	go test ./connector -run '^$' -bench RoomOpenHeap -benchtime 3x
//
// and again with GOGC=10 for the live part of the peak.
func BenchmarkRoomOpenHeap(b *testing.B) {
	_, srv := testHost(b)
	alice := openTest(b, b.TempDir(), testKey(b, "alice"), srv.URL)
	defer alice.Close()
	room := createRoom(b, alice, srv.URL)
	big := strings.Repeat("y", 60<<10)
	have := 1
	for _, n := range []int{201, 801} {
		for ; have < n; have++ {
			say(b, alice, room, big)
		}
		b.Run("records="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			var peakSum, retainedSum float64
			for b.Loop() {
				b.StopTimer()
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				peak, stop := sampleHeapPeak(5 * time.Millisecond)
				bob := openTest(b, b.TempDir(), testKey(b, "bob"), srv.URL, func(o *Options) { o.NoSubscribe = true })
				b.StartTimer()
				r := must[*RoomOpenResult](b)(bob.RoomOpen(ctxT(b), "b", RoomOpenInput{Host: srv.URL, RoomID: room}))
				b.StopTimer()
				stop()
				if r.Sync.SyncedSeq != int64(n) {
					b.Fatalf("synced %d of %d records", r.Sync.SyncedSeq, n)
				}
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				peakSum += float64(int64(peak.Load())-int64(before.HeapAlloc)) / (1 << 20)
				retainedSum += float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
				bob.Close()
				b.StartTimer()
			}
			b.ReportMetric(peakSum/float64(b.N), "peak-MiB")
			b.ReportMetric(retainedSum/float64(b.N), "retained-MiB")
		})
	}
}

// sampleHeapPeak samples HeapAlloc every interval until stop is called
// and keeps the highest value seen.
func sampleHeapPeak(interval time.Duration) (peak *atomic.Uint64, stop func()) {
	peak = new(atomic.Uint64)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return peak, func() { close(done); <-exited }
}

package adphosttest

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/adphost"
	"github.com/agentprotocols/go-sdk/identity"
	"github.com/agentprotocols/go-sdk/internal/raceflag"
	"github.com/agentprotocols/go-sdk/packs"
)

// BlobType is a message type whose payload hint is the host's default
// hinted ceiling, 256 KiB (§21): a room that declares it takes records
// four times the size of the largest unhinted ones.
const BlobType = `{"type":"blob.put","kind":"message","title":"Blob","max_payload_hint":262144,"rate_hint":600,` +
	`"schema":{"type":"object","required":["b"],"properties":{"b":{"type":"string"}}}}`

// BlobSize is the length of the string each FillBlobRoom record carries:
// its payload is just within BlobType's hint.
const BlobSize = 262144 - 64

// FillBlobRoom creates a public room declaring BlobType, as c, and posts
// n blob.put records of BlobSize bytes into it: what one agent can do in
// about two minutes under the default quotas. The host must not
// rate-limit c. It returns the room's ID.
func FillBlobRoom(ctx context.Context, c *adp.Client, n int) (string, error) {
	d, err := packs.ParseDeclaration([]byte(BlobType))
	if err != nil {
		return "", err
	}
	now := c.Clock()()
	cr, err := c.CreateRoom(ctx, adp.RoomCreate{Topic: "blobs", Visibility: adp.VisibilityPublic,
		StartTime: now.Add(-time.Minute).UnixMilli(), EndTime: now.Add(time.Hour).UnixMilli(), Types: []packs.Declaration{d}})
	if err != nil {
		return "", err
	}
	room := cr.RoomID
	if _, err := c.Sync(ctx, room); err != nil {
		return "", err
	}
	base, err := c.Verified(room).BaseFor("blob.put")
	if err != nil {
		return "", err
	}
	reg := c.Verified(room).Registry()
	pad := strings.Repeat("b", BlobSize-4)
	for i := range n {
		// Each record is based on the previous one: no sync between
		// writes.
		env, err := adp.NewCustom(ctx, c.Author(), base, reg, "blob.put", map[string]string{"b": fmt.Sprintf("%04d", i%10000) + pad})
		if err != nil {
			return "", err
		}
		rec, err := c.Submit(ctx, room, env)
		if err != nil {
			return "", fmt.Errorf("adphosttest: blob %d: %w", i, err)
		}
		base.Seq, base.Hash = rec.Seq, rec.Hash
	}
	return room, nil
}

// Cost is what GETs cost the process that made and served them.
type Cost struct {
	// Allocated is what the process allocated meanwhile.
	Allocated uint64
	// Peak is the greatest growth of the heap's live objects over their
	// size before, sampled every millisecond.
	Peak uint64
	// Retained is the growth of the live heap once the answers were read
	// and garbage collected: what the host keeps.
	Retained uint64
}

// ReadCost GETs url conc times at once, without a request JWT, reading
// every answer to its end, and returns what that cost this process. An
// in-process host's cost of a request is within it (it includes the
// client's, which reads each body once, into a fixed buffer).
func ReadCost(url string, hc *http.Client, conc int) (Cost, error) {
	samples := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	runtime.GC()
	metrics.Read(samples)
	allocs0, live0 := samples[0].Value.Uint64(), samples[1].Value.Uint64()
	var top atomic.Uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > top.Load() {
				top.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	errs := make(chan error, conc)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			resp, err := hc.Get(url)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("adphosttest: GET %s: %s", url, resp.Status)
				return
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	close(errs)
	var c Cost
	metrics.Read(samples)
	c.Allocated = samples[0].Value.Uint64() - allocs0
	c.Peak = max(top.Load(), live0) - live0
	runtime.GC()
	metrics.Read(samples)
	c.Retained = max(samples[1].Value.Uint64(), live0) - live0
	return c, <-errs
}

// CheckReadCost is the memory test of a Store's reads of room logs: it
// fills a room of a host on store with n records of about 256 KiB
// (FillBlobRoom) and GETs /events?limit=1000 of it anonymously, once and
// then eight times at once; then, the room ended, its archive's manifest,
// records and transcript. One page must allocate at most 8 times the page
// budget (Options.MaxPageBytes, 8 MiB) plus 64 MiB, eight at once at most
// eight times the page budget each plus 64 MiB in all; an archive, which
// reads the whole room, must not grow the live heap by more than one page
// may allocate; and the host must keep no more than the page budget after
// any of them. What a read costs is bounded by the budget, not by the
// limit times the records' size, nor by the room. n of 300 or more fails a
// host that reads the whole limit before cutting a page, or that builds an
// archive in memory. It skips with -short and under the race detector (it
// writes n/4 MiB of records and has no concurrency to check).
func CheckReadCost(t *testing.T, store adphost.Store, n int) {
	t.Helper()
	if testing.Short() || raceflag.Enabled {
		t.Skip("writes 256 KiB records; no concurrency to check")
	}
	var later atomic.Int64 // the host's clock runs ahead by this much
	now := func() time.Time { return time.Now().Add(time.Duration(later.Load())) }
	h, srv := NewServer(t, &adphost.Options{Store: store, RateLimits: adphost.Unlimited(), SnapshotEvery: -1, Heartbeat: -1, Now: now})
	key, err := identity.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c, err := adp.NewClient(srv.URL, &adp.ClientOptions{Signer: key, HTTPClient: srv.Client(), AllowLoopbackHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	room, err := FillBlobRoom(t.Context(), c, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records of %d KiB in %v", n, BlobSize>>10, time.Since(start).Round(time.Millisecond))
	budget := uint64(h.Quotas().MaxPageBytes)
	check := func(path string, conc int, whole bool) {
		t.Helper()
		cost, err := ReadCost(srv.URL+"/v1/rooms/"+room+path, srv.Client(), conc)
		if err != nil {
			t.Fatal(err)
		}
		bound, what, got := uint64(conc)*8*budget+64<<20, "allocated", cost.Allocated
		if whole {
			what, got = "live heap growth", cost.Peak
		}
		t.Logf("GET …%s × %d at once: %d MiB allocated, live heap peak +%d MiB, +%d MiB kept (bounds: %s %d MiB, kept %d MiB)",
			path, conc, cost.Allocated>>20, cost.Peak>>20, cost.Retained>>20, what, bound>>20, budget>>20)
		if got > bound || cost.Retained > budget {
			t.Errorf("GET …%s × %d at once: %s %d MiB (bound %d MiB), kept %d MiB (bound %d MiB)",
				path, conc, what, got>>20, bound>>20, cost.Retained>>20, budget>>20)
		}
	}
	// The first read loads the room; the cache keeps it.
	if _, err := ReadCost(srv.URL+"/v1/rooms/"+room+"/events?limit=1", srv.Client(), 1); err != nil {
		t.Fatal(err)
	}
	check("/events?limit=1000", 1, false)
	check("/events?limit=1000", 8, false)
	later.Store(int64(2 * time.Hour)) // FillBlobRoom's room ends in an hour
	check("/archive", 1, true)        // makes the manifest
	check("/archive.jsonl", 1, true)
	check("/archive.md", 1, true)
}

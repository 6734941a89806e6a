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

// PageCost GETs url conc times at once, without a request JWT, reading
// every answer to its end, and returns what this process allocated
// meanwhile and the greatest growth of its heap's live objects over their
// size before, sampled every millisecond. An in-process host's cost of a
// request is within both (they include the client's, which reads each
// body once).
func PageCost(url string, hc *http.Client, conc int) (allocated, peak uint64, err error) {
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
	metrics.Read(samples)
	allocated = samples[0].Value.Uint64() - allocs0
	if top.Load() > live0 {
		peak = top.Load() - live0
	}
	return allocated, peak, <-errs
}

// CheckPageCost is the memory test of a Store's history reads: it fills a
// room of a host on store with n records of about 256 KiB (FillBlobRoom)
// and GETs /events?limit=1000 of it anonymously, once and then eight
// times at once. Whatever n, one request must allocate at most 8 times
// the page budget (Options.MaxPageBytes, 8 MiB) plus 64 MiB, and eight at
// once at most eight times the page budget each plus 64 MiB in all: what
// it costs is bounded by the budget, not by the limit times the records'
// size. n of 300 or more fails a host that reads the whole limit before
// cutting the page. It skips with -short and under the race detector
// (it writes n/4 MiB of records and has no concurrency to check).
func CheckPageCost(t *testing.T, store adphost.Store, n int) {
	t.Helper()
	if testing.Short() || raceflag.Enabled {
		t.Skip("writes 256 KiB records; no concurrency to check")
	}
	h, srv := NewServer(t, &adphost.Options{Store: store, RateLimits: adphost.Unlimited(), SnapshotEvery: -1, Heartbeat: -1})
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
	url := srv.URL + "/v1/rooms/" + room + "/events?limit=1000"
	// The first read loads the room; the cache keeps it.
	if _, _, err := PageCost(url, srv.Client(), 1); err != nil {
		t.Fatal(err)
	}
	for _, conc := range []int{1, 8} {
		allocated, peak, err := PageCost(url, srv.Client(), conc)
		if err != nil {
			t.Fatal(err)
		}
		bound := uint64(conc)*8*budget + 64<<20
		t.Logf("GET …/events?limit=1000 × %d at once: %d MiB allocated, live heap peak +%d MiB (bound %d MiB)", conc, allocated>>20, peak>>20, bound>>20)
		if allocated > bound {
			t.Errorf("%d requests at once allocated %d MiB, more than %d MiB", conc, allocated>>20, bound>>20)
		}
	}
}

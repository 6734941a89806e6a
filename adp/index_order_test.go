package adp

import (
	"bytes"
	"crypto/rand"
	"slices"
	"testing"

	"github.com/agentprotocols/go-sdk/envelope"
)

// TestSnapshotItemOrder pins what the snapshot's kept event list relies
// on: base64url items compared digit by digit order as their hashes'
// bytes do, including hashes that differ only in the last byte (whose low
// bits share the final character with padding) and in one bit anywhere.
func TestSnapshotItemOrder(t *testing.T) {
	var hs []envelope.Hash
	for range 300 {
		var h envelope.Hash
		rand.Read(h[:])
		hs = append(hs, h)
		for _, bit := range []int{0, 1, 7, 8, 100, 255} {
			g := h
			g[bit/8] ^= 1 << (bit % 8)
			hs = append(hs, g)
		}
	}
	hs = append(hs, envelope.Hash{}, envelope.Hash{31: 1}, envelope.Hash{31: 0xff})
	for i := range hs {
		a := appendItems(nil, hs[i:i+1])
		for j := range hs {
			b := appendItems(nil, hs[j:j+1])
			if got, want := signum(compareItems(a, b)), signum(bytes.Compare(hs[i][:], hs[j][:])); got != want {
				t.Fatalf("compareItems(%s, %s) = %d, bytes say %d", a, b, got, want)
			}
		}
	}
	// Merging in batches gives the list sorted afresh.
	var items, scratch []byte
	for k := 0; k < len(hs); k += 97 {
		items = mergeItems(items, slices.Clone(hs[k:min(k+97, len(hs))]), &scratch)
	}
	sorted := slices.Clone(hs)
	slices.SortFunc(sorted, compareHashes)
	if want := appendItems(nil, sorted); !bytes.Equal(items, want) {
		t.Fatal("merged items differ from the sorted list")
	}
}

func signum(n int) int { return min(max(n, -1), 1) }

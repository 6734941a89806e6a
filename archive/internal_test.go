package archive

import (
	"crypto/sha3"
	"testing"

	"github.com/agentprotocols/go-sdk/envelope"
)

// mth is RFC 6962's recursive definition, with SHA3-256.
func mth(d []envelope.Hash) envelope.Hash {
	switch len(d) {
	case 0:
		return sha3.Sum256(nil)
	case 1:
		return sha3.Sum256(append([]byte{0}, d[0][:]...))
	}
	k := 1
	for k*2 < len(d) {
		k *= 2
	}
	l, r := mth(d[:k]), mth(d[k:])
	return sha3.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
}

func TestMerkleRootMatchesRFC6962(t *testing.T) {
	var leaves []envelope.Hash
	for n := 0; n <= 70; n++ {
		if got, want := MerkleRoot(leaves), mth(leaves); got != want {
			t.Fatalf("n=%d: %s, want %s", n, got, want)
		}
		leaves = append(leaves, sha3.Sum256([]byte{byte(n), byte(n >> 8)}))
	}
	// A leaf is never confused with an interior node.
	two := leaves[:2]
	if MerkleRoot([]envelope.Hash{mth(two)}) == MerkleRoot(two) {
		t.Fatal("second preimage: interior node accepted as a leaf")
	}
}

func TestFingerprintIndex(t *testing.T) {
	x := newFPIndex(4) // grows past its preallocation
	var recs, evs []envelope.Hash
	for i := range 1000 {
		r, e := sha3.Sum256([]byte{'r', byte(i), byte(i >> 8)}), sha3.Sum256([]byte{'e', byte(i), byte(i >> 8)})
		recs, evs = append(recs, r), append(evs, e)
		x.Add(int64(i+1), r, e)
	}
	for i := range 1000 {
		if !x.HasEvent(evs[i]) || x.HasEvent(recs[i]) {
			t.Fatalf("HasEvent wrong at %d", i)
		}
	}
	if x.events.n != 1000 || x.events.n*10 > len(x.events.slots)*7 {
		t.Fatalf("set holds %d in %d slots", x.events.n, len(x.events.slots))
	}
	for i := range 1000 {
		if !x.HasRecord(int64(i+1), recs[i]) || x.HasRecord(int64(i+1), evs[i]) || x.HasRecord(int64(i+2), recs[i]) {
			t.Fatalf("HasRecord wrong at %d", i)
		}
	}
	if x.HasRecord(0, recs[0]) || x.HasRecord(1001, recs[0]) {
		t.Fatal("HasRecord out of range")
	}
}

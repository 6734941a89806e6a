package archive

import (
	"crypto/sha3"

	"github.com/agentprotocols/go-sdk/envelope"
)

// MerkleRoot returns the Merkle root of the record hashes, in seq order,
// that an archive_root may carry instead of events_sha3_256 (§19: the
// leaves are the raw SHA3-256 bytes of each record hash, in seq order).
//
// The tree is RFC 6962's (Certificate Transparency) with SHA3-256 and
// domain separation between leaves and interior nodes:
//
//	leaf(h)     = SHA3-256(0x00 || h)            h: the 32 raw record-hash bytes
//	node(l, r)  = SHA3-256(0x01 || l || r)
//	MTH([h])    = leaf(h)
//	MTH(D[0:n]) = node(MTH(D[0:k]), MTH(D[k:n]))  k: largest power of two < n
//	MTH([])     = SHA3-256("")
//
// so an interior node can never be presented as a leaf, and inclusion and
// consistency proofs work as in RFC 6962.
func MerkleRoot(leaves []envelope.Hash) envelope.Hash {
	var t merkle
	for _, h := range leaves {
		t.add(h)
	}
	return t.root()
}

// merkle computes MTH incrementally in O(log n) memory: a stack of the
// roots of perfect subtrees of strictly decreasing size, like the carries
// of a binary counter.
type merkle struct {
	stack  []envelope.Hash
	height []uint8
	buf    [65]byte
}

func (t *merkle) add(h envelope.Hash) {
	t.buf[0] = 0
	copy(t.buf[1:], h[:])
	leaf := envelope.Hash(sha3.Sum256(t.buf[:33]))
	var ht uint8
	for n := len(t.stack); n > 0 && t.height[n-1] == ht; n-- {
		leaf = t.node(&t.stack[n-1], &leaf)
		t.stack, t.height = t.stack[:n-1], t.height[:n-1]
		ht++
	}
	t.stack, t.height = append(t.stack, leaf), append(t.height, ht)
}

func (t *merkle) node(l, r *envelope.Hash) envelope.Hash {
	t.buf[0] = 1
	copy(t.buf[1:33], l[:])
	copy(t.buf[33:], r[:])
	return sha3.Sum256(t.buf[:])
}

// root folds the stack from the right: with k the largest power of two
// below n, the leftmost perfect subtree is exactly D[0:k], and the rest
// recursively.
func (t *merkle) root() envelope.Hash {
	if len(t.stack) == 0 {
		return sha3.Sum256(nil)
	}
	acc := t.stack[len(t.stack)-1]
	for i := len(t.stack) - 2; i >= 0; i-- {
		acc = t.node(&t.stack[i], &acc)
	}
	return acc
}

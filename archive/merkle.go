package archive

import (
	"crypto/sha3"

	"github.com/agentprotocols/go-sdk/envelope"
)

// MerkleRoot returns the Merkle root of the record hashes, in seq order,
// that an archive_root may carry instead of events_sha3_256. §19: "the
// leaves SHOULD be the raw SHA3-256 bytes each record hash represents, in
// seq order", so a leaf is the 32-byte record hash itself, not a hash of
// it. Interior nodes and the tree shape follow RFC 6962 (Certificate
// Transparency), with SHA3-256:
//
//	MTH([h])    = h                                  h: the 32 raw record-hash bytes
//	MTH(D[0:n]) = SHA3-256(0x01 || MTH(D[0:k]) || MTH(D[k:n]))
//	              k: the largest power of two < n
//	MTH([])     = SHA3-256("")                       (never used: an archive has a record)
//
// Leaves are not prefixed (the text names the raw bytes), so an interior
// node is told from a leaf by the tree shape alone; the shape is fixed by
// the manifest's event_count, which Verify checks, and a leaf is a record
// hash that the verifier recomputes from the record, so neither can stand
// in for the other. The 0x01 prefix keeps interior nodes apart from any
// other SHA3-256 input the protocol hashes.
//
// Verify also accepts archive_root equal to events_sha3_256, the digest
// form the text recommends when no Merkle tree is used.
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
	leaf := h
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

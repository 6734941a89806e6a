package archive

import (
	"crypto/sha3"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentprotocols/go-sdk/envelope"
)

// mth is the recursive definition of MerkleRoot's tree: raw record
// hashes as leaves, RFC 6962's split and 0x01-prefixed interior nodes.
func mth(d []envelope.Hash) envelope.Hash {
	switch len(d) {
	case 0:
		return sha3.Sum256(nil)
	case 1:
		return d[0]
	}
	k := 1
	for k*2 < len(d) {
		k *= 2
	}
	l, r := mth(d[:k]), mth(d[k:])
	return node(l, r)
}

func node(l, r envelope.Hash) envelope.Hash {
	return sha3.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
}

func TestMerkleRootMatchesDefinition(t *testing.T) {
	var leaves []envelope.Hash
	for n := 0; n <= 70; n++ {
		if got, want := MerkleRoot(leaves), mth(leaves); got != want {
			t.Fatalf("n=%d: %s, want %s", n, got, want)
		}
		leaves = append(leaves, sha3.Sum256([]byte{byte(n), byte(n >> 8)}))
	}
}

// TestMerkleRootSmallTrees spells the trees out by hand: §19's leaves are
// the raw record-hash bytes (no leaf hashing), interior nodes are
// SHA3-256(0x01 || left || right), and an unbalanced tree splits at the
// largest power of two below n.
func TestMerkleRootSmallTrees(t *testing.T) {
	var h [5]envelope.Hash
	for i := range h {
		h[i] = sha3.Sum256([]byte{'r', byte('0' + i)})
	}
	n01, n23 := node(h[0], h[1]), node(h[2], h[3])
	for _, c := range []struct {
		leaves []envelope.Hash
		want   envelope.Hash
	}{
		{h[:1], h[0]}, // one record: the root is its hash
		{h[:2], n01},
		{h[:3], node(n01, h[2])},
		{h[:4], node(n01, n23)},
		{h[:5], node(node(n01, n23), h[4])},
	} {
		if got := MerkleRoot(c.leaves); got != c.want {
			t.Errorf("%d leaves: %s, want %s", len(c.leaves), got, c.want)
		}
	}
	// A fixed value, so that another implementation can check itself:
	// leaves SHA3-256("r0"), SHA3-256("r1"), SHA3-256("r2").
	if got := MerkleRoot(h[:3]).String(); got != merkle3 {
		t.Errorf("3-leaf root %s, want %s", got, merkle3)
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

// merkle3 is MerkleRoot of the three leaves of TestMerkleRootSmallTrees,
// computed independently with Python's hashlib.sha3_256.
const merkle3 = "dw39DVj1qIq0Q6DMSrjNDWqVFJzB5Q3qt4QVzd6FfcY"

// The Markdown escapers are the transcript's own business, not API.
func TestMarkdownHelpersUnexported(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				switch fd.Name.Name {
				case "EscapeText", "CodeSpan", "FencedBlock":
					t.Errorf("%s is exported", fd.Name.Name)
				}
			}
		}
	}
}

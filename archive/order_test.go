package archive_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/agentprotocols/go-sdk/adp"
	"github.com/agentprotocols/go-sdk/archive"
)

// orderArchive is a 5,000-record archive: more than the 4,096 records a
// line could once be displaced by.
func orderArchive(t *testing.T) (*archive.Manifest, [][]byte) {
	t.Helper()
	var log bytes.Buffer
	m := generate(5000, 2, func(l []byte) { log.Write(l); log.WriteByte('\n') })
	return m, lines(log.Bytes())
}

// §19 step 1 sorts by seq: any line order is a legal archive. Each order
// is verified from an io.ReaderAt (lines are re-read at their offset) and
// from a plain stream (lines are spilled to a temporary file), with the
// in-memory part of the store small enough that sorted runs go to disk
// and large enough that they do not.
func TestVerifyAnyLineOrder(t *testing.T) {
	m, ls := orderArchive(t)
	n := len(ls)
	moved := append(append([][]byte{ls[0]}, ls[2:]...), ls[1]) // seq 2 last: displaced by 4,998
	rev := make([][]byte, n)
	for i, l := range ls {
		rev[n-1-i] = l
	}
	// Lines read while seq 1 was still missing look far ahead to the
	// workers; after the first 3,000 they are due at once.
	head := append(append([][]byte(nil), rev[n-3000:]...), ls[3000:]...)
	shuffled := append([][]byte(nil), ls...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, order := range []struct {
		name string
		log  []byte
	}{
		{"seq 2 last", join(moved)},
		{"reversed", join(rev)},
		{"shuffled", join(shuffled)},
		{"first 3,000 reversed", join(head)},
	} {
		for _, c := range []struct {
			mem    int
			stream bool
		}{{1 << 15, false}, {97, true}, {97, false}} {
			if order.name != "reversed" && c.mem != 1<<15 {
				continue // the store's modes do not depend on the order
			}
			restore := archive.SetMemEntries(c.mem)
			dir := t.TempDir()
			var r io.Reader = bytes.NewReader(order.log)
			if c.stream {
				r = struct{ io.Reader }{r}
			}
			rep, err := archive.Verify(context.Background(), m, r, &archive.VerifyOptions{TempDir: dir})
			restore()
			if err != nil || !rep.Valid || rep.Records != int64(n) || rep.EventsSHA3256 != m.EventsSHA3256 {
				t.Fatalf("%s (mem %d, stream %v): %v", order.name, c.mem, c.stream, err)
			}
			// The temporary file is gone.
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("%s: left %v in the temporary directory", order.name, left)
			}
		}
	}

	// The checks still hold with the runs on disk: a seq that repeats far
	// apart, and a missing one.
	defer archive.SetMemEntries(97)()
	dup := append(append([][]byte(nil), rev...), rev[n-10]) // seq 10 twice
	if _, err := archive.Verify(context.Background(), m, bytes.NewReader(join(dup)), nil); !errors.Is(err, adp.ErrInvalidRecord) {
		t.Fatalf("duplicate: %v", err)
	}
	rep, err := archive.Verify(context.Background(), m, bytes.NewReader(join(rev[:n-1])), nil) // no seq 1
	wantFailure(t, rep, err, adp.CodeInvalidRecord, 1)
	dup = append(append([][]byte(nil), rev[:n-3]...), rev[5], rev[n-2], rev[n-1]) // seq 4995 twice, seq 3 missing
	rep, err = archive.Verify(context.Background(), m, struct{ io.Reader }{bytes.NewReader(join(dup))}, nil)
	wantFailure(t, rep, err, adp.CodeInvalidRecord, 4995)
}

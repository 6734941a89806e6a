package archive_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/agentprotocols/go-sdk/archive"
)

// withBlanks puts n blank lines ("\r\n") before the log and a few more,
// of every kind of white space, between its lines.
func withBlanks(log []byte, n int) []byte {
	out := bytes.Repeat([]byte("\r\n"), n)
	return append(out, bytes.ReplaceAll(log, []byte("\n"), []byte("\n\n \t\r\n\r\n"))...)
}

// Blank lines are tolerated (see the package documentation) and cost only
// the reading of their bytes: no allocation per blank line. On the old
// reader each batch of 64 blank lines allocated a 132 KiB buffer.
func TestBlankLinesCostNoAllocations(t *testing.T) {
	recs := vectorRecords(t, "main")
	m, log, _ := build(t, recs, nil)
	const blanks = 200_000
	measure := func(in []byte) (allocs float64, bytes uint64) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		allocs = testing.AllocsPerRun(2, func() {
			rep, err := archive.Verify(context.Background(), m, bytesReader(in), &archive.VerifyOptions{Workers: 1})
			if err != nil || rep.Records != 26 {
				t.Fatal(err)
			}
		})
		runtime.ReadMemStats(&after)
		return allocs, (after.TotalAlloc - before.TotalAlloc) / 3
	}
	measure(log) // warm the caches the first verification fills
	plainAllocs, plainBytes := measure(log)
	blankAllocs, blankBytes := measure(withBlanks(log, blanks))
	t.Logf("plain: %.0f allocs %d B; with %d blank lines: %.0f allocs %d B", plainAllocs, plainBytes, blanks, blankAllocs, blankBytes)
	// Blank lines may move batch boundaries (a few allocations each), but
	// cost nothing per line: at most one allocation per 1,000 of them.
	if extra := blankAllocs - plainAllocs; extra > blanks/1000 {
		t.Errorf("%d blank lines cost %.0f allocations", blanks, extra)
	}
	if extra := int64(blankBytes) - int64(plainBytes); extra > 1<<20 {
		t.Errorf("%d blank lines cost %d bytes of allocation", blanks, extra)
	}
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// BenchmarkBlankLines verifies a small archive behind 10 MB of blank
// lines ("\r\n"), against reading the same bytes through a bufio.Reader
// and discarding them: blank lines should cost about what their bytes
// do. MB/s is over the whole input.
func BenchmarkBlankLines(b *testing.B) {
	recs := vectorRecords(b, "main")
	m, log, _ := build(b, recs, nil)
	in := withBlanks(log, 5_000_000)
	b.Run("read", func(b *testing.B) {
		// Copy the bytes through a 64 KiB buffer, as any reader must.
		b.SetBytes(int64(len(in)))
		buf := make([]byte, 64<<10)
		for b.Loop() {
			if _, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{bytes.NewReader(in)}, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read-lines", func(b *testing.B) {
		// Cut the bytes into lines with bufio.Reader.ReadSlice.
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			br := bufio.NewReaderSize(bytes.NewReader(in), 64<<10)
			for {
				if _, err := br.ReadSlice('\n'); err == io.EOF {
					break
				}
			}
		}
	})
	b.Run("verify", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			if _, err := archive.Verify(context.Background(), m, bytes.NewReader(in), &archive.VerifyOptions{Workers: 1}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify-without-blanks", func(b *testing.B) {
		for b.Loop() {
			if _, err := archive.Verify(context.Background(), m, bytes.NewReader(log), &archive.VerifyOptions{Workers: 1}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package archive

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
)

// pendEntry locates a record that arrived before an earlier seq: where its
// line is, in the log itself (when Verify can read the log at an offset)
// or in the spill file.
type pendEntry struct {
	seq, line int64
	off       int64
	n         int32 // bytes in the line
}

func (a *pendEntry) less(b *pendEntry) bool {
	return a.seq < b.seq || a.seq == b.seq && a.line < b.line
}

// memEntries is how many pending entries are held in memory (32 B each,
// so 1 MiB) before they go to disk as one sorted run. A variable so that
// tests can make runs small.
var memEntries = 1 << 15

const (
	// runChunk is how many entries of a run are read back at a time.
	runChunk = 128
	// entryBytes is the encoded size of a pendEntry in a run.
	entryBytes = 8 + 8 + 8 + 4
)

// pending holds the records that wait for an earlier seq, in constant
// memory: an external merge sort by (seq, line). Entries collect in an
// in-memory heap; when it is full they are sorted and written to a
// temporary file as a run, of which only a small read buffer stays in
// memory. The smallest pending entry is the least of the in-memory heap's
// top and the heads of the runs, themselves kept in a heap.
//
// The lines themselves are never held in memory: when the log can be read
// at an offset (src), an entry points into it; otherwise the line is
// appended to the temporary file and the entry points there.
//
// Memory is about 1 MiB plus 4 KiB per run of 32,768 entries, whatever
// the number of records out of place; the disk holds 28 bytes per pending
// record, plus the line itself when the log is a plain stream.
type pending struct {
	src   io.ReaderAt // nil: lines are spilled
	dir   string      // for os.CreateTemp
	f     *os.File    // created on first use, removed by close
	w     *bufio.Writer
	size  int64 // bytes written to f, buffered ones included
	mem   []pendEntry
	runs  []*run
	count int64
	enc   [runChunk * entryBytes]byte
}

// run is a sorted run of entries on disk, read back a chunk at a time.
type run struct {
	off  int64 // next unread entry in the file
	left int   // entries not yet read from the file
	buf  []pendEntry
	i    int
}

func (r *run) head() *pendEntry { return &r.buf[r.i] }

func newPending(src io.ReaderAt, dir string) *pending {
	return &pending{src: src, dir: dir}
}

func (p *pending) file() error {
	if p.f != nil {
		return nil
	}
	f, err := os.CreateTemp(p.dir, "adp-archive-*.tmp")
	if err != nil {
		return fmt.Errorf("archive: spill file for out-of-order records: %w", err)
	}
	p.f, p.w = f, bufio.NewWriterSize(f, 64<<10)
	return nil
}

// close removes the temporary file.
func (p *pending) close() {
	if p.f != nil {
		p.f.Close()
		os.Remove(p.f.Name())
		p.f = nil
	}
}

// readAt reads exactly len(dst) bytes of the spill file at off.
func (p *pending) readAt(dst []byte, off int64) error {
	if p.w.Buffered() > 0 {
		if err := p.w.Flush(); err != nil {
			return fmt.Errorf("archive: spill file: %w", err)
		}
	}
	if _, err := p.f.ReadAt(dst, off); err != nil {
		return fmt.Errorf("archive: spill file: %w", err)
	}
	return nil
}

// add records an out-of-order line; raw is its bytes, copied to the spill
// file unless the log can be re-read at e.off.
func (p *pending) add(e pendEntry, raw []byte) error {
	if p.src == nil {
		if err := p.file(); err != nil {
			return err
		}
		if _, err := p.w.Write(raw); err != nil {
			return fmt.Errorf("archive: spill file: %w", err)
		}
		e.off = p.size
		p.size += int64(len(raw))
	}
	p.mem = append(p.mem, e)
	siftUp(p.mem, len(p.mem)-1, (*pendEntry).less)
	p.count++
	if len(p.mem) >= memEntries {
		return p.spillRun()
	}
	return nil
}

// spillRun writes the in-memory entries to the file as a sorted run.
func (p *pending) spillRun() error {
	if err := p.file(); err != nil {
		return err
	}
	slices.SortFunc(p.mem, func(a, b pendEntry) int {
		if a.less(&b) {
			return -1
		}
		return 1
	})
	r := &run{off: p.size, left: len(p.mem)}
	for i := 0; i < len(p.mem); i += runChunk {
		chunk := p.mem[i:min(i+runChunk, len(p.mem))]
		b := p.enc[:0]
		for _, e := range chunk {
			b = binary.LittleEndian.AppendUint64(b, uint64(e.seq))
			b = binary.LittleEndian.AppendUint64(b, uint64(e.line))
			b = binary.LittleEndian.AppendUint64(b, uint64(e.off))
			b = binary.LittleEndian.AppendUint32(b, uint32(e.n))
		}
		if _, err := p.w.Write(b); err != nil {
			return fmt.Errorf("archive: spill file: %w", err)
		}
		p.size += int64(len(b))
	}
	p.mem = p.mem[:0]
	if err := p.load(r); err != nil {
		return err
	}
	p.runs = append(p.runs, r)
	siftUp(p.runs, len(p.runs)-1, runLess)
	return nil
}

func runLess(a, b **run) bool { return (*a).head().less((*b).head()) }

// load reads the next chunk of r.
func (p *pending) load(r *run) error {
	k := min(runChunk, r.left)
	b := p.enc[:k*entryBytes]
	if err := p.readAt(b, r.off); err != nil {
		return err
	}
	r.off += int64(len(b))
	r.left -= k
	if r.buf == nil {
		r.buf = make([]pendEntry, 0, runChunk)
	}
	r.buf, r.i = r.buf[:k], 0
	for j := range k {
		e := b[j*entryBytes:]
		r.buf[j] = pendEntry{
			seq:  int64(binary.LittleEndian.Uint64(e)),
			line: int64(binary.LittleEndian.Uint64(e[8:])),
			off:  int64(binary.LittleEndian.Uint64(e[16:])),
			n:    int32(binary.LittleEndian.Uint32(e[24:])),
		}
	}
	return nil
}

// peek returns the least pending entry.
func (p *pending) peek() (pendEntry, bool) {
	switch {
	case len(p.mem) == 0 && len(p.runs) == 0:
		return pendEntry{}, false
	case len(p.runs) == 0:
		return p.mem[0], true
	case len(p.mem) == 0 || p.runs[0].head().less(&p.mem[0]):
		return *p.runs[0].head(), true
	}
	return p.mem[0], true
}

// pop removes the entry peek returns.
func (p *pending) pop() error {
	p.count--
	if len(p.runs) > 0 && (len(p.mem) == 0 || p.runs[0].head().less(&p.mem[0])) {
		r := p.runs[0]
		if r.i++; r.i == len(r.buf) {
			if r.left == 0 {
				last := len(p.runs) - 1
				p.runs[0] = p.runs[last]
				p.runs = p.runs[:last]
				siftDown(p.runs, 0, runLess)
				return nil
			}
			if err := p.load(r); err != nil {
				return err
			}
		}
		siftDown(p.runs, 0, runLess)
		return nil
	}
	last := len(p.mem) - 1
	p.mem[0] = p.mem[last]
	p.mem = p.mem[:last]
	siftDown(p.mem, 0, (*pendEntry).less)
	return nil
}

// line appends the bytes of e's line to dst.
func (p *pending) line(dst []byte, e pendEntry) ([]byte, error) {
	n := len(dst)
	dst = slices.Grow(dst, int(e.n))[:n+int(e.n)]
	if p.src != nil {
		if _, err := p.src.ReadAt(dst[n:], e.off); err != nil {
			return dst[:n], fmt.Errorf("archive: re-reading records line %d: %w", e.line, err)
		}
		return dst, nil
	}
	return dst, p.readAt(dst[n:], e.off)
}

// nextBatch pops the pending entries with seqs *next, *next+1, … (up to
// a batch) and reads their lines into a batch for the workers; nil when
// the least pending seq is not *next.
func (p *pending) nextBatch(next *int64) (*batch, error) {
	var b *batch
	for {
		e, ok := p.peek()
		if !ok || e.seq != *next {
			return b, nil
		}
		if b == nil {
			b = &batch{done: make(chan struct{}), due: true, data: make([]byte, 0, batchBytes+4<<10)}
		} else if len(b.lines) == batchLines || len(b.data) >= batchBytes {
			return b, nil
		}
		if err := p.pop(); err != nil {
			return nil, err
		}
		var err error
		if b.data, err = p.line(b.data, e); err != nil {
			return nil, err
		}
		b.lines = append(b.lines, lineRef{end: len(b.data), line: e.line, off: e.off})
		*next++
	}
}

// siftUp and siftDown keep h a binary min-heap under less.
func siftUp[T any](h []T, i int, less func(a, b *T) bool) {
	for i > 0 {
		parent := (i - 1) / 2
		if !less(&h[i], &h[parent]) {
			return
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func siftDown[T any](h []T, i int, less func(a, b *T) bool) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && less(&h[r], &h[l]) {
			m = r
		}
		if !less(&h[m], &h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

package httpc

import (
	"crypto/sha256"
	"errors"
	"fmt"
)

// Defaults of [Cursor].
const (
	DefaultMaxPages = 1000
	DefaultMaxItems = 10000
	// DefaultMaxBytes is twice DefaultMaxResponseSize: a listing of a few
	// full pages, and not the thousand that DefaultMaxPages allows.
	DefaultMaxBytes = 64 << 20
	// MaxCursorLen bounds one cursor: it goes back into a request URL.
	MaxCursorLen = 4096
)

// ErrCursor is the cause of the error a [Cursor] returns for a cursor loop
// that does not end: a repeated cursor, a page with a cursor but no items,
// or more pages, items or bytes than its bounds.
var ErrCursor = errors.New("httpc: cursor loop does not end")

// Cursor guards one cursor-following loop over a peer's list pages
// ({result, next_cursor}, Identity §8): a hostile or broken peer can hand
// out cursors forever, or pages of any size up to the response bound, so
// every loop that follows them ends, and within a bounded number of bytes
// whatever its pages hold. It is not safe for concurrent use; use one per
// loop.
type Cursor struct {
	// MaxPages bounds the pages one loop fetches; 0 means
	// DefaultMaxPages.
	MaxPages int
	// MaxItems bounds the items one loop collects; 0 means
	// DefaultMaxItems.
	MaxItems int
	// MaxBytes bounds the bytes of the pages one loop fetches (their
	// bodies, together); 0 means DefaultMaxBytes.
	MaxBytes int64

	pages, items int
	bytes        int64
	seen         map[[32]byte]struct{} // digests: a cursor may be long
}

// Next records one page of n items in size bytes whose next cursor is
// next ("" on the last page) and reports whether to fetch the page at
// next. It returns an error wrapping ErrCursor when next repeats a cursor
// of this loop or is longer than MaxCursorLen, when the page is empty but
// names a next one (it does not advance), or when the loop passed
// MaxPages, MaxItems or MaxBytes.
func (c *Cursor) Next(n, size int, next string) (bool, error) {
	c.pages++
	c.items += n
	c.bytes += int64(size)
	maxPages, maxItems, maxBytes := c.MaxPages, c.MaxItems, c.MaxBytes
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	if maxItems <= 0 {
		maxItems = DefaultMaxItems
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	switch {
	case c.items > maxItems:
		return false, fmt.Errorf("%w: more than %d items", ErrCursor, maxItems)
	case c.bytes > maxBytes:
		return false, fmt.Errorf("%w: more than %d bytes", ErrCursor, maxBytes)
	case next == "":
		return false, nil
	case n == 0:
		return false, fmt.Errorf("%w: an empty page names a next page", ErrCursor)
	case c.pages >= maxPages:
		return false, fmt.Errorf("%w: more than %d pages", ErrCursor, maxPages)
	case len(next) > MaxCursorLen:
		return false, fmt.Errorf("%w: a cursor of %d bytes", ErrCursor, len(next))
	}
	d := sha256.Sum256([]byte(next))
	if _, dup := c.seen[d]; dup {
		return false, fmt.Errorf("%w: the cursor repeats", ErrCursor)
	}
	if c.seen == nil {
		c.seen = map[[32]byte]struct{}{}
	}
	c.seen[d] = struct{}{}
	return true, nil
}

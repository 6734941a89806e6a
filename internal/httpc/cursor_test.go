package httpc

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestCursor: every way a cursor loop fails to end is an ErrCursor.
func TestCursor(t *testing.T) {
	for _, c := range []struct {
		name  string
		pages func(i int) (int, int, string)
		cur   Cursor
		want  int // pages fetched before the error; -1: ends without one
	}{
		{"ends", func(i int) (int, int, string) {
			return 1, 100, map[bool]string{true: "", false: "c" + strconv.Itoa(i)}[i == 3]
		}, Cursor{}, -1},
		{"repeats", func(int) (int, int, string) { return 1, 100, "same" }, Cursor{}, 2},
		{"repeats later", func(i int) (int, int, string) { return 1, 100, "c" + strconv.Itoa(i%3) }, Cursor{}, 4},
		{"empty page with a cursor", func(i int) (int, int, string) { return 0, 100, "c" + strconv.Itoa(i) }, Cursor{}, 1},
		{"too many pages", func(i int) (int, int, string) { return 1, 100, "c" + strconv.Itoa(i) }, Cursor{MaxPages: 5}, 5},
		{"too many items", func(i int) (int, int, string) { return 40, 100, "c" + strconv.Itoa(i) }, Cursor{MaxItems: 100}, 3},
		{"too many bytes", func(i int) (int, int, string) { return 1, 30 << 20, "c" + strconv.Itoa(i) }, Cursor{}, 3},
		{"too many bytes on the last page", func(i int) (int, int, string) { return 1, 600, "" }, Cursor{MaxBytes: 500}, 1},
		{"long cursor", func(int) (int, int, string) { return 1, 100, strings.Repeat("x", MaxCursorLen+1) }, Cursor{}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cur := c.cur
			for i := 0; i < 10000; i++ {
				more, err := cur.Next(c.pages(i))
				if err != nil {
					if !errors.Is(err, ErrCursor) || i+1 != c.want {
						t.Fatalf("page %d: %v (want the error at page %d)", i+1, err, c.want)
					}
					return
				}
				if !more {
					if c.want != -1 {
						t.Fatalf("ended at page %d without an error", i+1)
					}
					return
				}
			}
			t.Fatal("the loop did not end")
		})
	}
}

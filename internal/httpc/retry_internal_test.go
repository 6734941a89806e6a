package httpc

import (
	"testing"
	"time"
)

// Retry-After is read from hostile services: any value yields a wait that
// is never negative, or none at all.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "7", "4294967295", "4294967296", "-1", "1.5", " 3",
		"Wed, 21 Oct 2015 07:28:00 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "soon"} {
		f.Add(s)
	}
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, h string) {
		d, ok := retryAfter(h, now)
		if ok && d < 0 || !ok && d != 0 {
			t.Fatalf("%q: %v %v", h, d, ok)
		}
	})
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"120", 2 * time.Minute, true},
		{"4294967295", 4294967295 * time.Second, true},
		{"4294967296", 0, false},
		{"-1", 0, false},
		{"Wed, 21 Oct 2015 07:28:30 GMT", 30 * time.Second, true},
		{"Wed, 21 Oct 2015 07:27:00 GMT", 0, true},
		{"soon", 0, false},
	} {
		if d, ok := retryAfter(tc.h, now); d != tc.want || ok != tc.ok {
			t.Errorf("%q: %v %v, want %v %v", tc.h, d, ok, tc.want, tc.ok)
		}
	}
}

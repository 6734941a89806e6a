package cputime

import (
	"testing"
	"time"
)

// TestProcessAdvances: busy work shows in the process's CPU time.
func TestProcessAdvances(t *testing.T) {
	if !known {
		t.Skip("no process CPU time on this platform")
	}
	t0, start := Process(), time.Now()
	x := uint64(1)
	for Process()-t0 < 20*time.Millisecond {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("CPU time advanced %v in 5 s of busy work", Process()-t0)
		}
		for range 100_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if x == 0 {
		t.Log(x)
	}
}

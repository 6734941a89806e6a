package cputime

import "testing"

// TestProcessAdvances: busy work shows in the process's CPU time.
func TestProcessAdvances(t *testing.T) {
	if !Known() {
		t.Skip("no process CPU time on this platform")
	}
	t0 := Process()
	x := uint64(1)
	for Process()-t0 < 20e6 { // 20 ms
		for range 100_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if x == 0 {
		t.Log(x)
	}
}

//go:build race

package sse_test

// raceEnabled reports a -race build, whose instrumentation makes the heap
// and CPU measurements meaningless.
const raceEnabled = true

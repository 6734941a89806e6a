//go:build !race

// Package raceflag tells tests whether the race detector is on: its
// instrumentation slows regexp matching and hashing tenfold or more, so
// the generous wall-clock guards of a few hostile-input tests (guards
// against hours, not measurements) do not apply under -race.
package raceflag

// Enabled reports whether the program was built with -race.
const Enabled = false

//go:build !race

package adp_test

// raceEnabled reports a -race build, whose instrumentation slows regexp
// matching tenfold or more, so wall-clock guards do not apply.
const raceEnabled = false

//go:build race

package raceflag

// Enabled reports whether the program was built with -race.
const Enabled = true

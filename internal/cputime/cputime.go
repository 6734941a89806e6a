// Package cputime reads the CPU time the process has used, for
// benchmarks that report cost by CPU time beside wall time: unlike wall
// time, it does not count the time other processes on a loaded machine
// take from this one.
package cputime

import "time"

// Process is the CPU time (user and system, every thread) the process
// has used; 0 where the platform does not say (not unix).
func Process() time.Duration { return process() }

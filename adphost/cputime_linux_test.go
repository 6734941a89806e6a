//go:build linux

package adphost_test

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time of the calling OS thread (user and
// system), or false where it cannot be read. Benchmarks lock their
// goroutine to a thread and compare CPU time, which other processes on a
// shared machine do not inflate; it leaves out work on other threads,
// such as background garbage collection.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

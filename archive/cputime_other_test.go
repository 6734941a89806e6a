//go:build !unix

package archive_test

import "time"

// cpuTime is unknown here: the CPU-time metrics read 0.
func cpuTime() time.Duration { return 0 }

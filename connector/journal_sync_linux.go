package connector

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data (and the size, when it changed) without the
// rest of its metadata.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

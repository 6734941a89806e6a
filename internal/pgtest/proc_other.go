//go:build !unix

package pgtest

import (
	"os"
	"syscall"
)

// Where there is no unix process model (Windows) the package runs
// initdb and postgres as the current user, and a cluster is stopped by
// killing its postmaster alone.

type credential struct{ Uid, Gid uint32 }

func initAttr(*credential) *syscall.SysProcAttr   { return nil }
func serverAttr(*credential) *syscall.SysProcAttr { return nil }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

// running is false, so a stale directory is removed once it is old;
// removing the directory of a live server fails on Windows anyway.
func running(int) bool { return false }

//go:build unix && !linux

package pgtest

import "syscall"

// serverAttr runs postgres as cred in its own process group.
func serverAttr(cred *credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: true}
}

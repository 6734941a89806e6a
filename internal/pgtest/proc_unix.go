//go:build unix

package pgtest

import "syscall"

// credential is the user initdb and postgres run as when the test runs
// as root (PostgreSQL refuses root).
type credential = syscall.Credential

// initAttr runs initdb as cred (nil: as this process's user).
func initAttr(cred *credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}

// killGroup kills the process group a server leads (serverAttr's Setpgid).
func killGroup(pid int) { syscall.Kill(-pid, syscall.SIGKILL) }

// running reports whether process pid exists (EPERM: it does, as another
// user).
func running(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

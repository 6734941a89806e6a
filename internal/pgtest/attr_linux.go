package pgtest

import "syscall"

// serverAttr runs postgres as cred in its own process group (for
// CPUTime), killed with the test binary (Pdeathsig).
func serverAttr(cred *credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

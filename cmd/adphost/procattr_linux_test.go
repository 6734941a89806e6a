package main

import "syscall"

// procAttr puts a host process in its own process group (for its CPU
// time) and kills it with the test binary.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

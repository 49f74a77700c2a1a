package testproc

import "syscall"

// sysProcAttr puts the process in a group of its own, and kills it when the test binary
// dies without running its cleanups (a test timeout, a crash).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

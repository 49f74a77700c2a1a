//go:build !unix

package testproc

import (
	"os"
	"syscall"
)

// sysProcAttr returns nil: without Unix process groups the process runs as any child does.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup signals the process alone: there are no Unix process groups here.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	if sig == syscall.SIGKILL {
		return p.Kill()
	}
	return p.Signal(sig)
}

//go:build unix

package testproc

import (
	"os"
	"syscall"
)

// signalGroup sends sig to the process group p leads.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}

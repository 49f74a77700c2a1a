//go:build unix

package procgroup

import (
	"errors"
	"os/exec"
	"syscall"
)

// Set makes cmd start the child in a process group of its own, so that it and every
// process it spawns (npx → node, sh → server) can be signalled together.
//
// Pdeathsig is deliberately not set: Linux sends it when the thread that forked the
// child exits, not the process (golang/go#27505), and the Go runtime may retire threads.
// A child outliving a crashed gateway sees its stdin close instead.
func Set(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to the child's whole process group.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Terminate asks the group to exit (SIGTERM).
func Terminate(cmd *exec.Cmd) error { return signalGroup(cmd, syscall.SIGTERM) }

// Kill kills the group (SIGKILL), which also ends a stopped or hung child.
func Kill(cmd *exec.Cmd) error { return signalGroup(cmd, syscall.SIGKILL) }

//go:build !unix

package sessionrpc

import "os/exec"

// setProcessGroup is a no-op where process groups do not exist.
func setProcessGroup(*exec.Cmd) {}

// terminateGroup kills the child (there is no group, and no SIGTERM, to send).
func terminateGroup(cmd *exec.Cmd) error { return killGroup(cmd) }

// killGroup kills the child process.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}

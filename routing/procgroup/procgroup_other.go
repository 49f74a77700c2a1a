//go:build !unix

package procgroup

import "os/exec"

// Set is a no-op where process groups do not exist.
func Set(*exec.Cmd) {}

// Terminate kills the child (there is no group, and no SIGTERM, to send).
func Terminate(cmd *exec.Cmd) error { return Kill(cmd) }

// Kill kills the child process.
func Kill(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}

//go:build unix && !linux

package testproc

import "syscall"

// sysProcAttr puts the process in a group of its own. Only Linux can also tie a child's
// life to its parent's.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

//go:build !linux

package otelstack

import "syscall"

// sysProcAttr returns nil: only Linux can tie a child's life to its parent's.
func sysProcAttr() *syscall.SysProcAttr { return nil }

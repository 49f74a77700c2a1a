package otelstack

import "syscall"

// sysProcAttr kills a started process when the test binary dies without running its cleanups
// (a test timeout, a crash), so no Jaeger or Prometheus outlives it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// Package testproc runs real programs for test harnesses (internal/otelstack's Jaeger and
// Prometheus, internal/redistest's redis-server, Sentinels and Cluster nodes): [Start] runs
// one with its output in a log file of the test's temporary directory, [Process.WaitReady]
// waits until it answers, [Process.Stop] and [Process.Kill] end and reap it, and
// [Process.Tail] gives the end of its log for failure messages. [FreeAddrs] finds loopback
// ports for it and [Lookup] finds its binary, failing the test under CI and skipping it
// elsewhere when the binary is missing.
//
// Every process runs in a process group of its own on Unix, which [Process.Kill] and
// [Process.Signal] address whole, and on Linux it is killed when the test binary dies
// without running its cleanups (a test timeout, a crash), so nothing outlives the tests.
package testproc

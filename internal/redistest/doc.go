// Package redistest runs a real redis-server on loopback for the tests of Gatehouse's Redis
// state backend: one process per [Start], on a free 127.0.0.1 port, in the test's temporary
// directory, without persistence, stopped at the end of the test. [Server.Kill] and
// [Server.Restart] simulate losing the server and getting it back on the same address;
// [Server.Pause] and [Server.Resume] one that stops answering without closing connections.
// [StartTLS] runs one that speaks only TLS and requires client certificates, all signed by
// a CA made for the test. [Server.Prefix] gives each test a key prefix of its own.
//
// [StartSentinel] runs a master, a replica and three Sentinels that can fail it over in a
// few seconds ([Sentinel.KillMaster], [Sentinel.WaitFailover]); [StartSentinelAuth] the
// same with Sentinels that require a password. [StartCluster] runs a three-master Redis
// Cluster, joined with `redis-cli --cluster create`. Every process is bounded: a topology
// not ready within 20 s fails the test with the processes' logs.
//
// The binary is $REDIS_SERVER_BIN, else redis-server on PATH, and redis-cli
// ($REDIS_CLI_BIN, else on PATH) for a Cluster; `make redis-tools` installs Debian's
// package. A missing binary fails the test under CI (CI set) and skips it elsewhere, as
// internal/otelstack does for Jaeger and Prometheus. The processes run through
// internal/testproc, each in a process group of its own that Kill and the cleanup end
// with SIGKILL.
package redistest

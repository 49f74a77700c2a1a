// Package server composes Gatehouse: it loads the configuration, builds the pipeline and the
// targets from it, and serves the faces — the JSON-RPC boundary over HTTP and WebSocket and
// the admin listener — with reload on a new configuration and graceful shutdown.
//
// A configuration is turned into a runtime: the handler chain, authenticator, method table and
// limits built from it. Each request takes a reference to the runtime current when it
// arrives and keeps it until it finishes, so a reload swaps runtimes atomically while
// in-flight calls finish on the old one, which is closed when its last call ends.
package server

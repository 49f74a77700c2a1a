// Package sessionrpc holds the targets that run session RPC requests (seed 004) for the
// session face (faces/session): a proxy to an upstream agent server that itself speaks
// the contract over WebSocket or HTTP+SSE (upstream.go), and a gRPC server-streaming
// method whose messages map onto events by a declared field mapping (grpcstream.go).
// A route may instead name a capability (a NEKTE capability, an MCP tool, an agent-link
// operator); the session face adapts its progress and result itself.
//
// Each route is a method "session.<name>" in the routing table, so a session request
// passes the whole pipeline (policy, admission, breaker, hop token) like any call. Its
// result is a stream of codecs/sessionrpc Frames.
package sessionrpc

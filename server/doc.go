// Package server composes Gatehouse: it loads the configuration, builds the pipeline and the
// targets from it (chain.go holds the stages' order), and serves the faces — faces/httprpc
// and faces/ws on the boundary listener beside faces/mcp, faces/grpc on the internal
// listener, faces/admin on the admin listener, and MCP over stdio — with reload on a new
// configuration and graceful shutdown. Each face sees the server through an interface of
// its own, which a small adapter here satisfies (httpwire.go, mcpwire.go, grpcwire.go,
// adminwire.go).
//
// A configuration is turned into a runtime: the handler chain, authenticator, method table and
// limits built from it. Each request takes a reference to the runtime current when it
// arrives and keeps it until it finishes, so a reload swaps runtimes atomically while
// in-flight calls finish on the old one, which is closed when its last call ends.
//
// The server is assembly only: it holds no protocol handling and no target of its own. It
// may import every layer below it (the faces, routing, auth, resilience, observability and
// the core); it hands routing what routing may not import — the policy engine's decision
// (newVisibility), the pipeline (the MCP route backends' RunFunc) and the configuration
// current at each call (the NEKTE service's catalog).
package server

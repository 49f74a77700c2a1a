// Package grpcface is the internal gRPC face: the listener the platform's own services
// dial (server.internal). It owns the gRPC server and what it serves —
// gatehouse.v1.GatewayService (any routed method, for internal callers), nekte.v1.Nekte
// (the NEKTE primitives over gRPC), tool.v1.ToolService (the bridged MCP tools),
// gatehouse.v1.PeerService (replicas fetching each other's persist: false NEKTE context
// envelopes) and its client, gRPC health checking per target, server reflection — and the
// interceptors that make each RPC a server span. Each RPC authenticates its caller from
// metadata and runs through the pipeline of the configuration in force, as a call made
// over HTTP does (faces.Pipeline.RunAs).
//
// The face sees the gateway through Gateway and Runtime, declared here; the server
// satisfies them and starts and stops the Face. Config is the server.internal section.
//
// grpcface imports schemas, codecs, gateway, state, the middle row (auth, resilience,
// routing, observability) and package faces; never the server, never another face.
package grpcface

// Package gateway holds the core types every part of Gatehouse speaks: a Call decoded from
// any face, its Result, the one coded Error that crosses the boundary, the pipeline's Handler
// and Middleware, and the Target interface that backends implement.
//
// The package imports only schemas and codecs. Third-party types (gin, gRPC, OTel, mcp-go,
// gobreaker) never appear here; they stay inside the package that uses them. The server that
// composes everything lives below, in server.
package gateway

// Package grpcbackend routes JSON-RPC calls to gRPC backends. Each backend has one pooled
// client connection and a set of protobuf descriptors (from a descriptor set file, .proto
// sources compiled at start-up, or the backend's server reflection). JSON-RPC method names
// map to RPCs explicitly or by exposing whole services under a prefix; each RPC's request
// and response are transcoded by plans compiled once from its descriptors, so the hot path
// writes protobuf wire bytes straight from the JSON params and JSON straight from the
// response bytes.
//
// Every RPC carries metadata built for it alone — x-request-id, traceparent, x-jsonrpc-id
// and, when the dispatch put a hop credential in the call's context (gateway.HopToken),
// "authorization: Bearer <token>" — never metadata the caller sent. Which credential a
// backend gets is its downstream_token section (gateway.DownstreamTokenConfig): a token minted for
// it (the default, audience = the backend's name), the caller's own, or none.
package grpcbackend

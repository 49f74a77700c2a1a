// Package httprpc is the JSON-RPC face over HTTP on the boundary listener: POST /rpc with
// bodies in JSON or MessagePack, single requests and batches, answered in one response or
// as Server-Sent Events (streamed results, progress, NEKTE task events); Retry-After,
// RateLimit and step-up challenge headers; the NEKTE agent card and the gateway's JWKS at
// their well-known paths; the OpenRPC document of a caller without credentials at
// /openrpc.json; and the boundary's router, which mounts the other faces' routes beside
// its own.
//
// It imports schemas, codecs, gateway, the middle row (auth, resilience, routing,
// observability) and faces; never another face or the server.
package httprpc

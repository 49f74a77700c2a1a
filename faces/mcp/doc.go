// Package mcpface is the MCP face: the bridged MCP catalog (routing/mcpbackend) served as
// one MCP server — streamable HTTP at /mcp, the legacy HTTP+SSE transport at /sse and
// /message, and stdio for a local client — with every tools/call, resources/read,
// prompts/get and completion/complete run through the pipeline as the MCP caller. It owns
// its configuration (Config, the mcp_face section), the signed session IDs and their table
// in the state store, the per-caller filtering of its lists, the relay of upstream
// progress, logs, sampling and elicitation to the calling session (to a 2026-07-28
// caller as multi round-trip requests, held across replicas: mrtr.go), resource
// subscriptions, the refusals it rewrites as the gateway's errors, and the OAuth
// protected-resource metadata of /mcp.
//
// It sees the gateway through Gateway and Runtime, never the server. It may import
// schemas, codecs, gateway, state, the middle row (auth, resilience, routing,
// observability) and package faces; never the server or another face. mcp-go's types stay
// inside it.
package mcpface

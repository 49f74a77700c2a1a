// Package mcpbackend bridges Gatehouse to upstream MCP servers: it keeps supervised
// connections to each configured server (a stdio child process, a legacy HTTP+SSE
// endpoint or a streamable HTTP endpoint), aggregates their tools, resources, resource
// templates and prompts into one catalog, and calls them.
//
// # Connections
//
// Each upstream has a pool of sessions (one by default). A session is one MCP client
// connection: the initialize handshake (or server/discover on the stateless 2026-07-28
// revision) negotiates a protocol version from the configured list, and the server's
// capabilities are recorded and respected (no resources/subscribe to a server that does
// not advertise it, no listing of a capability the server lacks). Many calls share one
// session, multiplexed by JSON-RPC id.
//
// A supervisor per pool slot watches its session: a stdio child that exits is noticed at
// once, and one that stops answering pings within one heartbeat interval. The session's
// in-flight calls then fail at once with UNAVAILABLE (-32020, data {upstream, reason}),
// the child's process group is killed, and it is restarted with exponential backoff and
// jitter; meanwhile the upstream's catalog entries are marked unavailable. The child's
// stderr is logged line by line (bounded length) and never parsed. A streamable HTTP
// session the server has forgotten (404 on a stale Mcp-Session-Id) is replaced by a new
// one and the call is retried once.
//
// # Names
//
// Tool and prompt names are exposed per upstream in one of three modes: "always"
// prefixed (prefix + separator + name, "everything__echo" with the default separator
// "__", chosen because LLM clients restrict tool names to [A-Za-z0-9_-]), prefixed only
// "on_collision" with another upstream's name, or "never". Collisions can only be known
// once catalogs have loaded: a name claimed by two upstreams after prefixing is a
// collision, reported by Ready, logged, and every colliding entry is unavailable — one is
// never silently picked. Resources keep their URIs.
//
// # Calls and progress
//
// Bridge.CallTool, ReadResource and GetPrompt return the upstream's result JSON as it
// was sent. Progress is a callback carried by the context (WithProgress): when present, a
// progress token is sent upstream and each notifications/progress for it is passed to
// the callback. The gateway.Target adapter (Bridge.Target) turns that into a
// gateway.Stream for callers that asked for it with WantProgress, so the JSON-RPC faces
// deliver progress as "$/stream" notifications. When the caller's context ends, the
// upstream receives notifications/cancelled for the request.
//
// # Catalog changes
//
// notifications/{tools,resources,prompts}/list_changed trigger a refetch (following
// pagination to its end); the delta (added, removed, changed) is sent to the listeners
// registered with Bridge.OnEvent. Each entry carries a version hash: for tools, the
// SHA-256 of the canonical JSON of its input and output schemas (see SchemaVersion and
// CanonicalJSON, which writes JSON exactly as JavaScript's JSON.stringify would after
// sorting keys, so that other implementations can reproduce it).
package mcpbackend

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
// # Session affinity and what an upstream speaks
//
// Under session_affinity "caller" a server on a handshake revision gives each caller a
// session of its own instead of the pool's (affinity.go): the caller is the principal's
// issuer and subject plus, for a 2025 client of the MCP face, its face session id. Over
// streamable HTTP the caller's upstream session id, version and capabilities are recorded
// in the state store (WithStore), so any replica resumes it; elsewhere it is per process.
// The pool's connection records what the server speaks: server/discover's versions, or
// the handshake's (discover.go, Bridge.Probes).
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
// was sent. Progress is a sink carried by the context (gateway.WithProgress, which
// WithProgress is): when present, a progress token is sent upstream and each
// notifications/progress for it is passed to the sink on the upstream connection's
// reader, so the sink must not block. The faces set the sink: the JSON-RPC faces relay
// reports as "$/progress" notifications (WebSocket, HTTP with an event stream), the MCP
// face as notifications/progress under the caller's own token. When the caller's context
// ends, the upstream receives notifications/cancelled for the request.
//
// # Who may call tools directly
//
// The gateway.Target adapter (Bridge.Target) serves tools as methods under a namespace
// and as "tools/call". Such direct calls are allowed from the trust zones given with
// WithDirectZones (by default every zone but external) and always over MCP; others are
// refused with AUTHORIZATION_FAILED.
//
// # Relaying to the caller
//
// A face that serves MCP clients puts the calling client in the call's context
// (WithPeer). While the call runs, what its upstream sends for it goes to that peer:
// notifications/message (also written to the gateway's log: debug at debug, warning and
// above at warn, the rest at info), and
// sampling/createMessage and elicitation/create when the upstream's policy for them is
// "client" (Config.Sampling, Config.Elicitation; "refuse", the default, answers with an
// error, and "route" hands them to the SamplingHandler or ElicitationHandler, which
// RouteBackends builds from routing.mcp.sampling_backend and elicitation_backend: an HTTP
// endpoint, or a method run through the pipeline by the RunFunc the server binds). A request
// is relayed only when the peer declared the capability (for elicitation, form mode).
//
// Attribution is never a guess. A message that arrives in the context of the request
// that caused it belongs to that request's caller: an input request of a multi
// round-trip result (2026-07-28), and over streamable HTTP a request on the response
// stream of the call's POST (mcp-go hands those to the handler in the context of the
// SendRequest that opened the stream). Anything else — every message over stdio or the
// legacy SSE transport, a request on the standalone GET stream, any notification — is
// attributed to a caller only when every request in flight on that upstream session
// carries the same peer (a request without one, from a JSON-RPC caller, counts as another
// caller). Otherwise the request is refused as under "refuse", naming why, the log
// message goes only to the gateway's log, and the decision is logged at debug.
//
// The client capabilities declared to the server follow the policies: sampling and
// elicitation (form) are declared under "client", and under "route" when a handler is
// installed. A server on a handshake revision is asked for every log level at connect
// (logging/setLevel debug, when it declares logging), and the face filters by each
// session's level; on 2026-07-28 each call asks for its peer's level.
//
// Bridge.Complete forwards completion/complete to the upstream that owns the referenced
// prompt or resource template; an upstream that does not declare completions has none
// to offer (an empty completion).
//
// # Downstream credential
//
// Each upstream's downstream_token section (gateway.DownstreamTokenConfig) says which credential
// it receives on a call's hop: a token the gateway mints for it (mint, the default; the
// audience defaults to the upstream's name), the caller's own (passthrough) or none.
// Target.HopAuth tells the dispatch which, for the upstream the call reaches; the dispatch
// puts the token in the call's context (gateway.WithHopToken), and the bridge sends it
// with every request made for that call: over streamable HTTP and SSE as
// "Authorization: Bearer <token>" (replacing a configured static Authorization header on
// those requests), over stdio as params._meta[MetaKeyAuthorization]. The requests the
// bridge makes on its own — initialize, list refreshes, pings, subscriptions — run in
// contexts of its own and carry none; an upstream whose mode is none never gets one.
//
// # Catalog changes
//
// notifications/{tools,resources,prompts}/list_changed trigger a refetch (following
// pagination to its end); the delta (added, removed, changed) is sent to the listeners
// registered with Bridge.OnEvent. Each entry carries a version hash: for tools, the
// SHA-256 of the canonical JSON of its input and output schemas (see SchemaVersion and
// codecs/canonical, which writes JSON exactly as JavaScript's JSON.stringify would after
// sorting keys, so that other implementations can reproduce it).
package mcpbackend

// Package a2a is the target of upstream Agent2Agent (A2A) agents (routing.a2a.agents):
// each configured agent's card is fetched, verified and cached, and each skill on it
// becomes a method (and a capability of the catalog) under the agent's prefix, so that it
// is reachable by nekte.invoke and nekte.delegate, as a JSON-RPC method, as a tool of the
// MCP face and as a skill of the gateway's own A2A face, through the same policy,
// breakers, admission and rate limits as every target (its backend is "a2a/<name>").
//
// # Card
//
// The card is fetched from card_url (its well-known path, /.well-known/agent-card.json,
// unless card_url names a .json document) with card_timeout and at most max_card_bytes,
// at start in the background and then every card_refresh; redirects are not followed.
// The JSON-RPC interface of protocol version 1.0 is preferred, else that of 0.3 (or the
// 0.3 card's url). A card whose signatures (JWS with a detached payload over the RFC 8785
// canonical JSON of the card without signatures) do not verify against the keys of
// card_signature (jwks_file, or jwks_url fetched with every card) is refused, and so is
// an unsigned card under require_signed_card; a refused card is logged, counted
// (Target.CardFailures, the Observer) and leaves the last good card serving. Until a card
// is loaded, the agent has no skills and its calls fail with UNAVAILABLE (not sent). On a
// reload, an agent whose section is unchanged starts with the card of the configuration it
// replaces (Options.Seed), so its skills do not blink out.
//
// # Calls
//
// A call's params are {text, data}: text (required) becomes a text part of the message,
// data (optional) a data part; the message's metadata names the skill (skillId). The request carries the hop
// credential (downstream_token: a minted token by default, passthrough or none) as
// Authorization: Bearer, the W3C trace context of the call's client span (traceparent,
// tracestate), A2A-Version: 1.0 when the card's interface is 1.0 (the 0.3 method names and
// spellings otherwise), and the call's remaining time in A2A-Request-Timeout-Ms: A2A has
// no deadline of its own, so the request is bounded by the call's deadline less the hop
// reserve (and request_timeout), and the agent is told how long that is.
//
// Without a progress sink the call is SendMessage; a task the agent leaves running is
// polled with GetTask until it ends. With one (nekte.delegate, an MCP call with a
// progress token) and a card that says the agent streams, it is SendStreamingMessage:
// each status update is a progress report carrying the status message's text, each
// artifact update one naming the artifact (chunks are appended), and the stream ends at
// the terminal state. Cancelling the call (nekte.task.cancel, an MCP cancellation, the
// deadline) sends CancelTask for the task, bounded by cancel_timeout — once the agent has
// named it: a SendMessage cut short before its answer cannot name the task to cancel.
//
// The result is {task_id, context_id, state, text, artifacts}: text joins the text parts
// of the artifacts (or of the agent's message, state "message"). A task that ends
// failed is AGENT_TASK_FAILED, rejected AGENT_REJECTED, canceled CANCELLED, and one
// waiting for input or authentication AGENT_EXECUTION, each with data {agent, skill,
// task_id, state, message}. An agent's JSON-RPC error is AGENT_EXECUTION (TASK_NOT_FOUND,
// INVALID_PARAMS for those codes) with data.upstream_code; a response that is not A2A is
// DEPENDENCY_FAILED; one larger than max_response_bytes PAYLOAD_TOO_LARGE.
package a2a

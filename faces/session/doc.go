// Package session is the session RPC face (docs/session.md): interactive
// clients (chat UIs, IDE assistants) hold one connection — WebSocket at GET /session, or
// HTTP+SSE under /session/ — and run conversations on the routes of the session section.
//
// The face owns the contract: authentication before any payload is decoded, one running
// request per connection (per session id over SSE) with a bounded queue whose positions
// are re-emitted whenever it changes, abort of queued and running requests (a running
// request's call context is cancelled, so its backend work stops), task status by task id,
// and the invariants of every request's event sequence (codecs/sessionrpc.Checker): a
// target that breaks them ends its request with chat.error "invariant_broken".
//
// Each chat.start runs as one call through the configuration's pipeline (faces.Pipeline)
// with the method of its route: session.<route> for upstream and gRPC routes, whose target
// streams sessionrpc.Frames, or the capability's method, whose ordinary result the face
// adapts (progress → status events, a tool-call and a tool-result event around the call,
// the result → chat.done).
package session

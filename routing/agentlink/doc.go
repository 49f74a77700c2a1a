// Package agentlink is the gateway's side of the agent link (schemas/proto/agentlink/v1):
// compute agents dial in over gRPC, advertise the operators they run in a node descriptor,
// and take tasks the gateway dispatches to them; their operators become targets of the
// gateway like any other backend.
//
// The pieces, one file each:
//
//   - service.go: the AgentLinkService stream server. It authenticates the agent (an mTLS
//     principal or a bearer JWT whose scopes name the operators it may serve; anonymous
//     only where the config allows it), negotiates the protocol version strictly, and runs
//     one connection (conn.go) per stream.
//   - validate.go: the strict checks of every agent message (sizes, ids, versions, schemas).
//   - hub.go: the registry of connected agents: descriptors, operators, outstanding tasks,
//     per-agent concurrency, and the choice of an agent for a task (least outstanding
//     tasks; rendezvous hashing when the caller names an affinity key).
//   - dispatch.go: dispatch → acknowledgement → result, with timeouts, cancellation,
//     heartbeats and idempotent handling of duplicate and late results.
//   - target.go: the gateway.Target that routes "<namespace><operator>" methods to agents.
//   - errors.go: failures as outcomes, each with its own code and a recovery hint.
//
// Failures are never hidden and never retried by the gateway: a rejected, failed, timed-out
// or abandoned task reaches its caller with its own error code, and the target says it is
// not retryable (gateway.Unretryable).
package agentlink

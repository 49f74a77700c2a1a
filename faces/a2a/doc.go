// Package a2aface is the Agent2Agent (A2A) face on the boundary listener: the gateway as
// an A2A v1.0 server over the JSON-RPC binding (docs/a2a.md).
//
//   - GET /.well-known/agent-card.json serves an agent card generated from the capability
//     catalog: one skill per capability an anonymous caller may see (the visibility of
//     nekte.discover), the JSON-RPC interface at <origin>/a2a, streaming on, and the
//     security schemes of the auth section.
//   - POST /a2a serves SendMessage, SendStreamingMessage (Server-Sent Events), GetTask,
//     ListTasks, CancelTask and SubscribeToTask (SSE), the push-notification config
//     operations and GetExtendedAgentCard, in 1.0 and — unless a2a.serve_v03 is false —
//     in the 0.3 spellings a request without A2A-Version speaks.
//   - With a2a.card.sign the cards carry a JWS by the gateway's key ring (codecs/a2a
//     SignCard). With a2a.push.enabled a task's state changes and its end are posted to
//     the webhooks its owner gave (push.go): URLs checked against an allowlist on the URL
//     and on the dialled address (pushguard.go), each delivery signed with a JWT of the key
//     ring, retried within a budget from a bounded queue, its payload read as the owner.
//   - Operate (ops.go) runs the same operations for the gRPC binding, which the internal
//     gRPC face (faces/grpc, lf.a2a.v1.A2AService) serves unless a2a.grpc is false: the
//     request and result in the JSON-RPC binding's JSON, the caller the face authenticated.
//
// A message names a skill (metadata "skill", or a2a.default_skill) and runs as a NEKTE task
// on that capability: nekte.delegate, nekte.task.status, nekte.task.cancel and
// nekte.task.stream go through the pipeline as the caller, so authentication, policy, rate
// limits and tracing are every face's, and the task state machine is NEKTE's, mapped to A2A
// states, status updates and artifacts. The face keeps, in the state store, one record per
// A2A task binding it to the principal that created it (issuer and subject): any other
// caller is told the task does not exist.
//
// It imports schemas, codecs, gateway, the middle row and faces; never another face or the
// server.
package a2aface

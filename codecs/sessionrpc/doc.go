// Package sessionrpc is the wire format of session RPC (seed 004): the JSON envelopes an
// interactive client (a chat UI, an IDE assistant) and the gateway exchange over
// WebSocket or HTTP+SSE, the events of one request, and the frames a target hands the
// session face.
//
// An envelope is {"id": "rpc_…", "type": <message type>, "payload": {…}}. The id is the
// transport request id the client chose; task ids ("task_…") are a separate namespace
// the gateway assigns when it accepts a chat.start.
//
// Targets that run a session request (routing/sessionrpc, and the adapters of the session
// face) return a gateway.Result whose Stream yields Frames: zero or more chat.event
// frames, then exactly one chat.done or chat.error frame. The face checks every frame
// against the invariants of the contract (Checker) before it forwards it.
package sessionrpc

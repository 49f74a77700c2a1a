// Package ws is the JSON-RPC face over WebSocket on the boundary listener (GET /ws): the
// caller is authenticated at the upgrade, then each message is one JSON-RPC body (JSON in
// a text message, MessagePack in a binary one) whose requests run concurrently; progress,
// streamed results and named events go back as notifications; $/cancelRequest and
// $/stream/send address a request in flight. Each connection's send queue is bounded, and
// a consumer that cannot keep up is cut off.
//
// It imports schemas, codecs, gateway, the middle row (auth, resilience, routing,
// observability) and faces; never another face or the server.
package ws

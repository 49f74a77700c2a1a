// Package admin is the face of the operator's listener (the admin address, loopback by
// default): the probes GET /healthz and GET /readyz, the process's Prometheus metrics at
// GET /metrics, and the admin JSON-RPC API at POST /rpc — admin.approvals.* (auth/approval)
// and admin.revocations.* (auth), whose callers are authenticated in the operator zone
// before their body is read.
//
// The gauges behind /metrics and the state store behind readiness belong to the gateway:
// the face reaches them through its Gateway and Runtime interfaces.
//
// It imports schemas, codecs, gateway, state, the middle row (auth, resilience, routing,
// observability) and faces; never another face or the server.
package admin

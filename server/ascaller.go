package server

import "github.com/gatehouse-dev/gatehouse/gateway"

// asCaller is who a call made on a caller's behalf runs as. Only runtime.startAsCaller
// (tracing.go) still takes it: calls on a caller's behalf run through
// faces.Pipeline.RunAs with a faces.Caller. It goes when startAsCaller does.
type asCaller struct {
	principal gateway.Principal
	zone      gateway.TrustZone
	protocol  gateway.Protocol
	// traceID is the trace the call is recorded under; empty starts a new trace.
	traceID string
	// capability is the NEKTE capability the call runs (gateway.Call.Capability), empty for
	// a method called directly.
	capability string
}

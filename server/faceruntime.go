package server

import (
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// newPipeline returns the faces' entry into rt's pipeline (faces.Pipeline).
func newPipeline(rt *runtime) *faces.Pipeline {
	return &faces.Pipeline{
		Handler:           rt.handler,
		Limits:            rt.limits,
		Tiers:             rt.cfg.Batch.Tiers,
		BatchConcurrency:  rt.cfg.Batch.Concurrency,
		MaxBodyBytes:      rt.cfg.JSONRPC.MaxBodyBytes,
		MaxCollectedBytes: rt.cfg.JSONRPC.MaxCollectedBytes,
		Deadline:          rt.cfg.Deadline,
		Now:               rt.now,
		Log:               rt.log,
		Access:            rt.access,
		Tracer:            rt.trace.CallTracer(),
	}
}

// Pipeline implements faces.Runtime.
func (rt *runtime) Pipeline() *faces.Pipeline { return rt.pipe }

// Authenticator implements faces.Runtime.
func (rt *runtime) Authenticator() gateway.Authenticator { return rt.auth }

// Release implements faces.Runtime: the last reference to a retired runtime closes it.
func (rt *runtime) Release() { rt.release() }

var _ faces.Runtime = (*runtime)(nil)

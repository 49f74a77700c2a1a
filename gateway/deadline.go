package gateway

import (
	"context"
	"time"

	"github.com/gatehouse-dev/gatehouse/schemas"
)

// The layers a DEADLINE_EXCEEDED names in error.data.layer: which part of the path ran out
// of the call's time.
const (
	// LayerBoundary: the call arrived with less than ε (deadline.min_remaining) left and was
	// refused before any work was done.
	LayerBoundary = "boundary"
	// LayerGateway: the gateway's own wait ran out (an admission queue, an approval, a retry
	// back-off, dialling or waiting for a connection or a session slot).
	LayerGateway = "gateway"
	// LayerBackend: a gRPC backend ran out of the deadline it was sent, or a hop to it had
	// less than ε left after the response reserve and was not attempted.
	LayerBackend = "backend"
	// LayerUpstream: an MCP upstream did not answer within its request timeout, or a hop to
	// it had less than ε left after the reserve and was not attempted.
	LayerUpstream = "upstream"
	// LayerTask: a delegated NEKTE task ran out of its (deadline-bounded) running time, or
	// could not be started with ε left.
	LayerTask = "task"
)

// ErrDeadline returns a DEADLINE_EXCEEDED error whose error.data.layer names the layer that
// ran out of time. Callers add detail with With (e.g. remaining_ms).
func ErrDeadline(layer string) *Error {
	return NewError(schemas.CodeDeadlineExceeded).With("layer", layer)
}

// HopBudget is how a call's deadline is spent on a hop to a backend: Reserve is kept back
// for the response's trip back, and a hop left with less than MinRemaining (ε) once the
// reserve is taken is not attempted. The deadline stage puts the configured budget in the
// call's context (WithHopBudget); the zero HopBudget keeps nothing back and refuses only a
// hop with no time left.
type HopBudget struct {
	Reserve      time.Duration
	MinRemaining time.Duration
}

// MaxReserve bounds a hop's reserve (deadline.reserve, a gRPC backend's deadline_reserve):
// a reserve is for a response's trip back, not a second timeout.
const MaxReserve = time.Second

type hopBudgetKey struct{}

// WithHopBudget returns ctx carrying b for the hops the call makes.
func WithHopBudget(ctx context.Context, b HopBudget) context.Context {
	return context.WithValue(ctx, hopBudgetKey{}, b)
}

// FromCall implements CallKey.
func (hopBudgetKey) FromCall(c *Call, _ context.Context) (any, bool) {
	return c.vals.budget, c.vals.budget != nil
}

// WithHopBudgetFor is WithHopBudget for the stage running call: when ctx is call's context
// (WithCall) *b is kept on call (b must not change afterwards) and ctx is returned as it
// is; otherwise it is WithHopBudget.
func WithHopBudgetFor(ctx context.Context, call *Call, b *HopBudget) context.Context {
	if carries(ctx, call) {
		call.vals.budget = b
		return ctx
	}
	return WithHopBudget(ctx, *b)
}

// HopBudgetFrom returns the hop budget ctx carries, or the zero HopBudget.
func HopBudgetFrom(ctx context.Context) HopBudget {
	switch b := ctx.Value(hopBudgetKey{}).(type) {
	case HopBudget:
		return b
	case *HopBudget:
		return *b
	}
	return HopBudget{}
}

// Deadline returns the deadline a hop sends downstream: deadline less the reserve. When
// less than MinRemaining (and never less than a nanosecond) is left of it at now, the hop
// must not be attempted and the error is a DEADLINE_EXCEEDED naming layer, with data
// {remaining_ms, reserve_ms, min_remaining_ms}.
func (b HopBudget) Deadline(now, deadline time.Time, layer string) (time.Time, *Error) {
	hop := deadline.Add(-b.Reserve)
	if left := hop.Sub(now); left < max(b.MinRemaining, 1) {
		return hop, ErrDeadline(layer).
			With("remaining_ms", max(deadline.Sub(now).Milliseconds(), 0)).
			With("reserve_ms", b.Reserve.Milliseconds()).
			With("min_remaining_ms", b.MinRemaining.Milliseconds())
	}
	return hop, nil
}

type callerDeadlineKey struct{}

// WithCallerDeadline returns ctx marking that the caller named the call's deadline itself
// (X-Deadline-Ms, params.deadline_ms, a gRPC deadline) rather than getting the configured
// default. A target whose work may outlive the call (a delegated task) bounds it by such a
// deadline only.
func WithCallerDeadline(ctx context.Context, deadline time.Time) context.Context {
	return context.WithValue(ctx, callerDeadlineKey{}, deadline)
}

// FromCall implements CallKey.
func (callerDeadlineKey) FromCall(c *Call, _ context.Context) (any, bool) {
	if !c.vals.callerDeadline {
		return nil, false
	}
	return c.Deadline, true
}

// MarkCallerDeadline is WithCallerDeadline for call, whose Deadline the caller named: when
// ctx is call's context (WithCall) the mark is kept on call and ctx is returned as it is.
func MarkCallerDeadline(ctx context.Context, call *Call) context.Context {
	if carries(ctx, call) {
		call.vals.callerDeadline = true
		return ctx
	}
	return WithCallerDeadline(ctx, call.Deadline)
}

// CallerDeadline returns the deadline the caller named for the call, if it named one.
func CallerDeadline(ctx context.Context) (time.Time, bool) {
	dl, ok := ctx.Value(callerDeadlineKey{}).(time.Time)
	return dl, ok
}

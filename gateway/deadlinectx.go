package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// callDeadlineCtx is a call's context bounded by the call's deadline (WithCallDeadline). It
// reports the deadline at once, but derives the context that ends at it — a timer, a done
// channel, a registration with the parent — only when something asks for its Done channel
// or its error could be non-nil. A target that bounds its own hop by an earlier deadline
// (WithHopDeadline) derives the hop's context from the parent instead when nothing has
// asked, so a call that only makes such a hop runs one deadline context and one timer, not
// two.
type callDeadlineCtx struct {
	context.Context // the parent: values, and the cancellation the call inherits

	deadline time.Time
	real     atomic.Pointer[boundCtx] // context.WithDeadline(parent, deadline), once derived

	mu      sync.Mutex // serialises deriving real and stopping
	stopped bool       // the CancelFunc ran
}

// boundCtx is the derived context of a callDeadlineCtx and its CancelFunc.
type boundCtx struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// callDeadlineKey finds the callDeadlineCtx a context derives from.
type callDeadlineKey struct{}

// WithCallDeadline returns ctx bounded by deadline, as context.WithDeadline does, and its
// CancelFunc, which must be called when the call's work is done. The deadline, the values
// and the cancellation are those of context.WithDeadline(ctx, deadline); the difference is
// cost: the timer and the parent registration are made only when something waits on the
// context (its Done channel), and a hop bounded by an earlier deadline (WithHopDeadline)
// does without them.
func WithCallDeadline(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if cur, ok := ctx.Deadline(); ok && !cur.After(deadline) {
		return context.WithDeadline(ctx, deadline) // the parent ends first: no timer of its own
	}
	x := &callDeadlineCtx{Context: ctx, deadline: deadline}
	return x, x.stop
}

// Deadline implements context.Context.
func (x *callDeadlineCtx) Deadline() (time.Time, bool) { return x.deadline, true }

// Done implements context.Context: the first call derives the bounded context.
func (x *callDeadlineCtx) Done() <-chan struct{} { return x.bound().Done() }

// Err implements context.Context. Before anything waited on the context, it is nil unless
// the parent ended, the deadline passed or the CancelFunc ran — and then the bounded context
// is derived, so that Done and Err agree from then on.
func (x *callDeadlineCtx) Err() error {
	if r := x.real.Load(); r != nil {
		return r.ctx.Err()
	}
	x.mu.Lock()
	stopped := x.stopped
	x.mu.Unlock()
	if stopped || x.Context.Err() != nil || !time.Now().Before(x.deadline) {
		return x.bound().Err()
	}
	return nil
}

// Value implements context.Context. Once derived, the bounded context answers (it answers
// the context package's own lookups of the canceller; every other key reaches the parent).
func (x *callDeadlineCtx) Value(key any) any {
	if _, ok := key.(callDeadlineKey); ok {
		return x
	}
	if r := x.real.Load(); r != nil {
		return r.ctx.Value(key)
	}
	return x.Context.Value(key)
}

// String names the context for debugging, as the context package's own do.
func (x *callDeadlineCtx) String() string {
	return "gateway.WithCallDeadline(" + x.deadline.String() + ")"
}

// bound derives the bounded context once; after the CancelFunc it is derived cancelled.
func (x *callDeadlineCtx) bound() context.Context {
	if r := x.real.Load(); r != nil {
		return r.ctx
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if r := x.real.Load(); r != nil {
		return r.ctx
	}
	ctx, cancel := context.WithDeadline(x.Context, x.deadline)
	if x.stopped {
		cancel()
	}
	x.real.Store(&boundCtx{ctx: ctx, cancel: cancel})
	return ctx
}

// stop is the CancelFunc of WithCallDeadline.
func (x *callDeadlineCtx) stop() {
	x.mu.Lock()
	x.stopped = true
	r := x.real.Load()
	x.mu.Unlock()
	if r != nil {
		r.cancel()
	}
}

// WithHopDeadline returns ctx bounded by hop, the deadline of one hop of the call (the
// call's deadline less the hop's reserve), and its CancelFunc: what context.WithDeadline(ctx,
// hop) returns. When ctx ends by a call's deadline (WithCallDeadline) no later than hop's
// and nothing has waited on that context yet — so nothing derived a cancellation of its own
// between it and ctx — the hop's context is bounded from the call's parent instead: the
// same values, deadline and cancellation, without the call's context ever starting a timer.
func WithHopDeadline(ctx context.Context, hop time.Time) (context.Context, context.CancelFunc) {
	if x, ok := ctx.Value(callDeadlineKey{}).(*callDeadlineCtx); ok && x.real.Load() == nil && !hop.After(x.deadline) {
		// ctx's deadline is the call's only when no context in between bounded it or
		// detached it from its parent (context.WithoutCancel); otherwise the usual way.
		if dl, ok := ctx.Deadline(); ok && dl.Equal(x.deadline) {
			return context.WithDeadline(&hopParent{Context: ctx, ends: x.Context}, hop)
		}
	}
	return context.WithDeadline(ctx, hop)
}

// hopParent is the parent of a hop's context bounded from the call's parent: ctx's values,
// and the call's parent's deadline, Done and Err. The context package registers the hop's
// context with the cancellation the call's parent derives from (the request's), as it
// would have through the call's context.
type hopParent struct {
	context.Context                 // the hop's ctx: values
	ends            context.Context // the call's parent: when the hop must end besides its deadline
}

// Deadline implements context.Context.
func (p *hopParent) Deadline() (time.Time, bool) { return p.ends.Deadline() }

// Done implements context.Context.
func (p *hopParent) Done() <-chan struct{} { return p.ends.Done() }

// Err implements context.Context.
func (p *hopParent) Err() error { return p.ends.Err() }

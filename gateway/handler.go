package gateway

import (
	"context"
	"slices"
)

// Handler runs one call. On return, the result is non-nil if and only if err is nil. A
// Handler must respect ctx: when ctx is done it returns promptly with ctx's error.
type Handler func(ctx context.Context, call *Call) (*Result, error)

// Middleware wraps a Handler with one pipeline stage.
type Middleware func(next Handler) Handler

// Chain wraps h in mws so that mws[0] is the outermost stage: a call passes through mws in
// slice order on the way in. Nil middlewares are skipped, so a stage that is not configured
// can be passed as nil and is simply not in the chain.
func Chain(h Handler, mws ...Middleware) Handler {
	for _, mw := range slices.Backward(mws) {
		if mw != nil {
			h = mw(h)
		}
	}
	return h
}

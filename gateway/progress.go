package gateway

import "context"

// Progress is one progress report of a call in flight: what an MCP upstream sends as
// notifications/progress, and what a face relays to a caller able to receive it.
type Progress struct {
	// Progress is the progress so far; it increases with each report.
	Progress float64
	// Total is the total, when the backend knows it.
	Total *float64
	// Message describes the current step, when the backend sent one.
	Message string
}

type progressKey struct{}

// WithProgress returns a context under which a target that can report progress asks its
// backend for it and passes each report to fn, in order, from one goroutine at a time. A
// face sets it for the calls whose caller can receive progress; the MCP face sets it to
// relay progress under the MCP caller's own token.
//
// fn must not block: it runs on a backend connection's reader, so a slow fn would stall
// every call sharing that connection. A face that cannot deliver a report at once drops it
// (progress is advisory). A nil fn leaves ctx as it is.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, fn)
}

// ProgressFrom returns the progress sink ctx carries (WithProgress), or nil when the caller
// cannot receive progress; a target then does not ask its backend for any.
func ProgressFrom(ctx context.Context) func(Progress) {
	fn, _ := ctx.Value(progressKey{}).(func(Progress))
	return fn
}

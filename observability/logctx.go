package observability

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Log record keys the ContextHandler adds.
const (
	KeyTraceID = "trace_id"
	KeySpanID  = "span_id"
	KeyTaskID  = "task_id"
	KeyAgentID = "agent_id"
)

// LogIDs are the correlation ids a context gives the records logged with it.
type LogIDs struct {
	// TraceID is the call's trace id, used when the context holds no valid span.
	TraceID string
	// TaskID is the NEKTE task the work belongs to.
	TaskID string
	// AgentID identifies the NEKTE agent involved.
	AgentID string
}

type logIDsKey struct{}

// FromCall implements gateway.CallKey: a call's context gives its records the call's trace
// id beside the ids of the context it runs in.
func (logIDsKey) FromCall(c *gateway.Call, parent context.Context) (any, bool) {
	ids := LogIDsFrom(parent)
	if c.TraceID != "" {
		ids.TraceID = c.TraceID
	}
	return ids, true
}

// WithLogIDs returns ctx carrying ids; the non-empty ones replace those ctx had.
func WithLogIDs(ctx context.Context, ids LogIDs) context.Context {
	old := LogIDsFrom(ctx)
	if ids.TraceID == "" {
		ids.TraceID = old.TraceID
	}
	if ids.TaskID == "" {
		ids.TaskID = old.TaskID
	}
	if ids.AgentID == "" {
		ids.AgentID = old.AgentID
	}
	return context.WithValue(ctx, logIDsKey{}, ids)
}

// LogIDsFrom returns the ids ctx carries (WithLogIDs); zero when none.
func LogIDsFrom(ctx context.Context) LogIDs {
	if ctx == nil {
		return LogIDs{}
	}
	ids, _ := ctx.Value(logIDsKey{}).(LogIDs)
	return ids
}

// ContextHandler is a slog.Handler that adds to each record the correlation ids of the
// context it is logged with: trace_id and span_id of the span in the context (whether or
// not tracing exports it), else the trace_id of WithLogIDs; task_id and agent_id of
// WithLogIDs. An id the record already carries as a top-level attribute is not repeated.
// Records logged without a context (slog's non-Context methods) pass unchanged.
type ContextHandler struct {
	next slog.Handler
}

var _ slog.Handler = (*ContextHandler)(nil)

// NewContextHandler returns a ContextHandler passing records to next.
func NewContextHandler(next slog.Handler) *ContextHandler {
	return &ContextHandler{next: next}
}

// Enabled implements slog.Handler.
func (h *ContextHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle implements slog.Handler.
func (h *ContextHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx == nil {
		return h.next.Handle(ctx, r)
	}
	ids := LogIDsFrom(ctx)
	var spanID string
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		ids.TraceID, spanID = sc.TraceID().String(), sc.SpanID().String()
	}
	if ids == (LogIDs{}) && spanID == "" {
		return h.next.Handle(ctx, r)
	}
	has := presentKeys(r)
	r = r.Clone()
	add := func(key, value string, bit uint8) {
		if value != "" && has&bit == 0 {
			r.AddAttrs(slog.String(key, value))
		}
	}
	add(KeyTraceID, ids.TraceID, hasTrace)
	add(KeySpanID, spanID, hasSpan)
	add(KeyTaskID, ids.TaskID, hasTask)
	add(KeyAgentID, ids.AgentID, hasAgent)
	return h.next.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h *ContextHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &ContextHandler{next: h.next.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h *ContextHandler) WithGroup(name string) slog.Handler {
	return &ContextHandler{next: h.next.WithGroup(name)}
}

const (
	hasTrace uint8 = 1 << iota
	hasSpan
	hasTask
	hasAgent
)

// presentKeys reports which correlation keys r already carries.
func presentKeys(r slog.Record) uint8 {
	var has uint8
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case KeyTraceID:
			has |= hasTrace
		case KeySpanID:
			has |= hasSpan
		case KeyTaskID:
			has |= hasTask
		case KeyAgentID:
			has |= hasAgent
		}
		return true
	})
	return has
}

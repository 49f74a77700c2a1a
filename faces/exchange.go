package faces

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Exchange is what a face knows about one body before decoding it: who sent it, over what,
// under which deadline and trace, and how what the calls produce beyond their responses
// reaches the caller (Delivery).
type Exchange struct {
	// Principal is the caller, authenticated before the body was read.
	Principal gateway.Principal
	// Zone is the trust zone of the listener.
	Zone gateway.TrustZone
	// Protocol is the ingress protocol.
	Protocol gateway.Protocol
	// Deadline is the absolute deadline of the whole body (one request or a batch).
	Deadline time.Time
	// CallerDeadline says the caller named Deadline (X-Deadline-Ms, a gRPC deadline) rather
	// than getting deadline.default; a request's params.deadline_ms names its own.
	CallerDeadline bool
	// TraceID is the trace the body's responses name.
	TraceID string
	// Span is the exchange's ingress span, nil when tracing is off; TraceID is its trace id.
	Span trace.Span
	// Method is the method of a body holding a single request, set when it is decoded; ""
	// for a batch.
	Method string
	// Capability is the NEKTE capability the body's call runs (gateway.Call.Capability),
	// empty for methods called directly.
	Capability string
	// KeepStream hands a streamed result back unread in the outcome (the capability
	// invoker's caller reads and closes it) instead of delivering or collecting it.
	KeepStream bool
	// Delivery, when set, delivers what the calls produce beyond their responses; the
	// exchange looks for StreamDeliverer, EventDeliverer, ProgressDeliverer,
	// MetadataDeliverer and InputDeliverer on it. Without one, streamed results are
	// collected into arrays and progress is not asked for.
	Delivery any
}

// Outcome is the result of one request: exactly one of Res and Err is set, unless the
// request was a notification (Silent).
type Outcome struct {
	Res    *gateway.Result
	Err    *gateway.Error
	ID     jsonrpc.ID
	Silent bool
}

// StreamDeliverer delivers the streamed result of a single request (not a batch member)
// to the caller as it comes and returns the final outcome.
type StreamDeliverer interface {
	DeliverStream(ctx context.Context, id jsonrpc.ID, s gateway.Stream) Outcome
}

// EventDeliverer delivers a single request's stream of named events (gateway.Result.Events)
// as StreamDeliverer does; without one, such a stream goes to the StreamDeliverer, or is
// collected.
type EventDeliverer interface {
	DeliverEvents(ctx context.Context, id jsonrpc.ID, s gateway.Stream) Outcome
}

// ProgressDeliverer is asked for a sink for the progress reports of each request with an
// id (single says it is not a batch member); a nil sink means the face cannot deliver
// progress for that request. stop is called before the request's response is written; the
// sink drops reports from then on.
type ProgressDeliverer interface {
	Progress(id jsonrpc.ID, single bool) (sink func(gateway.Progress), stop func())
}

// MetadataDeliverer receives the surfaced backend metadata of a single request's
// successful result (the HTTP face turns it into response headers).
type MetadataDeliverer interface {
	Metadata(md map[string][]string)
}

// InputDeliverer is called for each request with an id before it runs: it may give the
// call its own context (cancellable by the caller) and an input stream; end is called when
// the request is answered.
type InputDeliverer interface {
	Begin(ctx context.Context, id jsonrpc.ID) (callCtx context.Context, input gateway.Stream, end func())
}

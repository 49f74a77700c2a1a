package observability

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

// The W3C trace context (traceparent, tracestate) is the only propagation format: it is
// extracted at ingress and injected on every hop. The propagator is used as a value, never
// installed as OpenTelemetry's global one.
var traceContext = propagation.TraceContext{}

// Names of the W3C trace context members, as headers, metadata keys and _meta members.
const (
	TraceparentKey = "traceparent"
	TracestateKey  = "tracestate"
)

// ExtractHTTP returns ctx carrying the remote span context of h's traceparent and
// tracestate headers; ctx itself when h has none or a malformed one.
func ExtractHTTP(ctx context.Context, h http.Header) context.Context {
	if h.Get(TraceparentKey) == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.HeaderCarrier(h))
}

// ExtractGRPC returns ctx carrying the remote span context of the traceparent and
// tracestate of ctx's incoming gRPC metadata; ctx itself when there is none.
func ExtractGRPC(ctx context.Context) context.Context {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok || len(md.Get(TraceparentKey)) == 0 {
		return ctx
	}
	return traceContext.Extract(ctx, MetadataCarrier(md))
}

// ExtractMeta returns ctx carrying the remote span context of an MCP-style _meta object's
// traceparent and tracestate members (strings); ctx itself when it has none.
func ExtractMeta(ctx context.Context, meta map[string]any) context.Context {
	tp, _ := meta[TraceparentKey].(string)
	if tp == "" {
		return ctx
	}
	ts, _ := meta[TracestateKey].(string)
	return extractPair(ctx, tp, ts)
}

// metaMember is the only thing ExtractParams reads of params.
var metaMember = []byte(`"_meta"`)

// ExtractParams returns ctx carrying the remote span context of params._meta.traceparent
// (and tracestate) of a request's raw JSON params; ctx itself when params are not an
// object with such a member. Params without "_meta" cost one scan.
func ExtractParams(ctx context.Context, params []byte) context.Context {
	if !bytes.Contains(params, metaMember) {
		return ctx
	}
	var p struct {
		Meta struct {
			Traceparent string `json:"traceparent"`
			Tracestate  string `json:"tracestate"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || p.Meta.Traceparent == "" {
		return ctx
	}
	return extractPair(ctx, p.Meta.Traceparent, p.Meta.Tracestate)
}

func extractPair(ctx context.Context, traceparent, tracestate string) context.Context {
	c := propagation.MapCarrier{TraceparentKey: traceparent}
	if tracestate != "" {
		c[TracestateKey] = tracestate
	}
	return traceContext.Extract(ctx, c)
}

// TraceID returns the trace id of ctx's span context as 32 lowercase hex digits, "" when
// ctx carries none.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// MetadataCarrier adapts gRPC metadata (lowercase keys) to a propagation carrier.
type MetadataCarrier metadata.MD

var _ propagation.TextMapCarrier = MetadataCarrier{}

// Get implements propagation.TextMapCarrier.
func (c MetadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Set implements propagation.TextMapCarrier.
func (c MetadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

// Keys implements propagation.TextMapCarrier.
func (c MetadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

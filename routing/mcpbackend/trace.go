package mcpbackend

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse-dev/gatehouse/routing/hoptrace"
)

// A call the gateway traces carries its span in its context (the gateway's tracing is
// on). Each request the bridge sends an upstream for it is then a client span under it,
// "mcp <method>" — "mcp tools/call <tool>" for a tool call — whose W3C trace context
// reaches the upstream in params._meta (traceparent, tracestate) over stdio and in the
// traceparent and tracestate headers over HTTP, so the server's span can be its child.
// The bridge's own requests (initialize, list refreshes, pings, subscriptions) run in
// contexts of their own and are not traced. The span is made with the provider of the
// call's span: this package never installs or reads a global one.

// tracer starts the client spans of requests.
var tracer = hoptrace.New("github.com/gatehouse-dev/gatehouse/routing/mcpbackend")

// startSpan starts the client span of req when ctx carries a traced call's span;
// otherwise it returns ctx and nil.
func (w *wire) startSpan(ctx context.Context, req transport.JSONRPCRequest) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, nil // no attributes to build
	}
	name := "mcp " + req.Method
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", req.Method),
		attribute.String("gatehouse.backend", "mcp/"+w.s.up.cfg.Name),
		attribute.String("network.transport", "tcp"),
	}
	if w.s.up.cfg.Stdio != nil {
		attrs[2] = attribute.String("network.transport", "pipe")
	}
	if req.Method == string(mcp.MethodToolsCall) {
		if tool := toolName(req.Params); tool != "" {
			name += " " + tool
			attrs = append(attrs, attribute.String("gen_ai.tool.name", tool))
		}
	}
	return tracer.Start(ctx, name, attrs...)
}

// endSpan records how a request ended on its span — a transport failure, an error
// response — and ends it; nil-safe.
func endSpan(span trace.Span, resp *transport.JSONRPCResponse, err error) {
	if span == nil {
		return
	}
	switch {
	case err != nil:
		span.SetStatus(codes.Error, err.Error())
	case resp != nil && resp.Error != nil:
		span.SetAttributes(attribute.Int("rpc.jsonrpc.error_code", resp.Error.Code))
		span.SetStatus(codes.Error, resp.Error.Message)
	}
	span.End()
}

// toolName is the tool a tools/call request names, in the params shapes mcp-go hands a
// transport (withHopMeta); "" when it names none.
func toolName(params any) string {
	switch p := params.(type) {
	case mcp.CallToolParams:
		return p.Name
	case map[string]json.RawMessage:
		var name string
		_ = json.Unmarshal(p["name"], &name)
		return name
	}
	return ""
}

// traceContext returns the W3C trace context of ctx's span (traceparent, tracestate), empty
// when ctx carries none.
func traceContext(ctx context.Context) (traceparent, tracestate string) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "", ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c[MetaKeyTraceparent], c[MetaKeyTracestate]
}

// traceHeaders are the traceparent and tracestate headers of ctx's span, nil when ctx
// carries none.
func traceHeaders(ctx context.Context) map[string]string {
	tp, ts := traceContext(ctx)
	if tp == "" {
		return nil
	}
	h := map[string]string{"traceparent": tp}
	if ts != "" {
		h["tracestate"] = ts
	}
	return h
}

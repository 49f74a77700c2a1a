package grpcface

import (
	"context"
	"strings"

	"google.golang.org/grpc"

	"github.com/gatehouse-dev/gatehouse/observability"
)

// traceUnary is the internal listener's unary interceptor: with tracing on, each RPC of
// the gateway's services is a server span continuing the trace context of its metadata,
// and the calls it runs are its children.
func (f *Face) traceUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !tracedService(info.FullMethod) {
		return handler(ctx, req)
	}
	tr := f.tracer()
	if tr == nil {
		return handler(ctx, req)
	}
	ctx, span := tr.StartRPC(ctx, info.FullMethod)
	resp, err := handler(ctx, req)
	observability.EndRPC(span, err)
	return resp, err
}

// traceStream is traceUnary for streaming RPCs.
func (f *Face) traceStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !tracedService(info.FullMethod) {
		return handler(srv, ss)
	}
	tr := f.tracer()
	if tr == nil {
		return handler(srv, ss)
	}
	ctx, span := tr.StartRPC(ss.Context(), info.FullMethod)
	err := handler(srv, tracedStream{ServerStream: ss, ctx: ctx})
	observability.EndRPC(span, err)
	return err
}

// tracer returns the call tracer of the configuration in force, nil when it does not
// trace. The RPC's calls acquire the configuration themselves.
func (f *Face) tracer() *observability.CallTracer {
	rt := f.gw.Acquire()
	defer rt.Release()
	return rt.Pipeline().Tracer
}

// tracedStream is a server stream whose context carries its RPC's span.
type tracedStream struct {
	grpc.ServerStream
	ctx context.Context
}

// Context returns the stream's context with its span.
func (t tracedStream) Context() context.Context { return t.ctx }

// tracedService reports whether the RPC fullMethod is one of the gateway's own services
// (health checks and reflection are not traced).
func tracedService(fullMethod string) bool {
	return !strings.HasPrefix(fullMethod, "/grpc.")
}

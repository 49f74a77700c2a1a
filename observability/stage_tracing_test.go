package observability_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// tracedCall runs h for one call under a recorded span, and returns the spans ended.
func tracedCall(t *testing.T, h gateway.Handler, call *gateway.Call) (*tracetest.SpanRecorder, error) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(context.Background(), "call")
	_, err := h(ctx, call)
	span.End()
	return rec, err
}

func pass(next gateway.Handler) gateway.Handler { return next }

func refuse(err error) gateway.Middleware {
	return func(gateway.Handler) gateway.Handler {
		return func(context.Context, *gateway.Call) (*gateway.Result, error) { return nil, err }
	}
}

func okHandler(context.Context, *gateway.Call) (*gateway.Result, error) {
	return gateway.NewResult(nil), nil
}

// TestStageSpan: a stage that hands the call on is a span that ended before the call ran
// on; one that refuses is a failed span with the code.
func TestStageSpan(t *testing.T) {
	var below bool
	h := gateway.Chain(func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
		below = true
		return okHandler(ctx, call)
	}, observability.StageSpan(true, "policy", pass))
	rec, err := tracedCall(t, h, &gateway.Call{Method: "m"})
	if err != nil || !below {
		t.Fatalf("err %v, ran below %v", err, below)
	}
	spans := rec.Ended()
	if len(spans) != 2 || spans[0].Name() != "policy" || spans[0].Parent().SpanID() != spans[1].SpanContext().SpanID() {
		t.Fatalf("spans %v: want policy, a child of the call's", spans)
	}

	h = gateway.Chain(okHandler, observability.StageSpan(true, "policy", refuse(gateway.NewError(schemas.CodeAuthorization))))
	rec, _ = tracedCall(t, h, &gateway.Call{Method: "m"})
	if s := rec.Ended()[0]; s.Name() != "policy" || s.Status().Code.String() != "Error" {
		t.Fatalf("refused: span %s status %v", s.Name(), s.Status())
	}
	if observability.StageSpan(false, "policy", pass) == nil || observability.StageSpan(true, "policy", nil) != nil {
		t.Error("StageSpan must leave a stage as it is when off, and an absent stage absent")
	}
}

// namedTarget is a target that is its own backend.
type namedTarget struct{ name string }

func (n namedTarget) Name() string { return n.name }
func (namedTarget) Invoke(context.Context, *gateway.Call) (*gateway.Result, error) {
	return gateway.NewResult(nil), nil
}

// TestRetryAndBreakerEvents: the second attempt is an event with its number, the previous
// code and the backend; a breaker refusal is an event with the backend and state, a call
// the breaker lets through none.
func TestRetryAndBreakerEvents(t *testing.T) {
	twice := func(next gateway.Handler) gateway.Handler {
		return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			_, _ = next(ctx, call)
			return next(ctx, call)
		}
	}
	attempt := 0
	h := gateway.Chain(func(context.Context, *gateway.Call) (*gateway.Result, error) {
		if attempt++; attempt == 1 {
			return nil, gateway.NewError(schemas.CodeUnavailable)
		}
		return gateway.NewResult(nil), nil
	}, observability.RetryEvents(true, twice))
	rec, _ := tracedCall(t, h, &gateway.Call{Method: "m", Target: namedTarget{"calc"}})
	ev := rec.Ended()[0].Events()
	if len(ev) != 1 || ev[0].Name != observability.EventRetry || len(ev[0].Attributes) != 3 ||
		ev[0].Attributes[0].Value.AsInt64() != 2 || ev[0].Attributes[1].Value.AsInt64() != int64(schemas.CodeUnavailable) ||
		ev[0].Attributes[2].Value.AsString() != "calc" {
		t.Fatalf("retry events %+v", ev)
	}

	open := gateway.NewError(schemas.CodeCircuitOpen).With("state", "open")
	rec, _ = tracedCall(t, gateway.Chain(okHandler, observability.BreakerEvents(true, refuse(open))), &gateway.Call{Method: "m", Target: namedTarget{"calc"}})
	ev = rec.Ended()[0].Events()
	if len(ev) != 1 || ev[0].Name != observability.EventBreakerRejected || ev[0].Attributes[0].Value.AsString() != "calc" ||
		ev[0].Attributes[1].Value.AsString() != "open" {
		t.Fatalf("breaker events %+v", ev)
	}
	failing := func(context.Context, *gateway.Call) (*gateway.Result, error) { return nil, open }
	rec, _ = tracedCall(t, gateway.Chain(failing, observability.BreakerEvents(true, pass)), &gateway.Call{Method: "m"})
	if ev := rec.Ended()[0].Events(); len(ev) != 0 {
		t.Fatalf("a failure below the breaker is no refusal: %+v", ev)
	}
}

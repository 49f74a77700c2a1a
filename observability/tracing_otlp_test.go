package observability

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// captureClient is an otlptrace.Client that keeps what it is asked to upload.
type captureClient struct {
	batches [][]*tracepb.ResourceSpans
	err     error
	stopped bool
}

func (c *captureClient) Start(context.Context) error { return nil }
func (c *captureClient) Stop(context.Context) error  { c.stopped = true; return nil }
func (c *captureClient) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	clone := make([]*tracepb.ResourceSpans, len(rs))
	for i, r := range rs {
		clone[i] = proto.Clone(r).(*tracepb.ResourceSpans) //nolint:forcetypeassert // a clone of a ResourceSpans
	}
	c.batches = append(c.batches, clone)
	return c.err
}

// otlpTestSpans are spans of every shape: two resources, three scopes, every attribute
// type, events, links, statuses, remote and local parents, dropped counts.
func otlpTestSpans(tag string) []sdktrace.ReadOnlySpan {
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	ts, _ := trace.ParseTraceState("k=v")
	sc := func(sid byte, remote bool) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{sid, 1}, TraceFlags: trace.FlagsSampled,
			TraceState: ts, Remote: remote})
	}
	gateway := resource.NewSchemaless(attribute.String("service.name", "gatehouse"), attribute.String("service.version", tag))
	other := resource.NewWithAttributes("https://schema.test/1", attribute.String("service.name", "other"))
	start := time.Unix(1_700_000_000, 123)
	stubs := tracetest.SpanStubs{
		{Name: "http subtract " + tag, SpanContext: sc(1, false), Parent: sc(9, true), SpanKind: trace.SpanKindServer,
			StartTime: start, EndTime: start.Add(time.Millisecond), Resource: gateway,
			InstrumentationScope: instrumentation.Scope{Name: InstrumentationName, Version: "dev"},
			Attributes: []attribute.KeyValue{attribute.String("rpc.system", "jsonrpc"), attribute.Int("rpc.jsonrpc.error_code", -32603),
				attribute.Bool("gatehouse.caller.anonymous", true), attribute.Float64("ratio", 0.5), attribute.String("tag", tag)},
			Events: []sdktrace.Event{{Name: "gatehouse.retry", Time: start.Add(time.Microsecond),
				Attributes: []attribute.KeyValue{attribute.Int("gatehouse.retry.attempt", 2)}, DroppedAttributeCount: 1}},
			Status: sdktrace.Status{Code: codes.Error, Description: "Internal error"}, DroppedAttributes: 3, DroppedEvents: 4},
		{Name: "grpc calculator.v1/Subtract", SpanContext: sc(2, false), Parent: sc(1, false), SpanKind: trace.SpanKindClient,
			StartTime: start, EndTime: start.Add(time.Microsecond), Resource: gateway,
			InstrumentationScope: instrumentation.Scope{Name: "github.com/gatehouse-dev/gatehouse/routing/grpcbackend"},
			Attributes: []attribute.KeyValue{attribute.StringSlice("ss", []string{"a", tag}), attribute.Int64Slice("is", []int64{1, 2}),
				attribute.BoolSlice("bs", []bool{true}), attribute.Float64Slice("fs", []float64{1.5}), attribute.ByteSlice("bytes", []byte("xy")),
				attribute.Map("map", attribute.String("in", "side"), attribute.Int("n", 1)),
				attribute.Slice("slice", attribute.StringValue("s"), attribute.IntValue(3))},
			Links:  []sdktrace.Link{{SpanContext: sc(7, true), Attributes: []attribute.KeyValue{attribute.String("l", "k")}, DroppedAttributeCount: 2}},
			Status: sdktrace.Status{Code: codes.Ok}, DroppedLinks: 5},
		{Name: "policy", SpanContext: sc(3, false), Parent: sc(1, false), SpanKind: trace.SpanKindInternal,
			StartTime: start, EndTime: start, Resource: gateway,
			InstrumentationScope: instrumentation.Scope{Name: InstrumentationName, Version: "dev"}},
		{Name: "Subtract", SpanContext: sc(4, false), SpanKind: trace.SpanKindUnspecified, StartTime: start, EndTime: start,
			Resource: other, InstrumentationScope: instrumentation.Scope{Name: "backend", SchemaURL: "https://schema.test/2",
				Attributes: attribute.NewSet(attribute.String("scope", "attr"))}},
		{Name: "no scope", SpanContext: sc(5, false), SpanKind: trace.SpanKindConsumer, Resource: other},
	}
	return stubs.Snapshots()
}

// sortedBatch orders a batch's resources and scopes (OpenTelemetry's exporter leaves them
// in map order), for comparison.
func sortedBatch(rs []*tracepb.ResourceSpans) []*tracepb.ResourceSpans {
	slices.SortFunc(rs, func(a, b *tracepb.ResourceSpans) int {
		return strings.Compare(prototext.Format(a.GetResource()), prototext.Format(b.GetResource()))
	})
	for _, r := range rs {
		slices.SortFunc(r.GetScopeSpans(), func(a, b *tracepb.ScopeSpans) int {
			return strings.Compare(a.GetScope().GetName(), b.GetScope().GetName())
		})
	}
	return rs
}

// TestSpanConverterMatchesOpenTelemetry: the converter's messages are those of
// OpenTelemetry's own OTLP exporter for spans of every shape, the second batch (filled
// from the slabs of the first) as the first.
func TestSpanConverterMatchesOpenTelemetry(t *testing.T) {
	official := &captureClient{}
	ours := &captureClient{}
	exp, err := newClientExporter(context.Background(), ours)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"first", "second", "third"} {
		spans := otlpTestSpans(tag)
		if err := otlptrace.NewUnstarted(official).ExportSpans(context.Background(), spans); err != nil {
			t.Fatal(err)
		}
		if err := exp.ExportSpans(context.Background(), spans); err != nil {
			t.Fatal(err)
		}
	}
	if len(ours.batches) != len(official.batches) {
		t.Fatalf("%d batches, want %d", len(ours.batches), len(official.batches))
	}
	for i := range official.batches {
		want, got := sortedBatch(official.batches[i]), sortedBatch(ours.batches[i])
		if len(got) != len(want) {
			t.Fatalf("batch %d: %d resources, want %d", i, len(got), len(want))
		}
		for j := range want {
			if !proto.Equal(got[j], want[j]) {
				t.Errorf("batch %d, resource %d:\n got %s\nwant %s", i, j, prototext.Format(got[j]), prototext.Format(want[j]))
			}
		}
	}
}

// TestSpanConverterGrows: a batch larger than the slabs hold, after a small one, converts
// every span, and the messages handed out before the slabs grew keep their values.
func TestSpanConverterGrows(t *testing.T) {
	var c spanConverter
	small := otlpTestSpans("small")[:1]
	if got := c.convert(small); len(got) != 1 {
		t.Fatalf("%d resources", len(got))
	}
	var big []sdktrace.ReadOnlySpan
	for range 50 {
		big = append(big, otlpTestSpans("big")...)
	}
	batch := c.convert(big)
	n := 0
	for _, rs := range batch {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				n++
				if s.GetName() == "" || len(s.GetSpanId()) != 8 {
					t.Fatalf("span %d: %s", n, prototext.Format(s))
				}
			}
		}
	}
	if n != len(big) {
		t.Fatalf("%d spans converted, want %d", n, len(big))
	}
	if first := batch[0].GetScopeSpans()[0].GetSpans()[0]; first.GetAttributes()[4].GetValue().GetStringValue() != "big" {
		t.Fatalf("the first span's attributes changed: %s", prototext.Format(first))
	}
	if c.convert(nil) != nil {
		t.Fatal("an empty batch made messages")
	}
}

// TestOTLPExporter: errors of the client are the export's, and once shut down the exporter
// stops its client and exports nothing.
func TestOTLPExporter(t *testing.T) {
	client := &captureClient{err: errors.New("collector down")}
	exp, err := newClientExporter(context.Background(), client)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), otlpTestSpans("x")); err == nil || !strings.Contains(err.Error(), "collector down") {
		t.Fatalf("export error %v", err)
	}
	if err := exp.ExportSpans(context.Background(), nil); err != nil {
		t.Fatalf("an empty export: %v", err)
	}
	if err := exp.Shutdown(context.Background()); err != nil || !client.stopped {
		t.Fatalf("shutdown: %v, stopped %v", err, client.stopped)
	}
	client.err = nil
	if err := exp.ExportSpans(context.Background(), otlpTestSpans("y")); err != nil || len(client.batches) != 1 {
		t.Fatalf("after shutdown: %v, %d batches uploaded", err, len(client.batches))
	}
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
}

package observability

import (
	"context"
	"fmt"
	"math"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// otlpExporter is OpenTelemetry's OTLP span exporter (otlptrace.Exporter: the same
// clients, over gRPC or HTTP, with their retries, TLS and headers) with its conversion of
// spans to protobuf messages done here. The SDK's conversion allocates three messages per
// attribute of every span of every batch, which at full sampling is most of what tracing
// costs the gateway; this one fills the messages of the batch before, kept for the next
// (spanConverter). The protobuf a collector receives is the same.
type otlpExporter struct {
	client otlptrace.Client

	mu      sync.Mutex // one export at a time: the messages are reused
	conv    spanConverter
	stopped bool
}

// newClientExporter starts client and returns the exporter sending through it. Starting
// dials nothing: the gRPC client connects on its first export.
func newClientExporter(ctx context.Context, client otlptrace.Client) (sdktrace.SpanExporter, error) {
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	return &otlpExporter{client: client}, nil
}

// ExportSpans implements sdktrace.SpanExporter.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil
	}
	batch := e.conv.convert(spans)
	if len(batch) == 0 {
		return nil
	}
	if err := e.client.UploadTraces(ctx, batch); err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

// Shutdown implements sdktrace.SpanExporter: it stops the client; later exports do
// nothing.
func (e *otlpExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil
	}
	e.stopped = true
	return e.client.Stop(ctx)
}

// spanConverter turns batches of spans into OTLP messages as OpenTelemetry's exporter does
// (one ResourceSpans per resource, one ScopeSpans per instrumentation scope in it), taking
// the span, attribute and value messages of string, integer, boolean and floating-point
// attributes from slabs it keeps from one batch to the next: in a steady flow of spans a
// batch allocates nothing but what rarer values (slices, maps, bytes) and events need.
// The messages of a batch are valid until the next convert.
type spanConverter struct {
	spans    slab[tracepb.Span]
	statuses slab[tracepb.Status]
	kvs      slab[commonpb.KeyValue]
	values   slab[commonpb.AnyValue]
	strs     slab[commonpb.AnyValue_StringValue]
	ints     slab[commonpb.AnyValue_IntValue]
	bools    slab[commonpb.AnyValue_BoolValue]
	doubles  slab[commonpb.AnyValue_DoubleValue]
	ptrs     []*commonpb.KeyValue // the attribute lists of the spans, one after another

	resources map[attribute.Distinct]*tracepb.ResourceSpans
	scopes    map[scopeKey]*tracepb.ScopeSpans
}

type scopeKey struct {
	resource attribute.Distinct
	scope    instrumentation.Scope
}

// slab hands out the elements of a slice it keeps, zeroed, growing it (into a new array,
// so that what was handed out stays valid) when a batch needs more.
type slab[T any] struct {
	items []T
	next  int
}

// reset makes every element available again, for a batch needing at least n.
func (s *slab[T]) reset(n int) {
	if n > len(s.items) {
		s.items = make([]T, max(n, 2*len(s.items)))
	}
	s.next = 0
}

// get returns a zeroed element.
func (s *slab[T]) get() *T {
	if s.next == len(s.items) { // more than reset was told: a fresh array, the old one stays valid
		s.items = make([]T, max(16, 2*len(s.items)))
		s.next = 0
	}
	p := &s.items[s.next]
	s.next++
	var zero T
	*p = zero
	return p
}

// convert returns the OTLP messages of spans.
func (c *spanConverter) convert(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	if len(spans) == 0 {
		return nil
	}
	attrs := 0
	for _, s := range spans {
		if s != nil {
			attrs += len(s.Attributes())
		}
	}
	c.spans.reset(len(spans))
	c.statuses.reset(len(spans))
	c.kvs.reset(attrs)
	c.values.reset(attrs)
	c.strs.reset(attrs)
	c.ints.reset(attrs)
	c.bools.reset(attrs)
	c.doubles.reset(attrs)
	if cap(c.ptrs) < attrs {
		c.ptrs = make([]*commonpb.KeyValue, 0, attrs)
	}
	c.ptrs = c.ptrs[:0]
	if c.resources == nil {
		c.resources = make(map[attribute.Distinct]*tracepb.ResourceSpans)
		c.scopes = make(map[scopeKey]*tracepb.ScopeSpans)
	}
	clear(c.resources)
	clear(c.scopes)
	var out []*tracepb.ResourceSpans
	for _, s := range spans {
		if s == nil {
			continue
		}
		res := s.Resource()
		key := scopeKey{resource: res.Equivalent(), scope: s.InstrumentationScope()}
		ss, ok := c.scopes[key]
		if !ok {
			ss = &tracepb.ScopeSpans{Scope: scopeMessage(key.scope), SchemaUrl: key.scope.SchemaURL}
			c.scopes[key] = ss
			rs, known := c.resources[key.resource]
			if !known {
				rs = &tracepb.ResourceSpans{SchemaUrl: res.SchemaURL()}
				if res != nil {
					rs.Resource = &resourcepb.Resource{Attributes: iterValues(res.Iter())}
				}
				c.resources[key.resource] = rs
				out = append(out, rs)
			}
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, c.span(s))
	}
	return out
}

// scopeMessage is the message of an instrumentation scope, nil for the zero scope.
func scopeMessage(s instrumentation.Scope) *commonpb.InstrumentationScope {
	if s == (instrumentation.Scope{}) {
		return nil
	}
	return &commonpb.InstrumentationScope{Name: s.Name, Version: s.Version, Attributes: iterValues(s.Attributes.Iter())}
}

// span is the message of s.
func (c *spanConverter) span(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	m := c.spans.get()
	m.TraceId = tid[:]
	m.SpanId = sid[:]
	m.TraceState = sc.TraceState().String()
	m.Name = s.Name()
	m.Kind = spanKind(s.SpanKind())
	m.StartTimeUnixNano = unixNano(s.StartTime().UnixNano())
	m.EndTimeUnixNano = unixNano(s.EndTime().UnixNano())
	m.Attributes = c.keyValues(s.Attributes())
	m.DroppedAttributesCount = clampCount(s.DroppedAttributes())
	m.Events = spanEvents(s.Events())
	m.DroppedEventsCount = clampCount(s.DroppedEvents())
	m.Links = spanLinks(s.Links())
	m.DroppedLinksCount = clampCount(s.DroppedLinks())
	st := s.Status()
	m.Status = c.statuses.get()
	m.Status.Code = statusCode(st.Code)
	m.Status.Message = st.Description
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		m.ParentSpanId = psid[:]
	}
	m.Flags = spanFlags(sc.TraceFlags(), parent)
	return m
}

// keyValues returns the messages of attrs, from the slabs.
func (c *spanConverter) keyValues(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(attrs) == 0 {
		return nil
	}
	start := len(c.ptrs)
	for _, kv := range attrs {
		m := c.kvs.get()
		m.Key = string(kv.Key)
		m.Value = c.value(kv.Value)
		c.ptrs = append(c.ptrs, m)
	}
	return c.ptrs[start:len(c.ptrs):len(c.ptrs)]
}

// value returns the message of v: from the slabs for a scalar, built for anything else.
func (c *spanConverter) value(v attribute.Value) *commonpb.AnyValue {
	m := c.values.get()
	switch v.Type() {
	case attribute.STRING:
		w := c.strs.get()
		w.StringValue = v.AsString()
		m.Value = w
	case attribute.INT64:
		w := c.ints.get()
		w.IntValue = v.AsInt64()
		m.Value = w
	case attribute.BOOL:
		w := c.bools.get()
		w.BoolValue = v.AsBool()
		m.Value = w
	case attribute.FLOAT64:
		w := c.doubles.get()
		w.DoubleValue = v.AsFloat64()
		m.Value = w
	default:
		m.Value = anyValue(v).Value
	}
	return m
}

// iterValues returns the messages of the attributes of iter (a resource's, a scope's).
func iterValues(iter attribute.Iterator) []*commonpb.KeyValue {
	if iter.Len() == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, iter.Len())
	for iter.Next() {
		kv := iter.Attribute()
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

// keyValues returns new messages of attrs.
func keyValues(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, len(attrs))
	for i, kv := range attrs {
		out[i] = &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)}
	}
	return out
}

// anyValue returns a new message of v, of any type.
func anyValue(v attribute.Value) *commonpb.AnyValue {
	m := new(commonpb.AnyValue)
	switch v.Type() {
	case attribute.BOOL:
		m.Value = &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}
	case attribute.INT64:
		m.Value = &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}
	case attribute.FLOAT64:
		m.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}
	case attribute.STRING:
		m.Value = &commonpb.AnyValue_StringValue{StringValue: v.AsString()}
	case attribute.BYTESLICE:
		m.Value = &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}
	case attribute.BOOLSLICE:
		m.Value = arrayOf(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		m.Value = arrayOf(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		m.Value = arrayOf(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		m.Value = arrayOf(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		m.Value = arrayOf(v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		m.Value = &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: keyValues(v.AsMap())}}
	case attribute.EMPTY:
	default:
		m.Value = &commonpb.AnyValue_StringValue{StringValue: "INVALID"}
	}
	return m
}

// arrayOf is the array value of elems, each made an attribute value by conv.
func arrayOf[E any](elems []E, conv func(E) attribute.Value) *commonpb.AnyValue_ArrayValue {
	values := make([]*commonpb.AnyValue, len(elems))
	for i, e := range elems {
		values[i] = anyValue(conv(e))
	}
	return &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: values}}
}

// spanEvents returns the messages of a span's events (the retries and breaker refusals of
// a call, rare beside its attributes).
func spanEvents(events []sdktrace.Event) []*tracepb.Span_Event {
	if len(events) == 0 {
		return nil
	}
	out := make([]*tracepb.Span_Event, len(events))
	for i, e := range events {
		out[i] = &tracepb.Span_Event{Name: e.Name, TimeUnixNano: unixNano(e.Time.UnixNano()),
			Attributes: keyValues(e.Attributes), DroppedAttributesCount: clampCount(e.DroppedAttributeCount)}
	}
	return out
}

// spanLinks returns the messages of a span's links (without their trace state, as
// OpenTelemetry's exporter).
func spanLinks(links []sdktrace.Link) []*tracepb.Span_Link {
	if len(links) == 0 {
		return nil
	}
	out := make([]*tracepb.Span_Link, len(links))
	for i, l := range links {
		tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		out[i] = &tracepb.Span_Link{TraceId: tid[:], SpanId: sid[:],
			Attributes: keyValues(l.Attributes), DroppedAttributesCount: clampCount(l.DroppedAttributeCount),
			Flags: spanFlags(l.SpanContext.TraceFlags(), l.SpanContext)}
	}
	return out
}

// spanFlags are the W3C trace flags in the low byte, with the bits saying whether the
// parent (or a link's context) is remote.
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	flags := uint32(tf) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if parent.IsRemote() {
		flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return flags
}

func spanKind(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return tracepb.Span_SPAN_KIND_INTERNAL
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	default:
		return tracepb.Span_SPAN_KIND_UNSPECIFIED
	}
}

func statusCode(c codes.Code) tracepb.Status_StatusCode {
	switch c {
	case codes.Ok:
		return tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		return tracepb.Status_STATUS_CODE_ERROR
	default:
		return tracepb.Status_STATUS_CODE_UNSET
	}
}

// unixNano is a time in Unix nanoseconds, 0 before 1970.
func unixNano(n int64) uint64 { return uint64(max(0, n)) }

// clampCount is a dropped count as a message's uint32.
func clampCount(n int) uint32 {
	return uint32(min(max(0, int64(n)), math.MaxUint32))
}

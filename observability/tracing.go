package observability

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ServiceName is the service.name of every span the gateway exports.
const ServiceName = "gatehouse"

// InstrumentationName is the instrumentation scope of the gateway's own spans.
const InstrumentationName = "github.com/gatehouse-dev/gatehouse"

// TracingOptions are the parts of tracing that do not come from the configuration file.
type TracingOptions struct {
	// Version is the service.version of the resource and the instrumentation version.
	Version string
	// Logger receives export failures (at most one line per failureLogEvery); nil discards.
	Logger *slog.Logger
	// Exporter, when set, receives the spans instead of the OTLP exporter the section
	// describes (tests, embedders). The caller owns it: Shutdown does not shut it down.
	Exporter sdktrace.SpanExporter
}

// Tracing is one tracer provider: the section's exporter behind a batch span processor
// with a bounded queue that drops when full, the section's sampler, and the gateway's
// resource. It is built per process and never installed as OpenTelemetry's global
// provider: spans are started with Tracer, and the spans of a call find their provider
// through the span in their context.
type Tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	exporter *loggedExporter
	cfg      TracingConfig
	shutdown sync.Once
	err      error
}

// OpenTracing builds the tracer provider of cfg. Nothing is dialled here: an unreachable
// collector only shows as failed exports, logged, while spans beyond the queue are dropped.
func OpenTracing(cfg TracingConfig, opts TracingOptions) (*Tracing, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	exp := opts.Exporter
	if exp == nil {
		var err error
		if exp, err = newOTLPExporter(cfg); err != nil {
			return nil, fmt.Errorf("tracing: %w", err)
		}
	} else {
		exp = unowned{exp}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	logged := &loggedExporter{SpanExporter: exp, log: log, endpoint: cfg.Endpoint}
	// WithBlocking is deliberately absent: a full queue drops the span (the SDK's default)
	// instead of holding up the call that ended it.
	proc := sdktrace.NewBatchSpanProcessor(logged,
		sdktrace.WithMaxQueueSize(cfg.MaxQueue),
		sdktrace.WithMaxExportBatchSize(cfg.BatchSize),
		sdktrace.WithBatchTimeout(cfg.ExportInterval),
		sdktrace.WithExportTimeout(cfg.Timeout))
	if cfg.AlwaysSampleErrors {
		proc = errorTail{next: proc}
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithIDGenerator(idGenerator{}),
		sdktrace.WithSampler(newSampler(cfg)),
		sdktrace.WithSpanProcessor(proc),
		sdktrace.WithResource(resource.NewSchemaless(
			attribute.String("service.name", ServiceName),
			attribute.String("service.version", version),
		)))
	return &Tracing{
		provider: tp,
		tracer:   tp.Tracer(InstrumentationName, trace.WithInstrumentationVersion(version)),
		exporter: logged,
		cfg:      cfg,
	}, nil
}

// newOTLPExporter returns the OTLP exporter of cfg, over gRPC or HTTP: OpenTelemetry's
// client of the protocol behind otlpExporter.
func newOTLPExporter(cfg TracingConfig) (sdktrace.SpanExporter, error) {
	isURL := strings.Contains(cfg.Endpoint, "://")
	ctx := context.Background() // neither exporter dials in New
	if cfg.Protocol == protocolHTTP {
		o := []otlptracehttp.Option{otlptracehttp.WithTimeout(cfg.Timeout)}
		if isURL {
			o = append(o, otlptracehttp.WithEndpointURL(cfg.Endpoint))
		} else {
			o = append(o, otlptracehttp.WithEndpoint(cfg.Endpoint))
		}
		if cfg.Insecure {
			o = append(o, otlptracehttp.WithInsecure())
		}
		if len(cfg.Headers) > 0 {
			o = append(o, otlptracehttp.WithHeaders(cfg.Headers))
		}
		return newClientExporter(ctx, otlptracehttp.NewClient(o...))
	}
	o := []otlptracegrpc.Option{otlptracegrpc.WithTimeout(cfg.Timeout)}
	if isURL {
		o = append(o, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
	} else {
		o = append(o, otlptracegrpc.WithEndpoint(cfg.Endpoint))
	}
	if cfg.Insecure {
		o = append(o, otlptracegrpc.WithInsecure())
	}
	if len(cfg.Headers) > 0 {
		o = append(o, otlptracegrpc.WithHeaders(cfg.Headers))
	}
	return newClientExporter(ctx, otlptracegrpc.NewClient(o...))
}

// Tracer returns the gateway's tracer.
func (t *Tracing) Tracer() trace.Tracer { return t.tracer }

// Config returns the section the provider was built from, with its defaults.
func (t *Tracing) Config() TracingConfig { return t.cfg }

// ForceFlush exports what is queued, waiting at most until ctx ends.
func (t *Tracing) ForceFlush(ctx context.Context) error { return t.provider.ForceFlush(ctx) }

// Shutdown exports what is queued, within the section's timeout, and stops the provider;
// spans ended afterwards are dropped. Later calls wait for the first and return its error.
func (t *Tracing) Shutdown() error {
	t.shutdown.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), t.cfg.Timeout)
		defer cancel()
		t.err = t.provider.Shutdown(ctx)
	})
	return t.err
}

// Failures returns how many exports have failed so far.
func (t *Tracing) Failures() int64 { return t.exporter.failures.Load() }

// newSampler is parent-based ratio sampling: a new trace is sampled with the section's
// ratio, a continued one as its parent was. With always_sample_errors, what that leaves
// out is recorded anyway (errorTail decides on export when the span ends).
func newSampler(cfg TracingConfig) sdktrace.Sampler {
	s := sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.Ratio()))
	if cfg.AlwaysSampleErrors {
		return recordAll{s}
	}
	return s
}

// recordAll turns a sampler's Drop into RecordOnly: the span is recorded but not sampled
// (its trace flags and what is propagated downstream keep the sampler's decision).
type recordAll struct{ sdktrace.Sampler }

// ShouldSample implements sdktrace.Sampler.
func (r recordAll) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	res := r.Sampler.ShouldSample(p)
	if res.Decision == sdktrace.Drop {
		res.Decision = sdktrace.RecordOnly
	}
	return res
}

// Description implements sdktrace.Sampler.
func (r recordAll) Description() string { return "RecordErrors{" + r.Sampler.Description() + "}" }

// errorTail passes sampled spans to next as they are, and of the spans recorded but not
// sampled only those that ended with an error status, presented as sampled so the batch
// processor exports them.
type errorTail struct{ next sdktrace.SpanProcessor }

// OnStart implements sdktrace.SpanProcessor.
func (p errorTail) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) { p.next.OnStart(ctx, s) }

// OnEnd implements sdktrace.SpanProcessor.
func (p errorTail) OnEnd(s sdktrace.ReadOnlySpan) {
	switch {
	case s.SpanContext().IsSampled():
		p.next.OnEnd(s)
	case s.Status().Code == codes.Error:
		p.next.OnEnd(sampledSpan{s})
	}
}

// Shutdown implements sdktrace.SpanProcessor.
func (p errorTail) Shutdown(ctx context.Context) error { return p.next.Shutdown(ctx) }

// ForceFlush implements sdktrace.SpanProcessor.
func (p errorTail) ForceFlush(ctx context.Context) error { return p.next.ForceFlush(ctx) }

// sampledSpan is a recorded span presented with its sampled flag set.
type sampledSpan struct{ sdktrace.ReadOnlySpan }

// SpanContext returns the span's context with the sampled flag set.
func (s sampledSpan) SpanContext() trace.SpanContext {
	sc := s.ReadOnlySpan.SpanContext()
	return sc.WithTraceFlags(sc.TraceFlags().WithSampled(true))
}

// idGenerator makes trace and span ids with the runtime's generator (math/rand/v2), which
// takes no lock: the SDK's default draws from one source under a mutex, which every span of
// every call in parallel contends for. Ids must be unique, not secret (as NewTraceID's).
type idGenerator struct{}

// NewIDs implements sdktrace.IDGenerator.
func (idGenerator) NewIDs(context.Context) (trace.TraceID, trace.SpanID) {
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.LittleEndian.PutUint64(tid[:8], rand.Uint64()) //nolint:gosec // uniqueness, not secrecy
		binary.LittleEndian.PutUint64(tid[8:], rand.Uint64()) //nolint:gosec // uniqueness, not secrecy
	}
	return tid, newSpanID()
}

// NewSpanID implements sdktrace.IDGenerator.
func (idGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.LittleEndian.PutUint64(sid[:], rand.Uint64()) //nolint:gosec // uniqueness, not secrecy
	}
	return sid
}

// unowned is an exporter the caller owns: shutting the provider down leaves it open.
type unowned struct{ sdktrace.SpanExporter }

// Shutdown implements sdktrace.SpanExporter: it does nothing.
func (unowned) Shutdown(context.Context) error { return nil }

// failureLogEvery is the least time between two log lines about failed exports.
const failureLogEvery = time.Minute

// loggedExporter logs failed exports itself, at most once per failureLogEvery, and hides
// the error from the batch processor, which would otherwise hand it to OpenTelemetry's
// global error handler (a process-wide logger outside the gateway's).
type loggedExporter struct {
	sdktrace.SpanExporter
	log      *slog.Logger
	endpoint string
	failures atomic.Int64
	lastLog  atomic.Int64 // unix nanoseconds
}

// ExportSpans implements sdktrace.SpanExporter.
func (e *loggedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err == nil {
		return nil
	}
	n := e.failures.Add(1)
	now, last := time.Now().UnixNano(), e.lastLog.Load()
	if now-last >= int64(failureLogEvery) && e.lastLog.CompareAndSwap(last, now) {
		e.log.Warn("exporting spans failed; spans are dropped while the collector cannot take them",
			"endpoint", e.endpoint, "spans", len(spans), "failures", n, "err", err)
	}
	return nil
}

// Shutdown implements sdktrace.SpanExporter.
func (e *loggedExporter) Shutdown(ctx context.Context) error {
	if err := e.SpanExporter.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

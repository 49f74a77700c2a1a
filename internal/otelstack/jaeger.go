package otelstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/testproc"
)

// ErrTraceNotFound is returned by Jaeger.Trace while Jaeger holds no span of the trace.
var ErrTraceNotFound = errors.New("trace not found")

// jaegerConfig is a minimal Jaeger v2 configuration: OTLP receivers, memory storage and the
// query API, every listener on loopback. Its own telemetry is off, so it opens no other port.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: %[1]s
  jaeger_query:
    enable_tracing: false
    storage:
      traces: memstore
    http:
      endpoint: %[2]s
    grpc:
      endpoint: %[3]s
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[4]s
      http:
        endpoint: %[5]s
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// Jaeger is a running Jaeger v2 with in-memory storage.
type Jaeger struct {
	// OTLPGRPC is the host:port of the OTLP gRPC receiver (insecure).
	OTLPGRPC string
	// OTLPHTTP is the host:port of the OTLP HTTP receiver (insecure; traces at /v1/traces).
	OTLPHTTP string
	// QueryURL is the base URL of the query API (http://127.0.0.1:port).
	QueryURL string

	client *http.Client
}

// Span is one span as Jaeger's query API returns it.
type Span struct {
	TraceID string
	SpanID  string
	// ParentSpanID is the span id of the CHILD_OF reference, empty for a root span.
	ParentSpanID string
	// Name is the span's name (Jaeger's operationName).
	Name string
	// Service is the service.name of the process that emitted the span.
	Service string
	// Tags holds the span's attributes, and Jaeger's derived tags such as span.kind and otel.status_code.
	Tags     map[string]any
	Start    time.Time
	Duration time.Duration
}

// StartJaeger runs the Jaeger v2 binary ($JAEGER_BIN, else .tmp/bin/jaeger of the repository)
// on loopback, waits until it is healthy, and stops it when the test ends.
func StartJaeger(t testing.TB) *Jaeger {
	t.Helper()
	bin := binary(t, "Jaeger v2", "JAEGER_BIN", repoTool(t, "jaeger"))
	dir := t.TempDir()
	j := &Jaeger{client: newClient(t)}
	start(t, func() (*testproc.Process, error) { return j.launch(bin, dir) })
	return j
}

// launch writes a configuration with fresh ports and starts Jaeger on it.
func (j *Jaeger) launch(bin, dir string) (*testproc.Process, error) {
	ports, err := testproc.FreeAddrs(5)
	if err != nil {
		return nil, err
	}
	health, queryHTTP, queryGRPC, otlpGRPC, otlpHTTP := ports[0], ports[1], ports[2], ports[3], ports[4]
	config := filepath.Join(dir, "jaeger.yaml")
	body := fmt.Sprintf(jaegerConfig, health, queryHTTP, queryGRPC, otlpGRPC, otlpHTTP)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		return nil, fmt.Errorf("writing jaeger config: %w", err)
	}
	p, err := startProcess(dir, bin, "--config", config)
	if err != nil {
		return nil, err
	}
	if err := waitReady(p, j.client, "http://"+health+"/status"); err != nil {
		stop(p)
		return nil, fmt.Errorf("jaeger: %w", err)
	}
	j.OTLPGRPC, j.OTLPHTTP, j.QueryURL = otlpGRPC, otlpHTTP, "http://"+queryHTTP
	return p, nil
}

// Trace returns the spans Jaeger holds for a trace (32 hex digits), or ErrTraceNotFound.
func (j *Jaeger) Trace(ctx context.Context, traceID string) ([]Span, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.QueryURL+"/api/traces/"+traceID, http.NoBody)
	if err != nil {
		return nil, fmt.Errorf("querying trace %s: %w", traceID, err)
	}
	resp, err := j.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("querying trace %s: %w", traceID, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%w: %s", ErrTraceNotFound, traceID)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("querying trace %s: HTTP %s", traceID, resp.Status)
	}
	var body traceResponse
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("decoding trace %s: %w", traceID, err)
	}
	return body.spans(traceID)
}

// WaitForTrace polls Trace until Jaeger holds at least n spans of the trace (export and storage
// are asynchronous), or ctx ends; it then returns the spans seen last with ctx's error.
func (j *Jaeger) WaitForTrace(ctx context.Context, traceID string, n int) ([]Span, error) {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		spans, err := j.Trace(ctx, traceID)
		if err == nil && len(spans) >= n {
			return spans, nil
		}
		if err != nil && !errors.Is(err, ErrTraceNotFound) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return spans, fmt.Errorf("waiting for %d spans of trace %s (have %d): %w", n, traceID, len(spans), ctx.Err())
		case <-ticker.C:
		}
	}
}

// traceResponse is the body of GET /api/traces/{id} of Jaeger's query API.
type traceResponse struct {
	Data []struct {
		TraceID   string `json:"traceID"`
		Spans     []jaegerSpan
		Processes map[string]struct {
			ServiceName string `json:"serviceName"`
		} `json:"processes"`
	} `json:"data"`
}

type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"` // microseconds since the epoch
	Duration  int64 `json:"duration"`  // microseconds
	Tags      []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
}

// spans flattens the response into Spans, resolving each span's process to its service name.
func (r *traceResponse) spans(traceID string) ([]Span, error) {
	if len(r.Data) != 1 {
		return nil, fmt.Errorf("trace %s: %d traces in the answer, want 1", traceID, len(r.Data))
	}
	trace := r.Data[0]
	spans := make([]Span, 0, len(trace.Spans))
	for _, s := range trace.Spans {
		span := Span{
			TraceID:  s.TraceID,
			SpanID:   s.SpanID,
			Name:     s.OperationName,
			Service:  trace.Processes[s.ProcessID].ServiceName,
			Tags:     make(map[string]any, len(s.Tags)),
			Start:    time.UnixMicro(s.StartTime),
			Duration: time.Duration(s.Duration) * time.Microsecond,
		}
		for _, ref := range s.References {
			if ref.RefType == "CHILD_OF" && ref.TraceID == s.TraceID {
				span.ParentSpanID = ref.SpanID
			}
		}
		for _, tag := range s.Tags {
			span.Tags[tag.Key] = tag.Value
		}
		spans = append(spans, span)
	}
	return spans, nil
}

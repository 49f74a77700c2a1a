package observability

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"strings"
	"time"
)

// TracingConfig is the tracing section: distributed tracing with the OpenTelemetry SDK,
// exported over OTLP. Absent, tracing is off and costs a nil check per call; present, even
// empty, every call is traced with the defaults below.
type TracingConfig struct {
	// Endpoint is the OTLP collector: host:port, or a URL (http://host:port/path, whose
	// scheme then decides TLS). Default localhost:4317 for grpc, localhost:4318 for http.
	Endpoint string `yaml:"endpoint" json:"endpoint,omitempty"`
	// Protocol is grpc (OTLP/gRPC, the default) or http (OTLP/HTTP, protobuf).
	Protocol string `yaml:"protocol" json:"protocol,omitempty"`
	// Insecure sends without TLS.
	Insecure bool `yaml:"insecure" json:"insecure,omitempty"`
	// Headers are sent with every export (an API key for a hosted collector: give it as ${ENV}).
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// Timeout bounds one export, retries included, and the flush at shutdown (default 10s).
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
	// MaxQueue is how many ended spans may wait for export (default 2048). A span that finds
	// the queue full is dropped: a collector that is slow or down never holds up a call.
	MaxQueue int `yaml:"max_queue" json:"max_queue,omitempty"`
	// BatchSize is the most spans sent in one export (default 512, at most MaxQueue).
	BatchSize int `yaml:"batch_size" json:"batch_size,omitempty"`
	// ExportInterval is the longest a span waits for its batch to fill (default 5s).
	ExportInterval time.Duration `yaml:"export_interval" json:"export_interval,omitempty"`
	// SampleRatio is the share of new traces recorded, in [0, 1] (default 1). A call that
	// continues a caller's trace follows the caller's decision (parent-based sampling).
	SampleRatio *float64 `yaml:"sample_ratio" json:"sample_ratio,omitempty"`
	// AlwaysSampleErrors also exports the spans the ratio left out that end with an error.
	// It records every span to decide at its end, so it costs what sampling everything
	// costs minus the export (see docs/operations.md#traces).
	AlwaysSampleErrors bool `yaml:"always_sample_errors" json:"always_sample_errors,omitempty"`
}

// Defaults and bounds of the tracing section.
const (
	DefaultTracingGRPCEndpoint = "localhost:4317"
	DefaultTracingHTTPEndpoint = "localhost:4318"
	DefaultTracingTimeout      = 10 * time.Second
	DefaultTracingMaxQueue     = 2048
	DefaultTracingBatchSize    = 512
	DefaultTracingInterval     = 5 * time.Second
	MaxTracingQueue            = 1 << 20
	MaxTracingTimeout          = time.Minute
	MaxTracingInterval         = time.Minute
	protocolGRPC               = "grpc"
	protocolHTTP               = "http"
)

// WithDefaults returns c with every unset field at its default.
func (c TracingConfig) WithDefaults() TracingConfig {
	if c.Protocol == "" {
		c.Protocol = protocolGRPC
	}
	if c.Endpoint == "" {
		c.Endpoint = DefaultTracingGRPCEndpoint
		if c.Protocol == protocolHTTP {
			c.Endpoint = DefaultTracingHTTPEndpoint
		}
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTracingTimeout
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = DefaultTracingMaxQueue
	}
	if c.BatchSize == 0 {
		c.BatchSize = min(DefaultTracingBatchSize, c.MaxQueue)
	}
	if c.ExportInterval == 0 {
		c.ExportInterval = DefaultTracingInterval
	}
	if c.SampleRatio == nil {
		one := 1.0
		c.SampleRatio = &one
	}
	return c
}

// Ratio returns the sample ratio, 1 when unset.
func (c TracingConfig) Ratio() float64 {
	if c.SampleRatio == nil {
		return 1
	}
	return *c.SampleRatio
}

// Equal reports whether c and o configure the same exporter and sampler once their
// defaults are applied: a reload that leaves the section equal keeps the tracer provider.
func (c TracingConfig) Equal(o TracingConfig) bool {
	c, o = c.WithDefaults(), o.WithDefaults()
	return c.Endpoint == o.Endpoint && c.Protocol == o.Protocol && c.Insecure == o.Insecure &&
		maps.Equal(c.Headers, o.Headers) && c.Timeout == o.Timeout && c.MaxQueue == o.MaxQueue &&
		c.BatchSize == o.BatchSize && c.ExportInterval == o.ExportInterval &&
		*c.SampleRatio == *o.SampleRatio && c.AlwaysSampleErrors == o.AlwaysSampleErrors
}

// Validate reports every problem of c, with its defaults applied.
func (c TracingConfig) Validate() error {
	c = c.WithDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Protocol != protocolGRPC && c.Protocol != protocolHTTP {
		bad("protocol %q: want grpc or http", c.Protocol)
	}
	if err := checkEndpoint(c.Endpoint); err != nil {
		bad("endpoint %q: %v", c.Endpoint, err)
	}
	for k := range c.Headers {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") {
			bad("headers: %q is not a header name", k)
		}
	}
	if c.Timeout <= 0 || c.Timeout > MaxTracingTimeout {
		bad("timeout is %s: it must be more than 0 and at most %s", c.Timeout, MaxTracingTimeout)
	}
	if c.MaxQueue < 1 || c.MaxQueue > MaxTracingQueue {
		bad("max_queue is %d: it must be between 1 and %d", c.MaxQueue, MaxTracingQueue)
	}
	if c.BatchSize < 1 || c.BatchSize > c.MaxQueue {
		bad("batch_size is %d: it must be between 1 and max_queue (%d)", c.BatchSize, c.MaxQueue)
	}
	if c.ExportInterval <= 0 || c.ExportInterval > MaxTracingInterval {
		bad("export_interval is %s: it must be more than 0 and at most %s", c.ExportInterval, MaxTracingInterval)
	}
	if r := *c.SampleRatio; !(r >= 0 && r <= 1) {
		bad("sample_ratio is %g: it must be between 0 and 1", r)
	}
	return errors.Join(errs...)
}

// checkEndpoint accepts host:port or an http(s) URL with a host.
func checkEndpoint(e string) error {
	if strings.Contains(e, "://") {
		u, err := url.Parse(e)
		if err != nil {
			return errors.New("not a URL")
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return errors.New("a URL must be http:// or https:// with a host")
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(e); err != nil {
		return errors.New("want host:port or a URL")
	}
	return nil
}

package server

import (
	"cmp"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/auth/approval"
	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/auth/tlsconf"
	"github.com/gatehouse-dev/gatehouse/configs"
	"github.com/gatehouse-dev/gatehouse/configs/loader"
	"github.com/gatehouse-dev/gatehouse/faces"
	a2aface "github.com/gatehouse-dev/gatehouse/faces/a2a"
	adminface "github.com/gatehouse-dev/gatehouse/faces/admin"
	grpcface "github.com/gatehouse-dev/gatehouse/faces/grpc"
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	mcpface "github.com/gatehouse-dev/gatehouse/faces/mcp"
	"github.com/gatehouse-dev/gatehouse/faces/session"
	"github.com/gatehouse-dev/gatehouse/faces/ws"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/routing"
	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	"github.com/gatehouse-dev/gatehouse/routing/capability/openrpc"
	"github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
	"github.com/gatehouse-dev/gatehouse/state/blob"
)

// Config is the whole configuration file. Each section is the config struct of the module
// that owns it; the section the server owns (listeners) is defined here.
type Config struct {
	Server    ServerConfig        `yaml:"server" json:"server"`
	JSONRPC   faces.JSONRPCConfig `yaml:"jsonrpc" json:"jsonrpc"`
	Batch     faces.BatchConfig   `yaml:"batch" json:"batch"`
	WebSocket *ws.Config          `yaml:"websocket" json:"websocket,omitempty"`
	// Session is session RPC for interactive clients at /session (faces/session,
	// docs/session.md); absent, /session answers 404.
	Session *session.Config `yaml:"session" json:"session,omitempty"`
	MCPFace *mcpface.Config `yaml:"mcp_face" json:"mcp_face,omitempty"`
	// A2A is the A2A face: the agent card at /.well-known/agent-card.json and the JSON-RPC
	// binding at /a2a (faces/a2a, docs/a2a.md); absent, both answer 404.
	A2A      *a2aface.Config           `yaml:"a2a" json:"a2a,omitempty"`
	Nekte    *nekte.Section            `yaml:"nekte" json:"nekte,omitempty"`
	Deadline resilience.DeadlineConfig `yaml:"deadline" json:"deadline"`
	Auth     auth.Config               `yaml:"auth" json:"auth"`
	Routing  routing.Config            `yaml:"routing" json:"routing"`
	Log      observability.LogConfig   `yaml:"log" json:"log"`
	// Metrics turns the Prometheus metrics on or off (on by default); read at start.
	Metrics observability.MetricsConfig `yaml:"metrics" json:"metrics,omitzero"`
	State   state.Config                `yaml:"state" json:"state"`
	// SSE bounds the event streams of the boundary's JSON-RPC face (stream.go); it always
	// applies, with defaults when absent.
	SSE httprpc.SSEConfig `yaml:"sse" json:"sse"`
	// OpenRPC bounds the OpenRPC documents of rpc.discover and GET /openrpc.json
	// (routing/capability/openrpc); it always applies, with defaults when absent.
	OpenRPC openrpc.Config `yaml:"openrpc" json:"openrpc"`
	// Policy is the authorization policy (auth/policy); absent, the policy stage is not in
	// the chain.
	Policy *policy.Config `yaml:"policy" json:"policy,omitempty"`
	// Approvals governs calls the policy holds for a human's approval (auth/approval); it
	// takes effect whenever Policy is set, with defaults when absent.
	Approvals approval.Config `yaml:"approvals" json:"approvals,omitzero"`
	// RateLimits are token buckets per caller, method pattern and tier
	// (resilience/ratelimit.go); absent, the rate-limit stage is not in the chain.
	RateLimits *resilience.RateLimitConfig `yaml:"rate_limits" json:"rate_limits,omitempty"`
	// Idempotency honours params.idempotency_key (resilience/idempotency.go); absent, the
	// idempotency stage is not in the chain.
	Idempotency *resilience.IdempotencyConfig `yaml:"idempotency" json:"idempotency,omitempty"`
	// Breakers are the backends' circuit breakers (resilience/breaker.go); absent, the
	// breaker stage is not in the chain.
	Breakers *resilience.BreakersConfig `yaml:"breakers" json:"breakers,omitempty"`
	// Retries governs the one retry of a call that never reached its backend
	// (resilience/retry.go); absent, the retry stage is not in the chain.
	Retries *resilience.RetryConfig `yaml:"retries" json:"retries,omitempty"`
	// Admission is admission control and backpressure: the global adaptive concurrency
	// limit and each target's concurrency limit and queue (resilience/admission.go);
	// absent, the admission stage is not in the chain.
	Admission *resilience.AdmissionConfig `yaml:"admission" json:"admission,omitempty"`
	// Tracing exports OpenTelemetry spans of every call over OTLP (observability/tracing.go,
	// server/tracing.go); absent, nothing is traced. A reload that changes it
	// rebuilds the tracer provider.
	Tracing *observability.TracingConfig `yaml:"tracing" json:"tracing,omitempty"`
	// Blobs is the DataRef blob store and its endpoint /blobs/ (state/blob, faces/blob,
	// blobs.go); absent, the endpoint answers 404. Read at start.
	Blobs *blob.Config `yaml:"blobs" json:"blobs,omitempty"`
	// Agents is the agent link on the internal listener (routing/agentlink,
	// server/agentlink.go); absent, no agent can connect. Read at start.
	Agents *agentlink.Config `yaml:"agents" json:"agents,omitempty"`

	// file is where the configuration was read from ("" for the embedded default).
	file string
}

// ServerConfig is the server section: listeners and process lifecycle. Listener settings
// are read at start; a reload that changes them is logged and takes effect on restart.
type ServerConfig struct {
	Boundary BoundaryConfig `yaml:"boundary" json:"boundary"`
	Admin    AdminConfig    `yaml:"admin" json:"admin"`
	// Internal is the internal gRPC listener; absent, it is not served.
	Internal *InternalConfig `yaml:"internal" json:"internal,omitempty"`
	// DemoGRPC starts the built-in calculator.v1 gRPC backend (demo.Calculator) on
	// this listener, for the tour and tests; absent, it is not started.
	DemoGRPC *DemoGRPCConfig `yaml:"demo_grpc" json:"demo_grpc,omitempty"`
	// ShutdownGrace bounds how long in-flight calls may take to finish after SIGTERM.
	ShutdownGrace time.Duration `yaml:"shutdown_grace" json:"shutdown_grace,omitempty"`
	// WatchConfig reloads the configuration when its file changes (default true).
	WatchConfig *bool `yaml:"watch_config" json:"watch_config,omitempty"`
	// Reload is how a reload hands over to the new configuration (reload.go).
	Reload ReloadConfig `yaml:"reload" json:"reload,omitzero"`
	// Readiness is when /readyz says this replica can serve (ReadinessAny, the default, or
	// ReadinessAll); draining, starting or an unreachable state store is never ready.
	Readiness string `yaml:"readiness" json:"readiness,omitempty"`
	// GCHeapFloorMiB is the garbage collector's heap floor in MiB (cmd/gatehouse/internal/gcfloor; absent:
	// DefaultGCHeapFloorMiB, 0: off), read at start; GOGC in the environment wins.
	GCHeapFloorMiB *int `yaml:"gc_heap_floor_mib" json:"gc_heap_floor_mib,omitempty"`
}

// DefaultGCHeapFloorMiB is server.gc_heap_floor_mib's default; MaxGCHeapFloorMiB its largest.
const (
	DefaultGCHeapFloorMiB = 64
	MaxGCHeapFloorMiB     = 1 << 20
)

// GCHeapFloor is server.gc_heap_floor_mib in bytes.
func (c *Config) GCHeapFloor() uint64 {
	if c.Server.GCHeapFloorMiB == nil {
		return DefaultGCHeapFloorMiB << 20
	}
	return uint64(max(*c.Server.GCHeapFloorMiB, 0)) << 20
}

// ReloadConfig is the server.reload section.
type ReloadConfig struct {
	// ReadyTimeout bounds how long a reload waits for the new configuration's targets to
	// be ready before it takes traffic (default 30s); one still not ready then, that is
	// ready in the configuration serving, refuses the reload.
	ReadyTimeout time.Duration `yaml:"ready_timeout" json:"ready_timeout,omitempty"`
}

// Readiness rules (server.readiness).
const (
	// ReadinessAny: ready while at least one target can serve (or there are none).
	ReadinessAny = "any"
	// ReadinessAll: ready only while every target can serve.
	ReadinessAll = "all"
)

// BoundaryConfig is the external JSON-RPC listener.
type BoundaryConfig struct {
	Addr              string        `yaml:"addr" json:"addr,omitempty"`
	MaxConnections    int           `yaml:"max_connections" json:"max_connections,omitempty"`
	MaxHeaderBytes    int           `yaml:"max_header_bytes" json:"max_header_bytes,omitempty"`
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout" json:"read_header_timeout,omitempty"`
	ReadTimeout       time.Duration `yaml:"read_timeout" json:"read_timeout,omitempty"`
	// WriteTimeout is how long writing a response may take once the call's deadline passed.
	WriteTimeout time.Duration `yaml:"write_timeout" json:"write_timeout,omitempty"`
	IdleTimeout  time.Duration `yaml:"idle_timeout" json:"idle_timeout,omitempty"`
	// TLS serves the listener over TLS, with HTTP/2 offered by ALPN (tlsconf.Config);
	// absent, it serves plaintext HTTP/1.1.
	TLS *tlsconf.Config `yaml:"tls" json:"tls,omitempty"`
	// H2C also serves HTTP/2 without TLS (prior knowledge or Upgrade), for a proxy in front
	// that terminates TLS and speaks HTTP/2 to the gateway (default false).
	H2C bool `yaml:"h2c" json:"h2c,omitempty"`
}

// InternalConfig is the internal gRPC listener: the face's own settings (grpcface.Config)
// and the transport security the server gives it.
type InternalConfig struct {
	grpcface.Config `yaml:",inline"`
	// TLS serves gRPC over TLS; with client_ca_file, a verified client certificate
	// authenticates the caller (mTLS). Absent, plaintext.
	TLS *tlsconf.Config `yaml:"tls" json:"tls,omitempty"`
}

// AdminConfig is the operator listener: /healthz, /readyz, /metrics, the admin JSON-RPC
// methods at POST /rpc (admin.approvals.*) and, when Pprof is on, /debug/pprof/.
type AdminConfig struct {
	Addr string `yaml:"addr" json:"addr,omitempty"`
	// Pprof serves the Go runtime's profiles (net/http/pprof) under /debug/pprof/ to
	// callers authenticated in zone operator that hold PprofScope (default false: 404).
	Pprof bool `yaml:"pprof" json:"pprof,omitempty"`
	// PprofScope is the scope a caller of /debug/pprof/ must hold (default "admin.pprof").
	PprofScope string `yaml:"pprof_scope" json:"pprof_scope,omitempty"`
	// TLS serves the listener over TLS (tlsconf.Config); absent, plaintext.
	TLS *tlsconf.Config `yaml:"tls" json:"tls,omitempty"`
	// OperatorScope is the scope a caller of the operator methods (admin.status,
	// admin.backends, admin.catalog, admin.tasks.*, admin.errors.recent,
	// admin.config.reload) and of the console's events must hold (default
	// "admin.operator").
	OperatorScope string `yaml:"operator_scope" json:"operator_scope,omitempty"`
	// Console is the operator console at GET /console (faces/admin, docs/console.md); off
	// by default. Read at start.
	Console adminface.ConsoleConfig `yaml:"console" json:"console,omitzero"`
}

// listenerTLS is one listener's tls section, by its path in the file.
type listenerTLS struct {
	path string
	tls  **tlsconf.Config
}

// listenerTLS returns the tls section of every listener that can have one.
func (s *ServerConfig) listenerTLS() []listenerTLS {
	out := []listenerTLS{{"server.boundary.tls", &s.Boundary.TLS}, {"server.admin.tls", &s.Admin.TLS}}
	if s.Internal != nil {
		out = append(out, listenerTLS{"server.internal.tls", &s.Internal.TLS})
	}
	return out
}

// DemoGRPCConfig is the listener of the built-in calculator.v1 gRPC backend.
type DemoGRPCConfig struct {
	Addr string `yaml:"addr" json:"addr,omitempty"`
}

// Defaults for every limit.
const (
	DefaultBoundaryAddr       = "127.0.0.1:8080"
	DefaultAdminAddr          = "127.0.0.1:9901"
	DefaultPprofScope         = "admin.pprof"
	DefaultShutdownGrace      = 20 * time.Second
	DefaultReloadReadyTimeout = 30 * time.Second
	DefaultMaxConnections     = 10000
	DefaultMaxHeaderBytes     = 16 << 10
	// MinMaxHeaderBytes is the smallest server.boundary.max_header_bytes that can be
	// enforced exactly (httpMaxHeaderBytes).
	MinMaxHeaderBytes        = httpHeaderSlop + 1
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 10 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
)

// applyDefaults fills every zero limit with its default.
func (c *Config) applyDefaults() {
	s := &c.Server
	setDefault(&s.Boundary.Addr, DefaultBoundaryAddr)
	setDefault(&s.Admin.Addr, DefaultAdminAddr)
	setDefault(&s.Admin.PprofScope, DefaultPprofScope)
	setDefault(&s.Admin.OperatorScope, adminface.DefaultOperatorScope)
	if s.Internal != nil {
		s.Internal.Config = s.Internal.WithDefaults()
	}
	for _, t := range s.listenerTLS() {
		if *t.tls != nil {
			**t.tls = (*t.tls).WithDefaults()
		}
	}
	setDefault(&s.ShutdownGrace, DefaultShutdownGrace)
	setDefault(&s.Reload.ReadyTimeout, DefaultReloadReadyTimeout)
	setDefault(&s.Readiness, ReadinessAny)
	setDefault(&s.Boundary.MaxConnections, DefaultMaxConnections)
	setDefault(&s.Boundary.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setDefault(&s.Boundary.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDefault(&s.Boundary.ReadTimeout, DefaultReadTimeout)
	setDefault(&s.Boundary.WriteTimeout, DefaultWriteTimeout)
	setDefault(&s.Boundary.IdleTimeout, DefaultIdleTimeout)
	c.JSONRPC = c.JSONRPC.WithDefaults()
	c.Batch = c.Batch.WithDefaults()
	if c.WebSocket != nil {
		w := c.WebSocket.WithDefaults(c.JSONRPC.MaxBodyBytes)
		c.WebSocket = &w
	}
	if c.Session != nil {
		sc := c.Session.WithDefaults(c.JSONRPC.MaxBodyBytes)
		c.Session = &sc
	}
	if c.A2A != nil {
		ac := c.A2A.WithDefaults()
		c.A2A = &ac
	}
	c.SSE = c.SSE.WithDefaults()
	c.OpenRPC = c.OpenRPC.WithDefaults()
	c.Deadline = c.Deadline.WithDefaults()
	c.Approvals = c.Approvals.WithDefaults()
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// validate makes the checks the schema cannot: relations between fields and values that
// must parse. What it compiles on the way (the policy) is returned for the runtime.
func (c *Config) validate(doc *loader.Document) (compiled, loader.ErrorList) {
	var errs loader.ErrorList
	bad := func(path, format string, args ...any) {
		errs = append(errs, doc.Errorf(path, format, args...))
	}
	addrs := map[string]string{"server.boundary.addr": c.Server.Boundary.Addr, "server.admin.addr": c.Server.Admin.Addr}
	if c.Server.Internal != nil {
		addrs["server.internal.addr"] = c.Server.Internal.Addr
		if err := grpcface.ValidateAdvertise(c.Server.Internal.Advertise); err != nil {
			bad("server.internal.advertise", "%v", err)
		}
	}
	if c.Server.DemoGRPC != nil {
		addrs["server.demo_grpc.addr"] = c.Server.DemoGRPC.Addr
	}
	if f := c.Server.GCHeapFloorMiB; f != nil && (*f < 0 || *f > MaxGCHeapFloorMiB) {
		bad("server.gc_heap_floor_mib", "must be 0 (off) … %d", MaxGCHeapFloorMiB)
	}
	if r := c.Server.Readiness; r != ReadinessAny && r != ReadinessAll {
		bad("server.readiness", "must be %q or %q", ReadinessAny, ReadinessAll)
	}
	if n := c.Server.Boundary.MaxHeaderBytes; n < MinMaxHeaderBytes {
		bad("server.boundary.max_header_bytes", "must be at least %d (net/http reads headers in blocks of 4 KiB)", MinMaxHeaderBytes)
	}
	if c.Server.Reload.ReadyTimeout < 0 {
		bad("server.reload.ready_timeout", "must not be negative")
	}
	if err := c.Server.Admin.Console.Validate(); err != nil {
		bad("server.admin.console", "%v", err)
	}
	for path, addr := range addrs {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			bad(path, "not a host:port address")
		}
	}
	for _, t := range c.Server.listenerTLS() {
		if *t.tls != nil {
			errs = append(errs, sectionErrors(doc, t.path, (*t.tls).Validate())...)
		}
	}
	errs = append(errs, sectionErrors(doc, "deadline", c.Deadline.Validate())...)
	if f := c.MCPFace; f != nil {
		if err := f.ValidateSessionKey(); err != nil {
			bad("mcp_face.session_key", "%v", err)
		}
		if err := f.ValidateToolsChangedDelay(); err != nil {
			bad("mcp_face.tools_changed_delay", "%v", err)
		}
		if err := f.ListCache.Validate(); err != nil {
			bad("mcp_face.list_cache", "%v", err)
		}
		if err := f.Tasks.Validate(); err != nil {
			bad("mcp_face.tasks", "%v", err)
		}
		if f.Tasks.Enabled != nil && *f.Tasks.Enabled && c.Nekte == nil {
			bad("mcp_face.tasks.enabled", "MCP tasks run as the gateway's NEKTE tasks: add the nekte section")
		}
		if err := f.MRTR.Validate(); err != nil {
			bad("mcp_face.mrtr", "%v", err)
		}
	}
	if sc := c.Session; sc != nil {
		if err := sc.Validate(); err != nil {
			bad("session", "%v", err)
		}
	}
	if ac := c.A2A; ac != nil {
		if err := ac.Validate(); err != nil {
			bad("a2a", "%v", err)
		}
		if c.Auth.KeyRing == nil && (ac.Card.Sign || (ac.Push != nil && ac.Push.Enabled)) {
			bad("a2a", "a2a.card.sign and a2a.push.enabled need auth.keyring, which signs the card and each push notification")
		}
	}
	if n := c.Nekte; n != nil {
		errs = append(errs, sectionErrors(doc, "nekte", n.Validate())...)
	}
	if err := c.State.Validate(); err != nil {
		bad("state", "%v", err)
	}
	if t := c.Tracing; t != nil {
		if err := t.Validate(); err != nil {
			bad("tracing", "%v", err)
		}
	}
	if err := c.Log.Validate(); err != nil {
		bad("log", "%v", err)
	}
	if err := c.Auth.Validate(); err != nil {
		bad("auth", "%v", err)
	}
	if err := c.OpenRPC.Validate(); err != nil {
		bad("openrpc", "%v", err)
	}
	var parts compiled
	if c.Policy != nil {
		var problems []policy.ConfigError
		parts.policy, problems = policy.Compile(*c.Policy)
		errs = append(errs, sectionErrors(doc, "policy", problems)...)
	}
	errs = append(errs, sectionErrors(doc, "approvals", c.Approvals.Validate())...)
	errs = append(errs, c.validateResilience(doc)...)
	errs = append(errs, c.validateBlobs(doc)...) // blobs.go
	errs = append(errs, c.validateAgents(doc)...)
	if err := c.Routing.Validate(); err != nil {
		bad("routing", "%v", err)
	}
	return parts, errs
}

// sectionErrors positions in doc the problems the owner of a section reports, each at its
// path relative to the section ("" for the section itself).
func sectionErrors[P ~struct{ Path, Msg string }](doc *loader.Document, section string, problems []P) loader.ErrorList {
	var errs loader.ErrorList
	for _, p := range problems {
		q := struct{ Path, Msg string }(p)
		path := section
		if q.Path != "" {
			path += "." + q.Path
		}
		errs = append(errs, doc.Errorf(path, "%s", q.Msg))
	}
	return errs
}

// Load reads, interpolates, validates and decodes the configuration file at path. On
// failure the error is a loader.ErrorList naming file, line and column of every problem.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	cfg, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// Default returns the embedded default configuration.
func Default() (*Config, error) {
	cfg, err := Parse("", configs.Default)
	if err != nil {
		return nil, fmt.Errorf("embedded default config: %w", err)
	}
	return cfg, nil
}

// Parse decodes a configuration from data; file names it in errors, and relative file paths
// of the auth section resolve against its directory (against the working directory when
// file is "", as for the embedded default).
func Parse(file string, data []byte) (*Config, error) {
	cfg, _, err := parse(file, data)
	return cfg, err
}

// parse is Parse, also returning what validating the configuration compiled.
func parse(file string, data []byte) (*Config, *compiled, error) {
	name := file
	if name == "" {
		name = "<embedded>"
	}
	doc, err := loader.Parse(name, data, os.LookupEnv)
	if err != nil {
		return nil, nil, err
	}
	schema, err := configSchema()
	if err != nil {
		return nil, nil, fmt.Errorf("compiling schemas/config.schema.json: %w", err)
	}
	var cfg Config
	if err := doc.Decode(schema, &cfg); err != nil {
		return nil, nil, err
	}
	if file != "" { // relative paths name files beside the configuration file
		cfg.Auth = cfg.Auth.WithBaseDir(filepath.Dir(file))
		if cfg.Nekte != nil {
			*cfg.Nekte = cfg.Nekte.WithBaseDir(filepath.Dir(file))
		}
		for _, t := range cfg.Server.listenerTLS() {
			if *t.tls != nil {
				**t.tls = (*t.tls).WithBaseDir(filepath.Dir(file))
			}
		}
	}
	cfg.applyDefaults()
	parts, errs := cfg.validate(doc)
	if len(errs) > 0 {
		return nil, nil, errs
	}
	cfg.file = file
	return &cfg, &parts, nil
}

// WatchEnabled reports whether the configuration file should be watched for changes.
func (c *Config) WatchEnabled() bool { return c.Server.WatchConfig == nil || *c.Server.WatchConfig }

// ListenOverrides are listener settings given on the command line; they win over the file,
// on start and on every reload.
type ListenOverrides struct {
	BoundaryAddr string
	AdminAddr    string
	// InternalAddr also turns the internal listener on when the file leaves it out.
	InternalAddr string
	// Pprof turns server.admin.pprof on (gatehouse serve --pprof, which make run passes)
	// and, when the configuration admits anonymous callers from loopback only, grants them
	// server.admin.pprof_scope, so a local profile needs no credential. Callers are still
	// authenticated in zone operator and must hold the scope.
	Pprof bool
	// Console turns the operator console on (server.admin.console.enabled; gatehouse serve
	// --console, which make run passes) and, when the configuration admits anonymous
	// callers from loopback only, grants them server.admin.operator_scope and
	// approvals.admin_scope, so a local operator signs in without a credential. Callers are
	// still authenticated in zone operator and must hold the scopes.
	Console bool
}

// Apply writes the overrides into cfg.
func (o ListenOverrides) Apply(cfg *Config) {
	if o.BoundaryAddr != "" {
		cfg.Server.Boundary.Addr = o.BoundaryAddr
	}
	if o.AdminAddr != "" {
		cfg.Server.Admin.Addr = o.AdminAddr
	}
	if o.InternalAddr != "" {
		if cfg.Server.Internal == nil {
			cfg.Server.Internal = &InternalConfig{Config: grpcface.Config{MaxRecvBytes: grpcface.DefaultRecvBytes}}
		}
		cfg.Server.Internal.Addr = o.InternalAddr
	}
	if o.Pprof {
		cfg.Server.Admin.Pprof = true
		grantLoopback(cfg, cfg.Server.Admin.PprofScope)
	}
	if o.Console {
		cfg.Server.Admin.Console.Enabled = true
		grantLoopback(cfg, cmp.Or(cfg.Server.Admin.OperatorScope, adminface.DefaultOperatorScope))
		grantLoopback(cfg, cmp.Or(cfg.Approvals.AdminScope, approval.DefaultAdminScope))
	}
}

// grantLoopback adds scope to the scopes of anonymous callers when the configuration admits
// them from loopback only.
func grantLoopback(cfg *Config, scope string) {
	if a := cfg.Auth.Anonymous; a != nil && (a.LoopbackOnly == nil || *a.LoopbackOnly) && !slices.Contains(a.Scopes, scope) {
		a.Scopes = append(slices.Clip(a.Scopes), scope)
	}
}

// File returns the path the configuration was read from, "" for the embedded default.
func (c *Config) File() string { return c.file }

// configSchema compiles the embedded JSON Schema of the file once.
var configSchema = sync.OnceValues(func() (*loader.Schema, error) {
	return loader.CompileSchema(schemas.ConfigSchema)
})

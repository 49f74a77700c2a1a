package mcpbackend

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/tlsclient"
)

// Config is one upstream MCP server (an entry of routing.mcp). Exactly one of Stdio, SSE
// and HTTP says how to reach it.
type Config struct {
	// Name identifies the upstream in logs, errors, readiness and as the default name prefix.
	Name string `yaml:"name" json:"name"`
	// Stdio runs the server as a child process speaking MCP over stdin and stdout.
	Stdio *StdioConfig `yaml:"stdio" json:"stdio,omitempty"`
	// SSE reaches the server over the legacy HTTP+SSE transport (protocol 2024-11-05).
	SSE *HTTPConfig `yaml:"sse" json:"sse,omitempty"`
	// HTTP reaches the server over the streamable HTTP transport.
	HTTP *HTTPConfig `yaml:"http" json:"http,omitempty"`
	// ProtocolVersions are the MCP revisions offered, newest first (default: 2026-07-28,
	// 2025-11-25, 2025-06-18). The newest is offered; a server answering with a version not
	// listed is refused. When a stateless revision (2026-07-28) is listed it is probed
	// with server/discover first, and a server that does not know it is initialized with
	// the newest handshake revision mcp-go speaks (2025-11-25).
	ProtocolVersions []string `yaml:"protocol_versions" json:"protocol_versions,omitempty"`
	// Heartbeat pings each session to detect a server that stopped answering.
	Heartbeat HeartbeatConfig `yaml:"heartbeat" json:"heartbeat"`
	// Restart is the backoff between reconnection attempts.
	Restart BackoffConfig `yaml:"restart" json:"restart"`
	// Sessions is the size of the session pool (default 1); calls go to the least loaded
	// live session. For stdio, each session is its own child process.
	Sessions int `yaml:"sessions" json:"sessions,omitempty"`
	// MaxConcurrent caps the calls in flight to this upstream across its sessions
	// (0: no cap). Calls past the cap wait up to QueueTimeout, then fail with OVERLOADED
	// (5002) and retry_after_ms; a wait the call's deadline cuts short fails with
	// DEADLINE_EXCEEDED, data.layer "gateway".
	MaxConcurrent int `yaml:"max_concurrent" json:"max_concurrent,omitempty"`
	// QueueTimeout bounds the wait for a slot under MaxConcurrent (default 1s).
	QueueTimeout time.Duration `yaml:"queue_timeout" json:"queue_timeout,omitempty"`
	// RequestTimeout bounds each upstream request when the caller's deadline, less the hop
	// reserve (deadline.reserve), is later or absent (default 60s). A request that runs out
	// of either is cancelled upstream (notifications/cancelled) and fails with
	// DEADLINE_EXCEEDED, data.layer "upstream".
	RequestTimeout time.Duration `yaml:"request_timeout" json:"request_timeout,omitempty"`
	// ConnectTimeout bounds starting a session: spawning or dialling, the handshake and
	// loading the catalog (default 30s).
	ConnectTimeout time.Duration `yaml:"connect_timeout" json:"connect_timeout,omitempty"`
	// Names says how the upstream's tool and prompt names are exposed.
	Names NamesConfig `yaml:"names" json:"names"`
	// Tools filters the upstream's tools by name (glob patterns, path.Match syntax).
	Tools FilterConfig `yaml:"tools" json:"tools"`
	// Roots are declared to the server (roots/list); absent means the roots capability is
	// not declared.
	Roots []RootConfig `yaml:"roots" json:"roots,omitempty"`
	// Sampling is the policy for the server's sampling/createMessage requests: "refuse"
	// (default: the capability is not declared, and a request is answered with an error
	// naming the policy), "client" (relayed to the downstream MCP client whose call caused
	// it, when that client is known for certain and declared sampling; see Peer) or
	// "route" (passed to the SamplingHandler the gateway installs, which sends it to
	// routing.mcp.sampling_backend).
	Sampling string `yaml:"sampling" json:"sampling,omitempty"`
	// Elicitation is the same policy for elicitation/create requests; "client" relays
	// form mode only.
	Elicitation string `yaml:"elicitation" json:"elicitation,omitempty"`
	// DownstreamToken is the credential the server receives on each call (default: a
	// token minted for it, with the upstream's name as audience): over HTTP and SSE in
	// the Authorization header, over stdio in params._meta[MetaKeyAuthorization].
	DownstreamToken gateway.DownstreamTokenConfig `yaml:"downstream_token" json:"downstream_token"`
	// InputSchema bounds the compilation of the upstream's tool input schemas and the
	// refusals of inputs that break them (input.go).
	InputSchema InputSchemaConfig `yaml:"input_schema" json:"input_schema"`
	// SessionAffinity says whose upstream session serves a call: "shared" (the default:
	// every caller's calls are multiplexed over the pool) or "caller" (each caller gets an
	// upstream session of its own, kept across replicas; affinity.go).
	SessionAffinity string `yaml:"session_affinity" json:"session_affinity,omitempty"`
	// CallerSessions bounds the callers' sessions under session_affinity caller.
	CallerSessions CallerSessionsConfig `yaml:"caller_sessions" json:"caller_sessions"`
	// Tasks says how tools the server runs as tasks of its own are called (tasks.go).
	Tasks TasksConfig `yaml:"tasks" json:"tasks"`
}

// CallerSessionsConfig bounds the upstream sessions kept for callers under
// session_affinity caller.
type CallerSessionsConfig struct {
	// Max is how many callers' sessions one process holds per upstream (default 1000, at
	// most 100000). Past it the least recently used idle one is dropped here (its record
	// stays, so the caller's next call resumes it); when every one is busy a new caller is
	// refused with OVERLOADED.
	Max int `yaml:"max" json:"max,omitempty"`
	// IdleTimeout ends a caller's session no replica has used for this long: its record is
	// removed and the upstream is sent DELETE (default 10m).
	IdleTimeout time.Duration `yaml:"idle_timeout" json:"idle_timeout,omitempty"`
	// RecordTTL is how long a caller's record lives in the state store after its last
	// refresh (default 1h; at least idle_timeout).
	RecordTTL time.Duration `yaml:"record_ttl" json:"record_ttl,omitempty"`
}

// InputSchemaConfig bounds input validation for one upstream's tools. Each tool's
// inputSchema is compiled once per catalog version; a schema past these bounds, one that
// does not compile, refers to a document elsewhere ($ref) or is not an object schema,
// withholds its tool from the catalog.
type InputSchemaConfig struct {
	// MaxBytes is the largest inputSchema accepted, in bytes of JSON (default 256 KiB).
	MaxBytes int `yaml:"max_bytes" json:"max_bytes,omitempty"`
	// MaxDepth is the deepest nesting of objects and arrays accepted in an inputSchema
	// (default 64).
	MaxDepth int `yaml:"max_depth" json:"max_depth,omitempty"`
	// MaxErrors is how many failures a refusal lists in error.data.errors (default 8).
	MaxErrors int `yaml:"max_errors" json:"max_errors,omitempty"`
}

// StdioConfig is a child process speaking MCP over stdio.
type StdioConfig struct {
	// Command is the program to run (looked up in PATH when it has no slash).
	Command string `yaml:"command" json:"command"`
	// Args are its arguments.
	Args []string `yaml:"args" json:"args,omitempty"`
	// Env adds variables to the child's environment.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// InheritEnv passes the gateway's whole environment to the child. By default only
	// HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG, TMPDIR and TZ are passed, so the
	// gateway's secrets do not leak into tool servers.
	InheritEnv bool `yaml:"inherit_env" json:"inherit_env,omitempty"`
	// Dir is the child's working directory (default: the gateway's).
	Dir string `yaml:"dir" json:"dir,omitempty"`
	// StderrLineBytes bounds one logged stderr line; the rest of a longer line is dropped
	// (default 4096).
	StderrLineBytes int `yaml:"stderr_line_bytes" json:"stderr_line_bytes,omitempty"`
	// StopGrace is how long a child may take to exit after its stdin is closed before its
	// process group is killed (default 2s).
	StopGrace time.Duration `yaml:"stop_grace" json:"stop_grace,omitempty"`
}

// HTTPConfig is an MCP server reached over HTTP.
type HTTPConfig struct {
	// URL is the endpoint (for SSE, the event stream's URL).
	URL string `yaml:"url" json:"url"`
	// Headers are sent with every request (e.g. Authorization: "Bearer ${TOKEN}"); the
	// routing headers Mcp-Method and Mcp-Name are the gateway's to set, and refused here.
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// TLS configures transport security for https URLs (default: system roots).
	TLS *TLSConfig `yaml:"tls" json:"tls,omitempty"`
	// MaxIdleConns is how many idle connections a session keeps to the server for reuse
	// (default 64, at most 10000). Size it to the calls one session has in flight at once:
	// past it, connections are closed after each call and new ones dialled, leaving
	// sockets in TIME_WAIT. It caps nothing: more calls than this still run, each on a
	// connection of its own.
	MaxIdleConns int `yaml:"max_idle_conns" json:"max_idle_conns,omitempty"`
	// AllowPlaintextHopToken lets a hop credential (downstream_token mode mint or
	// passthrough) travel over a plain http:// URL to a host that is not loopback. Without
	// it such a configuration is refused: anyone on the path could read the token and
	// replay it within its lifetime.
	AllowPlaintextHopToken bool `yaml:"allow_plaintext_hop_token" json:"allow_plaintext_hop_token,omitempty"`
}

// TLSConfig is transport security for an HTTP upstream.
type TLSConfig = tlsclient.Config

// HeartbeatConfig is the liveness check of a session.
type HeartbeatConfig struct {
	// Interval is the longest time a dead or hung server goes unnoticed (default 10s).
	// Pings are sent every Interval − Timeout, so that a ping sent after the server hung
	// fails within Interval.
	Interval time.Duration `yaml:"interval" json:"interval,omitempty"`
	// Timeout is how long a ping may take (default a third of Interval); it must be
	// shorter than Interval.
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
}

// BackoffConfig is capped exponential backoff with jitter.
type BackoffConfig struct {
	// Initial is the first delay (default 250ms); it doubles per failed attempt.
	Initial time.Duration `yaml:"initial" json:"initial,omitempty"`
	// Max caps the delay (default 30s). A session that stayed up at least Max resets it.
	Max time.Duration `yaml:"max" json:"max,omitempty"`
	// Jitter is the fraction (0–1) of each delay drawn at random (default 0.2): the delay
	// is d × (1 − Jitter × U[0,1)).
	Jitter float64 `yaml:"jitter" json:"jitter,omitempty"`
}

// NamesConfig says how an upstream's tool and prompt names are exposed.
type NamesConfig struct {
	// Mode is "always" (prefix every name), "on_collision" (prefix a name only when
	// another upstream exposes the same one; the default) or "never".
	Mode string `yaml:"mode" json:"mode,omitempty"`
	// Prefix is put before names (default: the upstream's name).
	Prefix string `yaml:"prefix" json:"prefix,omitempty"`
	// Separator joins prefix and name (default "__": "everything__echo"). It may use
	// letters, digits, '_', '-' and '.'.
	Separator string `yaml:"separator" json:"separator,omitempty"`
}

// FilterConfig selects tools by name; deny wins over allow, and an empty allow list
// allows every tool.
type FilterConfig struct {
	Allow []string `yaml:"allow" json:"allow,omitempty"`
	Deny  []string `yaml:"deny" json:"deny,omitempty"`
}

// RootConfig is one root declared to the server.
type RootConfig struct {
	// URI is the root, a file:// URI.
	URI string `yaml:"uri" json:"uri"`
	// Name is an optional human-readable name.
	Name string `yaml:"name" json:"name,omitempty"`
}

// Session affinity modes.
const (
	AffinityShared = "shared"
	AffinityCaller = "caller"
)

// Name prefix modes.
const (
	PrefixAlways      = "always"
	PrefixOnCollision = "on_collision"
	PrefixNever       = "never"
)

// Policies for sampling and elicitation requests.
const (
	PolicyRefuse = "refuse"
	PolicyClient = "client"
	PolicyRoute  = "route"
)

// Defaults.
const (
	DefaultHeartbeatInterval = 10 * time.Second
	DefaultRestartInitial    = 250 * time.Millisecond
	DefaultRestartMax        = 30 * time.Second
	DefaultRestartJitter     = 0.2
	DefaultQueueTimeout      = time.Second
	DefaultRequestTimeout    = 60 * time.Second
	DefaultConnectTimeout    = 30 * time.Second
	DefaultSeparator         = "__"
	DefaultStderrLineBytes   = 4096
	DefaultStopGrace         = 2 * time.Second
	DefaultMaxIdleConns      = 64
	MaxMaxIdleConns          = 10000
	DefaultInputSchemaBytes  = 256 << 10
	DefaultInputSchemaDepth  = 64
	DefaultInputErrors       = 8
	DefaultCallerSessions    = 1000
	MaxCallerSessions        = 100000
	DefaultCallerIdle        = 10 * time.Minute
	DefaultCallerRecordTTL   = time.Hour
)

// DefaultProtocolVersions are offered when a Config lists none, newest first.
var DefaultProtocolVersions = []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618}

func (c Config) withDefaults() Config {
	if len(c.ProtocolVersions) == 0 {
		c.ProtocolVersions = DefaultProtocolVersions
	}
	if c.Heartbeat.Interval == 0 {
		c.Heartbeat.Interval = DefaultHeartbeatInterval
	}
	if c.Heartbeat.Timeout == 0 {
		c.Heartbeat.Timeout = c.Heartbeat.Interval / 3
	}
	c.Restart = c.Restart.withDefaults()
	if c.Sessions == 0 {
		c.Sessions = 1
	}
	if c.QueueTimeout == 0 {
		c.QueueTimeout = DefaultQueueTimeout
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.Names.Mode == "" {
		c.Names.Mode = PrefixOnCollision
	}
	if c.Names.Prefix == "" {
		c.Names.Prefix = c.Name
	}
	if c.Names.Separator == "" {
		c.Names.Separator = DefaultSeparator
	}
	if c.Sampling == "" {
		c.Sampling = PolicyRefuse
	}
	if c.Elicitation == "" {
		c.Elicitation = PolicyRefuse
	}
	c.InputSchema = c.InputSchema.withDefaults()
	if c.SessionAffinity == "" {
		c.SessionAffinity = AffinityShared
	}
	c.CallerSessions = c.CallerSessions.withDefaults()
	if s := c.Stdio; s != nil {
		cp := *s
		if cp.StderrLineBytes == 0 {
			cp.StderrLineBytes = DefaultStderrLineBytes
		}
		if cp.StopGrace == 0 {
			cp.StopGrace = DefaultStopGrace
		}
		c.Stdio = &cp
	}
	return c
}

func (c InputSchemaConfig) withDefaults() InputSchemaConfig {
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultInputSchemaBytes
	}
	if c.MaxDepth == 0 {
		c.MaxDepth = DefaultInputSchemaDepth
	}
	if c.MaxErrors == 0 {
		c.MaxErrors = DefaultInputErrors
	}
	return c
}

func (c CallerSessionsConfig) withDefaults() CallerSessionsConfig {
	if c.Max == 0 {
		c.Max = DefaultCallerSessions
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultCallerIdle
	}
	if c.RecordTTL == 0 {
		c.RecordTTL = max(DefaultCallerRecordTTL, c.IdleTimeout)
	}
	return c
}

func (c CallerSessionsConfig) validate() error {
	switch {
	case c.Max < 0 || c.Max > MaxCallerSessions:
		return fmt.Errorf("caller_sessions: max must be between 1 and %d (0: the default, %d)", MaxCallerSessions, DefaultCallerSessions)
	case c.IdleTimeout < 0 || c.RecordTTL < 0:
		return errors.New("caller_sessions: idle_timeout and record_ttl must not be negative")
	case c.RecordTTL < c.IdleTimeout:
		return errors.New("caller_sessions: record_ttl must be at least idle_timeout")
	}
	return nil
}

func (b BackoffConfig) withDefaults() BackoffConfig {
	if b.Initial == 0 {
		b.Initial = DefaultRestartInitial
	}
	if b.Max == 0 {
		b.Max = max(DefaultRestartMax, b.Initial)
	}
	if b.Jitter == 0 {
		b.Jitter = DefaultRestartJitter
	}
	return b
}

// Validate checks one upstream's configuration (after defaults are applied to unset
// fields) for what the schema cannot.
func (c Config) Validate() error {
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return fmt.Errorf("mcp upstream %q: %w", c.Name, err)
	}
	return nil
}

func (c Config) validate() error {
	if !validName(c.Name) {
		return errors.New("name must be 1–64 letters, digits, '_' or '-'")
	}
	if err := c.validateTransport(); err != nil {
		return err
	}
	for _, v := range c.ProtocolVersions {
		if !mcp.IsValidProtocolVersion(v) {
			return fmt.Errorf("protocol_versions: %q is not a revision this gateway speaks (%s)", v, strings.Join(mcp.ValidProtocolVersions, ", "))
		}
	}
	if c.Heartbeat.Interval < 0 || c.Heartbeat.Timeout <= 0 || c.Heartbeat.Timeout >= c.Heartbeat.Interval {
		return errors.New("heartbeat: timeout must be positive and shorter than interval")
	}
	r := c.Restart
	if r.Initial < 0 || r.Max < r.Initial || r.Jitter < 0 || r.Jitter > 1 {
		return errors.New("restart: need 0 < initial ≤ max and jitter in [0, 1]")
	}
	if c.Sessions < 1 || c.MaxConcurrent < 0 || c.QueueTimeout < 0 || c.RequestTimeout < 0 || c.ConnectTimeout < 0 {
		return errors.New("sessions must be ≥ 1; max_concurrent and the timeouts must not be negative")
	}
	if err := c.Names.validate(); err != nil {
		return err
	}
	if i := c.InputSchema; i.MaxBytes < 0 || i.MaxDepth < 0 || i.MaxErrors < 0 {
		return errors.New("input_schema: max_bytes, max_depth and max_errors must not be negative")
	}
	if c.SessionAffinity != AffinityShared && c.SessionAffinity != AffinityCaller {
		return fmt.Errorf("session_affinity must be %s or %s", AffinityShared, AffinityCaller)
	}
	if err := c.CallerSessions.validate(); err != nil {
		return err
	}
	for _, p := range slices.Concat(c.Tools.Allow, c.Tools.Deny) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("tools: bad pattern %q", p)
		}
	}
	for _, r := range c.Roots {
		if u, err := url.Parse(r.URI); err != nil || u.Scheme != "file" {
			return fmt.Errorf("roots: %q is not a file:// URI", r.URI)
		}
	}
	for _, p := range []struct{ key, v string }{{"sampling", c.Sampling}, {"elicitation", c.Elicitation}} {
		if p.v != PolicyRefuse && p.v != PolicyClient && p.v != PolicyRoute {
			return fmt.Errorf("%s must be %s, %s or %s", p.key, PolicyRefuse, PolicyClient, PolicyRoute)
		}
	}
	if err := c.Tasks.validate(); err != nil {
		return err
	}
	return c.DownstreamToken.Validate()
}

// transportName names the upstream's transport: "stdio", "sse" or "http".
func (c Config) transportName() string {
	switch {
	case c.Stdio != nil:
		return "stdio"
	case c.SSE != nil:
		return "sse"
	default:
		return "http"
	}
}

func (c Config) validateTransport() error {
	n := 0
	for _, set := range []bool{c.Stdio != nil, c.SSE != nil, c.HTTP != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("needs exactly one of stdio, sse, http")
	}
	if c.Stdio != nil {
		if c.Stdio.Command == "" {
			return errors.New("stdio: command is required")
		}
		if c.Stdio.StderrLineBytes < 0 || c.Stdio.StopGrace < 0 {
			return errors.New("stdio: stderr_line_bytes and stop_grace must not be negative")
		}
		return nil
	}
	h := c.HTTP
	if h == nil {
		h = c.SSE
	}
	if h.MaxIdleConns < 0 || h.MaxIdleConns > MaxMaxIdleConns {
		return fmt.Errorf("max_idle_conns must be between 1 and %d (0: the default, %d)", MaxMaxIdleConns, DefaultMaxIdleConns)
	}
	if err := checkURL(h.URL, h.TLS != nil); err != nil {
		return err
	}
	for k := range h.Headers {
		// The routing headers mirror each request's body: a fixed value would disagree
		// with it, and a 2026-07-28 server must refuse the request.
		if strings.EqualFold(k, mcp.HeaderMethod) || strings.EqualFold(k, mcp.HeaderName) {
			return fmt.Errorf("headers: %s is set by the gateway from each request's body", k)
		}
	}
	return c.checkPlaintextHop(h)
}

// checkURL checks an endpoint URL: absolute http or https, and https when TLS is
// configured for it.
func checkURL(raw string, withTLS bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("url must be an absolute http:// or https:// URL")
	}
	if withTLS && u.Scheme != "https" {
		return errors.New("tls is set but the url is not https://")
	}
	return nil
}

func (n NamesConfig) validate() error {
	switch n.Mode {
	case PrefixAlways, PrefixOnCollision, PrefixNever:
	default:
		return fmt.Errorf("names: mode must be %s, %s or %s", PrefixAlways, PrefixOnCollision, PrefixNever)
	}
	if n.Mode != PrefixNever && (n.Separator == "" || strings.Trim(n.Separator, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != "") {
		return errors.New("names: separator must be made of letters, digits, '_', '-' and '.'")
	}
	return nil
}

// validName reports whether s is a usable upstream name.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == ""
}

// ValidateAll checks a list of upstreams: each one, duplicate names, and two upstreams
// that would prefix names identically. Tool-name collisions between upstreams whose
// names are not (or not always) prefixed cannot be known here: they depend on the
// catalogs the servers send, and are reported at run time (Bridge.Ready, the log, and the
// colliding tools unavailable).
func ValidateAll(cfgs []Config) error {
	var errs []error
	names := map[string]bool{}
	prefixes := map[string]string{}
	for _, c := range cfgs {
		if err := c.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if names[c.Name] {
			errs = append(errs, fmt.Errorf("mcp upstream %q is configured twice", c.Name))
		}
		names[c.Name] = true
		d := c.withDefaults()
		if d.Names.Mode == PrefixNever {
			continue
		}
		key := d.Names.Prefix + d.Names.Separator
		if other, ok := prefixes[key]; ok {
			errs = append(errs, fmt.Errorf("mcp upstreams %q and %q share the name prefix %q", other, c.Name, key))
		}
		prefixes[key] = c.Name
	}
	return errors.Join(errs...)
}

// RouteConfig is the backend that answers the requests of upstreams whose policy is
// "route" (routing.mcp.sampling_backend, routing.mcp.elicitation_backend). Exactly one of
// HTTP and Method is set. NewRouteBackends builds the handler from it.
type RouteConfig struct {
	// HTTP posts each request's params as JSON to an endpoint; a 2xx body is the result.
	HTTP *RouteHTTPConfig `yaml:"http" json:"http,omitempty"`
	// Method runs a JSON-RPC method through the gateway's pipeline as an internal call,
	// with the request's params as its params and its result as the result: any routed
	// method, a gRPC backend's among them.
	Method string `yaml:"method" json:"method,omitempty"`
}

// RouteHTTPConfig is an HTTP endpoint answering sampling or elicitation requests.
type RouteHTTPConfig struct {
	// URL is the endpoint, an absolute http:// or https:// URL.
	URL string `yaml:"url" json:"url"`
	// Headers are sent with every request (e.g. Authorization: "Bearer ${TOKEN}").
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// TLS configures transport security for https URLs (default: system roots).
	TLS *TLSConfig `yaml:"tls" json:"tls,omitempty"`
	// Timeout bounds one exchange (default 30s; the upstream's request_timeout bounds it
	// too).
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
	// MaxResponseBytes bounds the response body (default 4 MiB).
	MaxResponseBytes int64 `yaml:"max_response_bytes" json:"max_response_bytes,omitempty"`
}

// Defaults of a RouteHTTPConfig.
const (
	DefaultRouteTimeout          = 30 * time.Second
	DefaultRouteMaxResponseBytes = 4 << 20
)

// WithDefaults returns c with unset fields set to their defaults.
func (c RouteHTTPConfig) WithDefaults() RouteHTTPConfig {
	if c.Timeout == 0 {
		c.Timeout = DefaultRouteTimeout
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultRouteMaxResponseBytes
	}
	return c
}

// Validate checks a route backend.
func (c RouteConfig) Validate() error {
	switch {
	case (c.HTTP == nil) == (c.Method == ""):
		return errors.New("needs exactly one of http, method")
	case c.HTTP == nil:
		return nil
	}
	h := c.HTTP
	if err := checkURL(h.URL, h.TLS != nil); err != nil {
		return fmt.Errorf("http: %w", err)
	}
	if h.Timeout < 0 || h.MaxResponseBytes < 0 {
		return errors.New("http: timeout and max_response_bytes must not be negative")
	}
	return nil
}

// ValidateRoutes checks the route backends against the upstreams: each configured one
// is valid, and every upstream whose sampling or elicitation policy is "route" has its
// backend.
func ValidateRoutes(cfgs []Config, sampling, elicitation *RouteConfig) error {
	var errs []error
	for _, r := range []struct {
		key string
		cfg *RouteConfig
	}{{"sampling_backend", sampling}, {"elicitation_backend", elicitation}} {
		if r.cfg != nil {
			if err := r.cfg.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", r.key, err))
			}
		}
	}
	for _, c := range cfgs {
		if c.Sampling == PolicyRoute && sampling == nil {
			errs = append(errs, fmt.Errorf("mcp upstream %q: sampling is %s but sampling_backend is not set", c.Name, PolicyRoute))
		}
		if c.Elicitation == PolicyRoute && elicitation == nil {
			errs = append(errs, fmt.Errorf("mcp upstream %q: elicitation is %s but elicitation_backend is not set", c.Name, PolicyRoute))
		}
	}
	return errors.Join(errs...)
}

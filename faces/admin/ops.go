package admin

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/routing/nekte"
)

// Operations is what the operator methods (admin.status, admin.backends, admin.catalog,
// admin.tasks.*, admin.errors.recent, admin.config.reload) and the console read and do.
// The server implements it beside Gateway; a Gateway that does not answers those methods
// with METHOD_NOT_FOUND and serves no console.
type Operations interface {
	// OperatorScope is the scope a caller of the operator methods and the console's
	// events must hold (server.admin.operator_scope).
	OperatorScope() string
	// Console is the console's settings (server.admin.console), read at start.
	Console() ConsoleConfig
	// Status is what admin.status reports.
	Status() Status
	// Backends is what admin.backends reports, but for the samples (Window).
	Backends(ctx context.Context) []Backend
	// Window is the metrics' window of recent calls and errors; nil when metrics are off.
	Window() *observability.Window
	// Catalog answers admin.catalog: the current configuration's capabilities at level
	// (0, 1 or 2) — all of them, or as the caller as would see them when as is set; the
	// result is nekte.discover's.
	Catalog(level int, as *gateway.Principal) (json.RawMessage, error)
	// Tasks is the NEKTE service the admin.tasks.* methods act on; nil without NEKTE.
	Tasks() OperatorTasks
	// ReloadConfig reloads the configuration file, as SIGHUP does.
	ReloadConfig() error
}

// OperatorTasks is the operator's view of NEKTE tasks across callers
// (routing/nekte.Service).
type OperatorTasks interface {
	OperatorTasks(ctx context.Context, status nk.TaskStatus) ([]nekte.TaskView, error)
	OperatorCancel(ctx context.Context, id, reason string) (nk.TaskLifecycleResult, error)
	OperatorResume(ctx context.Context, id string) (nk.TaskLifecycleResult, error)
}

// ConsoleConfig is the console's settings (server.admin.console).
type ConsoleConfig struct {
	// Enabled serves GET /console and /console/events (default false: 404).
	Enabled bool `yaml:"enabled" json:"enabled,omitempty"`
	// JaegerURL is the base URL of the Jaeger UI the trace ids of recent errors link to
	// (<jaeger_url>/trace/<trace id>); empty: no link.
	JaegerURL string `yaml:"jaeger_url" json:"jaeger_url,omitempty"`
	// EventsInterval is how often /console/events sends a snapshot (default 2s).
	EventsInterval time.Duration `yaml:"events_interval" json:"events_interval,omitempty"`
	// MaxEventStreams bounds the /console/events streams open at once (default 16); past
	// it a stream is refused with 503.
	MaxEventStreams int `yaml:"max_event_streams" json:"max_event_streams,omitempty"`
	// WindowBucket and WindowBuckets shape each backend's samples for admin.backends and
	// the charts (default 10s × 30: the last 5 minutes); RecentErrors bounds the ring of
	// admin.errors.recent (default 200). They apply whether the console is on or not.
	WindowBucket  time.Duration `yaml:"window_bucket" json:"window_bucket,omitempty"`
	WindowBuckets int           `yaml:"window_buckets" json:"window_buckets,omitempty"`
	RecentErrors  int           `yaml:"recent_errors" json:"recent_errors,omitempty"`
	// RecentTasks bounds the tasks admin.tasks.list shows: the most recent this process
	// created (default 256). The state store cannot list keys, so each replica shows its
	// own.
	RecentTasks int `yaml:"recent_tasks" json:"recent_tasks,omitempty"`
}

// Defaults of the console's settings.
const (
	DefaultEventsInterval  = 2 * time.Second
	DefaultMaxEventStreams = 16
	// DefaultOperatorScope is server.admin.operator_scope's default.
	DefaultOperatorScope = "admin.operator"
)

// WithDefaults returns c with every zero limit set to its default.
func (c ConsoleConfig) WithDefaults() ConsoleConfig {
	c.EventsInterval = cmp.Or(c.EventsInterval, DefaultEventsInterval)
	c.MaxEventStreams = cmp.Or(c.MaxEventStreams, DefaultMaxEventStreams)
	c.WindowBucket = cmp.Or(c.WindowBucket, observability.DefaultWindowBucket)
	c.WindowBuckets = cmp.Or(c.WindowBuckets, observability.DefaultWindowBuckets)
	c.RecentErrors = cmp.Or(c.RecentErrors, observability.DefaultRecentErrors)
	c.RecentTasks = cmp.Or(c.RecentTasks, nekte.DefaultRecentTasks)
	return c
}

// Validate reports the first setting out of range, by its key under server.admin.console.
func (c ConsoleConfig) Validate() error {
	switch {
	case c.EventsInterval < 0 || (c.EventsInterval > 0 && c.EventsInterval < 100*time.Millisecond):
		return fmt.Errorf("events_interval: must be at least 100ms")
	case c.MaxEventStreams < 0:
		return fmt.Errorf("max_event_streams: must not be negative")
	case c.WindowBucket < 0 || (c.WindowBucket > 0 && c.WindowBucket < time.Second):
		return fmt.Errorf("window_bucket: must be at least 1s")
	case c.WindowBuckets < 0 || c.WindowBuckets > 1440:
		return fmt.Errorf("window_buckets: must be between 1 and 1440")
	case c.RecentErrors < 0 || c.RecentErrors > 100000:
		return fmt.Errorf("recent_errors: must be between 1 and 100000")
	case c.RecentTasks < 0 || c.RecentTasks > 100000:
		return fmt.Errorf("recent_tasks: must be between 1 and 100000")
	}
	if c.JaegerURL != "" {
		u, err := url.Parse(c.JaegerURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("jaeger_url: must be an http or https URL")
		}
	}
	return nil
}

// Status is the result of admin.status.
type Status struct {
	Version string `json:"version"`
	// StartedAt is when the process started serving (Unix ms; 0 while starting).
	StartedAt int64 `json:"started_at"`
	// Config is the configuration in force.
	Config ConfigStatus `json:"config"`
	// Listeners are the process's listeners.
	Listeners []Listener `json:"listeners"`
	// Faces are the protocol faces, on or off in the configuration in force.
	Faces []FaceStatus `json:"faces"`
}

// ConfigStatus is the configuration in force and how its last reload went.
type ConfigStatus struct {
	// File is the configuration file ("" for a configuration not read from a file).
	File string `json:"file,omitempty"`
	// Hash is the SHA-256 of the file's content as last loaded (hex); Version its first 12
	// digits.
	Hash    string `json:"hash,omitempty"`
	Version string `json:"version,omitempty"`
	// LastReload is the last reload, nil when there was none.
	LastReload *ReloadStatus `json:"last_reload,omitempty"`
}

// ReloadStatus is one reload's outcome.
type ReloadStatus struct {
	// At is when it ended (Unix ms).
	At int64 `json:"at"`
	OK bool  `json:"ok"`
	// Error is why it was refused.
	Error string `json:"error,omitempty"`
}

// Listener is one listener.
type Listener struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	// TLS is on; ClientCerts when it asks for client certificates (mTLS).
	TLS         bool `json:"tls"`
	ClientCerts bool `json:"client_certs,omitempty"`
}

// FaceStatus is one protocol face.
type FaceStatus struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	// Where it is served (a path or a listener).
	Where string `json:"where,omitempty"`
}

// Backend is one backend as admin.backends reports it.
type Backend struct {
	Name string `json:"name"`
	// Kind is "grpc", "mcp", "agent" or "builtin".
	Kind string `json:"kind"`
	// Up is its health; Reason why it is down.
	Up     bool   `json:"up"`
	Reason string `json:"reason,omitempty"`
	// Breaker is its breaker's state ("closed", "open", "half-open"; "" without a
	// breaker), RetryAfterMs the time until an open one lets probes through.
	Breaker      string `json:"breaker,omitempty"`
	RetryAfterMs int64  `json:"retry_after_ms,omitempty"`
	// QueueDepth is the calls waiting in its admission queue; Shedding is set while it
	// refuses calls (its queue past twice its bound, or its breaker open).
	QueueDepth int  `json:"queue_depth"`
	Shedding   bool `json:"shedding"`
}

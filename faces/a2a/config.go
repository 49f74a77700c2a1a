package a2aface

import (
	"errors"
	"fmt"
	"time"
)

// Config is the a2a section; absent, the A2A face is off (its paths answer 404).
type Config struct {
	// ServeV03 serves the 0.3 method names and spellings to requests without A2A-Version
	// (or with 0.3); false refuses them with VersionNotSupported. Default true.
	ServeV03 *bool `yaml:"serve_v03" json:"serve_v03,omitempty"`
	// GRPC serves the gRPC binding (lf.a2a.v1.A2AService) on the internal gRPC listener
	// (server.internal); false answers its RPCs UNIMPLEMENTED. Default true.
	GRPC *bool `yaml:"grpc" json:"grpc,omitempty"`
	// DefaultSkill is the capability a message runs when its metadata names no skill;
	// empty, such a message is refused.
	DefaultSkill string `yaml:"default_skill" json:"default_skill,omitempty"`
	// Name, Description and Version are the agent card's.
	Name        string `yaml:"name" json:"name,omitempty"`
	Description string `yaml:"description" json:"description,omitempty"`
	Version     string `yaml:"version" json:"version,omitempty"`
	// Endpoint is the URL the card announces for the JSON-RPC interface, when the boundary
	// sits behind a proxy; empty, the request's origin + /a2a.
	Endpoint string `yaml:"endpoint" json:"endpoint,omitempty"`
	// MaxTasksPerPrincipal bounds the tasks one caller (issuer and subject) holds at once;
	// a task counts until its record expires (TaskTTL).
	MaxTasksPerPrincipal int `yaml:"max_tasks_per_principal" json:"max_tasks_per_principal,omitempty"`
	// TaskTTL is how long a task's record (its binding, its message) is kept after its
	// creation.
	TaskTTL time.Duration `yaml:"task_ttl" json:"task_ttl,omitempty"`
	// MaxHistory bounds the messages a task's history returns.
	MaxHistory int `yaml:"max_history" json:"max_history,omitempty"`
	// MaxMessageBytes bounds a request body of POST /a2a.
	MaxMessageBytes int64 `yaml:"max_message_bytes" json:"max_message_bytes,omitempty"`
	// MaxParts bounds the parts of one message.
	MaxParts int `yaml:"max_parts" json:"max_parts,omitempty"`
	// PageSize is ListTasks' page size when the caller names none; MaxPageSize bounds
	// the one it names.
	PageSize    int `yaml:"page_size" json:"page_size,omitempty"`
	MaxPageSize int `yaml:"max_page_size" json:"max_page_size,omitempty"`
	// SSEIdleTimeout ends an event stream on which nothing was sent for this long (the
	// client re-attaches with SubscribeToTask); SSEWriteTimeout bounds writing one event.
	SSEIdleTimeout  time.Duration `yaml:"sse_idle_timeout" json:"sse_idle_timeout,omitempty"`
	SSEWriteTimeout time.Duration `yaml:"sse_write_timeout" json:"sse_write_timeout,omitempty"`
	// Push configures push notifications; absent or not enabled, the push-notification
	// config operations are refused (PushNotificationNotSupported).
	Push *PushConfig `yaml:"push" json:"push,omitempty"`
	// Card configures the agent card.
	Card CardConfig `yaml:"card" json:"card,omitzero"`
}

// CardConfig configures the agent card.
type CardConfig struct {
	// Sign signs the card (public and extended) with the gateway's key ring
	// (auth.keyring): a JWS over its RFC 8785 canonical JSON in signatures[].
	Sign bool `yaml:"sign" json:"sign,omitempty"`
}

// PushConfig is the a2a.push section: webhooks a task's updates are posted to.
type PushConfig struct {
	// Enabled turns push notifications on (they also need auth.keyring, which signs
	// each delivery). Default false.
	Enabled bool `yaml:"enabled" json:"enabled,omitempty"`
	// AllowedHosts, when set, are the only host names a webhook URL may have: exact
	// names, or "*.example.com" for the names under example.com.
	AllowedHosts []string `yaml:"allowed_hosts" json:"allowed_hosts,omitempty"`
	// AllowedCIDRs are address ranges a webhook may reach although they are special
	// (loopback, private, link-local, CGNAT …), which are refused otherwise. The
	// resolved address is checked when the connection is dialled.
	AllowedCIDRs []string `yaml:"allowed_cidrs" json:"allowed_cidrs,omitempty"`
	// AllowHTTP allows http:// webhooks; otherwise only https:// ones.
	AllowHTTP bool `yaml:"allow_http" json:"allow_http,omitempty"`
	// MaxAttempts bounds the attempts of one delivery (the first included).
	MaxAttempts int `yaml:"max_attempts" json:"max_attempts,omitempty"`
	// Timeout bounds one attempt (connection, request and response headers).
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
	// Backoff is the wait before the second attempt; it doubles each attempt, up to
	// MaxBackoff, with jitter.
	Backoff    time.Duration `yaml:"backoff" json:"backoff,omitempty"`
	MaxBackoff time.Duration `yaml:"max_backoff" json:"max_backoff,omitempty"`
	// MaxQueue bounds the deliveries waiting in this process (retries included); one
	// more is dropped, counted and logged, never waited for.
	MaxQueue int `yaml:"max_queue" json:"max_queue,omitempty"`
	// Workers is the number of deliveries made at once by this process.
	Workers int `yaml:"workers" json:"workers,omitempty"`
	// MaxConfigsPerTask bounds the webhooks of one task.
	MaxConfigsPerTask int `yaml:"max_configs_per_task" json:"max_configs_per_task,omitempty"`
	// MaxWatchedTasks bounds the tasks this process follows for their webhooks at once;
	// a config for one more task is refused.
	MaxWatchedTasks int `yaml:"max_watched_tasks" json:"max_watched_tasks,omitempty"`
	// TokenTTL is the lifetime of the JWT each delivery carries (at most the key ring's
	// max_token_ttl).
	TokenTTL time.Duration `yaml:"token_ttl" json:"token_ttl,omitempty"`
}

// Defaults of the a2a.push section.
const (
	DefaultPushMaxAttempts       = 5
	DefaultPushTimeout           = 10 * time.Second
	DefaultPushBackoff           = 500 * time.Millisecond
	DefaultPushMaxBackoff        = 30 * time.Second
	DefaultPushMaxQueue          = 1000
	DefaultPushWorkers           = 4
	DefaultPushMaxConfigsPerTask = 10
	DefaultPushMaxWatchedTasks   = 1000
	DefaultPushTokenTTL          = 5 * time.Minute
)

// WithDefaults returns c with every zero field set to its default.
func (c PushConfig) WithDefaults() PushConfig {
	def(&c.MaxAttempts, DefaultPushMaxAttempts)
	def(&c.Timeout, DefaultPushTimeout)
	def(&c.Backoff, DefaultPushBackoff)
	def(&c.MaxBackoff, DefaultPushMaxBackoff)
	def(&c.MaxQueue, DefaultPushMaxQueue)
	def(&c.Workers, DefaultPushWorkers)
	def(&c.MaxConfigsPerTask, DefaultPushMaxConfigsPerTask)
	def(&c.MaxWatchedTasks, DefaultPushMaxWatchedTasks)
	def(&c.TokenTTL, DefaultPushTokenTTL)
	return c
}

// Validate reports the keys of c that are out of range.
func (c PushConfig) Validate() error {
	var errs []error
	for key, bad := range map[string]bool{
		"max_attempts": c.MaxAttempts < 0, "timeout": c.Timeout < 0, "backoff": c.Backoff < 0,
		"max_backoff": c.MaxBackoff < 0, "max_queue": c.MaxQueue < 0, "workers": c.Workers < 0,
		"max_configs_per_task": c.MaxConfigsPerTask < 0, "max_watched_tasks": c.MaxWatchedTasks < 0,
		"token_ttl": c.TokenTTL < 0,
	} {
		if bad {
			errs = append(errs, fmt.Errorf("a2a.push.%s must not be negative", key))
		}
	}
	if _, err := newGuard(&c); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Defaults of the a2a section.
const (
	DefaultMaxTasksPerPrincipal = 100
	DefaultTaskTTL              = 24 * time.Hour
	DefaultMaxHistory           = 20
	DefaultMaxMessageBytes      = 256 << 10
	DefaultMaxParts             = 64
	DefaultPageSize             = 50
	DefaultMaxPageSize          = 100
	DefaultSSEIdleTimeout       = 5 * time.Minute
	DefaultSSEWriteTimeout      = 10 * time.Second
	DefaultName                 = "gatehouse"
	DefaultDescription          = "The Gatehouse gateway: each capability of its catalog as a skill."
)

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.ServeV03 == nil {
		on := true
		c.ServeV03 = &on
	}
	if c.GRPC == nil {
		on := true
		c.GRPC = &on
	}
	def(&c.MaxTasksPerPrincipal, DefaultMaxTasksPerPrincipal)
	def(&c.TaskTTL, DefaultTaskTTL)
	def(&c.MaxHistory, DefaultMaxHistory)
	def(&c.MaxMessageBytes, DefaultMaxMessageBytes)
	def(&c.MaxParts, DefaultMaxParts)
	def(&c.PageSize, DefaultPageSize)
	def(&c.MaxPageSize, DefaultMaxPageSize)
	def(&c.SSEIdleTimeout, DefaultSSEIdleTimeout)
	def(&c.SSEWriteTimeout, DefaultSSEWriteTimeout)
	def(&c.Name, DefaultName)
	def(&c.Description, DefaultDescription)
	if c.Push != nil {
		p := c.Push.WithDefaults()
		c.Push = &p
	}
	return c
}

// Validate reports the first key of c that is out of range.
func (c Config) Validate() error {
	var errs []error
	neg := func(key string, bad bool) {
		if bad {
			errs = append(errs, fmt.Errorf("a2a.%s must not be negative", key))
		}
	}
	neg("max_tasks_per_principal", c.MaxTasksPerPrincipal < 0)
	neg("task_ttl", c.TaskTTL < 0)
	neg("max_history", c.MaxHistory < 0)
	neg("max_message_bytes", c.MaxMessageBytes < 0)
	neg("max_parts", c.MaxParts < 0)
	neg("page_size", c.PageSize < 0)
	neg("max_page_size", c.MaxPageSize < 0)
	neg("sse_idle_timeout", c.SSEIdleTimeout < 0)
	neg("sse_write_timeout", c.SSEWriteTimeout < 0)
	if c.Push != nil {
		errs = append(errs, c.Push.Validate())
	}
	if d := c.WithDefaults(); d.PageSize > d.MaxPageSize {
		errs = append(errs, fmt.Errorf("a2a.page_size (%d) must not exceed a2a.max_page_size (%d)", d.PageSize, d.MaxPageSize))
	}
	return errors.Join(errs...)
}

func def[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

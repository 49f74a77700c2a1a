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

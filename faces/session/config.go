package session

import (
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/routing/sessionrpc"
)

// Config is the session section: it enables session RPC at GET /session (WebSocket) and
// under /session/ (HTTP+SSE). Every limit has a default (WithDefaults).
type Config struct {
	// Routes say where requests run; ?route=<name> selects one, the first is the default.
	Routes []sessionrpc.RouteConfig `yaml:"routes" json:"routes"`
	// MaxQueued bounds the requests waiting behind the running one on one connection (one
	// session id over SSE); past it a chat.start is answered chat.error "queue_full".
	MaxQueued int `yaml:"max_queued" json:"max_queued,omitempty"`
	// MaxTasks bounds the tasks a connection (session) remembers for task.status; the
	// oldest finished ones are forgotten first. It must exceed MaxQueued.
	MaxTasks int `yaml:"max_tasks" json:"max_tasks,omitempty"`
	// MaxMessageBytes bounds one client message (default: jsonrpc.max_body_bytes).
	MaxMessageBytes int64 `yaml:"max_message_bytes" json:"max_message_bytes,omitempty"`
	// RequestTimeout bounds one request from its start (at most deadline.max).
	RequestTimeout time.Duration `yaml:"request_timeout" json:"request_timeout,omitempty"`
	// PingInterval is how often the server pings a WebSocket peer (and writes an SSE comment
	// on an idle event stream); a WebSocket peer silent for PingInterval+PongTimeout is
	// disconnected.
	PingInterval time.Duration `yaml:"ping_interval" json:"ping_interval,omitempty"`
	PongTimeout  time.Duration `yaml:"pong_timeout" json:"pong_timeout,omitempty"`
	// WriteTimeout bounds writing one message.
	WriteTimeout time.Duration `yaml:"write_timeout" json:"write_timeout,omitempty"`
	// SendQueue and SendQueueBytes bound what waits to be written to one consumer (a
	// WebSocket connection, an event stream); a producer waits for room up to half
	// WriteTimeout, then the consumer is cut off as too slow.
	SendQueue      int   `yaml:"send_queue" json:"send_queue,omitempty"`
	SendQueueBytes int64 `yaml:"send_queue_bytes" json:"send_queue_bytes,omitempty"`
	// ReadBufferBytes and WriteBufferBytes are the WebSocket frame buffers (as websocket.*).
	ReadBufferBytes  int `yaml:"read_buffer_bytes" json:"read_buffer_bytes,omitempty"`
	WriteBufferBytes int `yaml:"write_buffer_bytes" json:"write_buffer_bytes,omitempty"`
	// SessionIdle is how long an HTTP+SSE session with nothing queued or running is kept
	// (its task states with it).
	SessionIdle time.Duration `yaml:"session_idle" json:"session_idle,omitempty"`
	// MaxSessions bounds the HTTP+SSE sessions one principal holds at once.
	MaxSessions int `yaml:"max_sessions" json:"max_sessions,omitempty"`
	// AllowedOrigins lists the browser origins allowed to open the WebSocket; "*" allows
	// any. Requests without Origin, and same-host origins, are always allowed.
	AllowedOrigins []string `yaml:"allowed_origins" json:"allowed_origins,omitempty"`
}

// Defaults of the session section.
const (
	DefaultMaxQueued        = 16
	DefaultMaxTasks         = 256
	DefaultRequestTimeout   = 5 * time.Minute
	DefaultPingInterval     = 20 * time.Second
	DefaultPongTimeout      = 10 * time.Second
	DefaultWriteTimeout     = 10 * time.Second
	DefaultSendQueue        = 256
	DefaultSendQueueBytes   = 1 << 20
	DefaultReadBufferBytes  = 512
	DefaultWriteBufferBytes = 4096
	DefaultSessionIdle      = 5 * time.Minute
	DefaultMaxSessions      = 64
)

// WithDefaults returns c with every zero limit set to its default; maxBody is
// jsonrpc.max_body_bytes, the default of max_message_bytes.
func (c Config) WithDefaults(maxBody int64) Config {
	setDefault(&c.MaxQueued, DefaultMaxQueued)
	setDefault(&c.MaxTasks, max(DefaultMaxTasks, c.MaxQueued+1))
	setDefault(&c.MaxMessageBytes, maxBody)
	setDefault(&c.RequestTimeout, DefaultRequestTimeout)
	setDefault(&c.PingInterval, DefaultPingInterval)
	setDefault(&c.PongTimeout, DefaultPongTimeout)
	setDefault(&c.WriteTimeout, DefaultWriteTimeout)
	setDefault(&c.SendQueue, DefaultSendQueue)
	setDefault(&c.SendQueueBytes, DefaultSendQueueBytes)
	setDefault(&c.ReadBufferBytes, DefaultReadBufferBytes)
	setDefault(&c.WriteBufferBytes, DefaultWriteBufferBytes)
	setDefault(&c.SessionIdle, DefaultSessionIdle)
	setDefault(&c.MaxSessions, DefaultMaxSessions)
	return c
}

// Validate checks what the schema cannot: the routes, and max_tasks above max_queued (a
// connection must be able to remember every request it holds).
func (c Config) Validate() error {
	if len(c.Routes) == 0 {
		return errors.New("routes: at least one route is required")
	}
	if err := sessionrpc.ValidateRoutes(c.Routes); err != nil {
		return fmt.Errorf("routes: %w", err)
	}
	if c.MaxTasks <= c.MaxQueued {
		return fmt.Errorf("max_tasks (%d) must exceed max_queued (%d)", c.MaxTasks, c.MaxQueued)
	}
	if c.ReadBufferBytes < 125 {
		return errors.New("read_buffer_bytes must be at least 125 (a control frame's payload)")
	}
	return nil
}

// route returns the route named name, the first when name is empty.
func (c *Config) route(name string) (sessionrpc.RouteConfig, bool) {
	if name == "" && len(c.Routes) > 0 {
		return c.Routes[0], true
	}
	for _, r := range c.Routes {
		if r.Name == name {
			return r, true
		}
	}
	return sessionrpc.RouteConfig{}, false
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

package ws

import "time"

// Config is the websocket section: it enables JSON-RPC over WebSocket at GET /ws.
type Config struct {
	// MaxInFlight bounds the requests one connection may have running; past it a request is
	// answered at once with OVERLOADED.
	MaxInFlight int `yaml:"max_in_flight" json:"max_in_flight,omitempty"`
	// MaxMessageBytes bounds one message (default: jsonrpc.max_body_bytes).
	MaxMessageBytes int64 `yaml:"max_message_bytes" json:"max_message_bytes,omitempty"`
	// PingInterval is how often the server pings; a peer silent for PingInterval+PongTimeout
	// is disconnected.
	PingInterval time.Duration `yaml:"ping_interval" json:"ping_interval,omitempty"`
	PongTimeout  time.Duration `yaml:"pong_timeout" json:"pong_timeout,omitempty"`
	// WriteTimeout bounds writing one message.
	WriteTimeout time.Duration `yaml:"write_timeout" json:"write_timeout,omitempty"`
	// SendQueue is how many responses may wait to be written; a response that finds the
	// queue full waits for room up to half WriteTimeout, and a consumer whose queue stays
	// full that long is disconnected as too slow.
	SendQueue int `yaml:"send_queue" json:"send_queue,omitempty"`
	// SendQueueBytes bounds the bytes waiting to be written as SendQueue bounds the
	// messages. One message larger than the bound is still queued when nothing else is.
	SendQueueBytes int64 `yaml:"send_queue_bytes" json:"send_queue_bytes,omitempty"`
	// InputQueue bounds the messages a client-streaming call may have waiting ($/stream/send);
	// past it the call fails with OVERLOADED.
	InputQueue int `yaml:"input_queue" json:"input_queue,omitempty"`
	// ReadBufferBytes is the buffer a connection reads frames through, held for as long as
	// it is open, idle or not (at least 125 bytes, a control frame's payload); a message
	// larger than the buffer is read into its own memory past it.
	ReadBufferBytes int `yaml:"read_buffer_bytes" json:"read_buffer_bytes,omitempty"`
	// WriteBufferBytes is the buffer a message is framed in, borrowed from a pool shared by
	// the connections while the message is written and returned after; a longer message is
	// sent in frames of this size.
	WriteBufferBytes int `yaml:"write_buffer_bytes" json:"write_buffer_bytes,omitempty"`
	// AllowedOrigins lists the browser origins allowed to connect; "*" allows any. Requests
	// without an Origin header (non-browser clients) are always allowed.
	AllowedOrigins []string `yaml:"allowed_origins" json:"allowed_origins,omitempty"`
}

// Defaults of the websocket section.
const (
	DefaultMaxInFlight      = 64
	DefaultPingInterval     = 20 * time.Second
	DefaultPongTimeout      = 10 * time.Second
	DefaultWriteTimeout     = 10 * time.Second
	DefaultSendQueue        = 256
	DefaultInputQueue       = 64
	DefaultSendQueueBytes   = 1 << 20
	DefaultReadBufferBytes  = 512
	DefaultWriteBufferBytes = 4096
)

// WithDefaults returns c with every zero field set to its default; maxBody is
// jsonrpc.max_body_bytes, the default of max_message_bytes.
func (c Config) WithDefaults(maxBody int64) Config {
	setDefault(&c.MaxInFlight, DefaultMaxInFlight)
	setDefault(&c.MaxMessageBytes, maxBody)
	setDefault(&c.PingInterval, DefaultPingInterval)
	setDefault(&c.PongTimeout, DefaultPongTimeout)
	setDefault(&c.WriteTimeout, DefaultWriteTimeout)
	setDefault(&c.SendQueue, DefaultSendQueue)
	setDefault(&c.InputQueue, DefaultInputQueue)
	setDefault(&c.SendQueueBytes, DefaultSendQueueBytes)
	setDefault(&c.ReadBufferBytes, DefaultReadBufferBytes)
	setDefault(&c.WriteBufferBytes, DefaultWriteBufferBytes)
	return c
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

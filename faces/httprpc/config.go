package httprpc

import "time"

// SSEConfig is the sse section: it bounds each event stream of the JSON-RPC face over HTTP
// (a streamed result, progress, a stream of named events). What waits to be written is
// bounded in events and bytes, and a consumer whose queue stays full for half
// server.boundary.write_timeout (the bound on writing one event) is cut off as too slow,
// after a final "error" event when it can still be written. It always applies, with
// defaults when absent.
type SSEConfig struct {
	// SendQueue is how many events may wait to be written.
	SendQueue int `yaml:"send_queue" json:"send_queue,omitempty"`
	// SendQueueBytes bounds their bytes; one event larger than the bound is still queued
	// when nothing else is.
	SendQueueBytes int64 `yaml:"send_queue_bytes" json:"send_queue_bytes,omitempty"`
}

// Defaults of the sse section.
const (
	DefaultSSESendQueue      = 256
	DefaultSSESendQueueBytes = 1 << 20
)

// WithDefaults returns c with every zero field set to its default.
func (c SSEConfig) WithDefaults() SSEConfig {
	if c.SendQueue == 0 {
		c.SendQueue = DefaultSSESendQueue
	}
	if c.SendQueueBytes == 0 {
		c.SendQueueBytes = DefaultSSESendQueueBytes
	}
	return c
}

// Settings are what the face needs of one configuration beyond its pipeline.
type Settings struct {
	// SSE bounds the event streams.
	SSE SSEConfig
	// WriteTimeout is server.boundary.write_timeout: how long writing a response (or one
	// event) may take once the call's deadline passed.
	WriteTimeout time.Duration
	// RateLimits says the rate-limit stage is in the chain: responses carry RateLimit and
	// RateLimit-Policy headers.
	RateLimits bool
	// Idempotency says the idempotency stage is in the chain.
	Idempotency bool
}

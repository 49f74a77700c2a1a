package mcpface

import (
	"fmt"
	"time"
)

// MRTRConfig is mcp_face.mrtr: how the face holds the upstream calls that asked a caller of
// protocol 2026-07-28 for input (a multi round-trip request) until the caller retries.
type MRTRConfig struct {
	// ParkedTimeout is how long a call that asked its caller for input waits for the retry
	// carrying the answers (default DefaultMRTRParkedTimeout; 0 or absent: the default). At
	// the end the upstream's request gets an error answer and its call is cancelled; the
	// requestState expires with it.
	ParkedTimeout time.Duration `yaml:"parked_timeout" json:"parked_timeout,omitempty"`
	// MaxParked bounds the calls one process holds waiting for their caller's answers
	// (default DefaultMRTRMaxParked; 0 or absent: the default). An upstream request that
	// would park one more is answered with an error instead.
	MaxParked int `yaml:"max_parked" json:"max_parked,omitempty"`
	// ForwardTimeout bounds the wait of a retry that reached another replica than the one
	// holding the call for a word from that replica (its acknowledgement, then one at least
	// every third of it while the call runs): past it, the call is taken as lost (default
	// DefaultMRTRForwardTimeout; 0 or absent: the default).
	ForwardTimeout time.Duration `yaml:"forward_timeout" json:"forward_timeout,omitempty"`
}

const (
	// DefaultMRTRParkedTimeout is mcp_face.mrtr.parked_timeout's default.
	DefaultMRTRParkedTimeout = 60 * time.Second
	// DefaultMRTRMaxParked is mcp_face.mrtr.max_parked's default.
	DefaultMRTRMaxParked = 1024
	// DefaultMRTRForwardTimeout is mcp_face.mrtr.forward_timeout's default.
	DefaultMRTRForwardTimeout = 5 * time.Second
	// minMRTRForwardTimeout is the shortest forward_timeout accepted: the owner's word
	// comes every third of it.
	minMRTRForwardTimeout = 30 * time.Millisecond
)

// parkedTimeout is ParkedTimeout with its default.
func (c MRTRConfig) parkedTimeout() time.Duration {
	if c.ParkedTimeout <= 0 {
		return DefaultMRTRParkedTimeout
	}
	return c.ParkedTimeout
}

// maxParked is MaxParked with its default.
func (c MRTRConfig) maxParked() int {
	if c.MaxParked <= 0 {
		return DefaultMRTRMaxParked
	}
	return c.MaxParked
}

// forwardTimeout is ForwardTimeout with its default.
func (c MRTRConfig) forwardTimeout() time.Duration {
	if c.ForwardTimeout <= 0 {
		return DefaultMRTRForwardTimeout
	}
	return c.ForwardTimeout
}

// Validate refuses negative bounds and a forward_timeout too short to be met (0 or
// absent: the defaults).
func (c MRTRConfig) Validate() error {
	switch {
	case c.ParkedTimeout < 0:
		return fmt.Errorf("parked_timeout must not be negative (got %v; 0 or absent: the default, %v)", c.ParkedTimeout, DefaultMRTRParkedTimeout)
	case c.MaxParked < 0:
		return fmt.Errorf("max_parked must not be negative (got %d; 0 or absent: the default, %d)", c.MaxParked, DefaultMRTRMaxParked)
	case c.ForwardTimeout < 0:
		return fmt.Errorf("forward_timeout must not be negative (got %v; 0 or absent: the default, %v)", c.ForwardTimeout, DefaultMRTRForwardTimeout)
	case c.ForwardTimeout > 0 && c.ForwardTimeout < minMRTRForwardTimeout:
		return fmt.Errorf("forward_timeout must be at least %v (got %v)", minMRTRForwardTimeout, c.ForwardTimeout)
	}
	return nil
}

package state

import (
	"fmt"
	"time"
)

// Backends [Open] knows.
const (
	BackendEmbedded = "embedded"
	BackendRedis    = "redis"
)

// Config is the state section of the configuration file.
type Config struct {
	// Backend names the implementation: "embedded" (the default when empty) or "redis".
	Backend string `yaml:"backend" json:"backend,omitempty"`
	// Embedded configures the embedded backend; ignored by the others.
	Embedded EmbeddedConfig `yaml:"embedded" json:"embedded,omitzero"`
	// Redis configures the Redis backend; ignored by the others.
	Redis RedisConfig `yaml:"redis" json:"redis,omitzero"`
}

// EmbeddedConfig configures the embedded backend. Zero fields take their defaults
// ([DefaultMaxEntries], [DefaultSweepInterval], [DefaultBusBuffer]).
type EmbeddedConfig struct {
	// MaxEntries bounds how many entries the store holds; past it, writes that would add
	// one fail rather than evict.
	MaxEntries int `yaml:"max_entries" json:"max_entries,omitempty"`
	// SweepInterval is how often expired entries are removed in the background.
	SweepInterval time.Duration `yaml:"sweep_interval" json:"sweep_interval,omitempty"`
	// BusBuffer is how many undelivered messages each [Bus] subscription holds before it
	// drops the oldest (default [DefaultBusBuffer]).
	BusBuffer int `yaml:"bus_buffer" json:"bus_buffer,omitempty"`
}

// Validate reports the first setting Open would refuse.
func (c Config) Validate() error {
	switch c.Backend {
	case "", BackendEmbedded:
	case BackendRedis:
		return c.Redis.Validate()
	default:
		return fmt.Errorf("state: unknown backend %q: the allowed values are %q (the default) and %q", c.Backend, BackendEmbedded, BackendRedis)
	}
	if c.Embedded.MaxEntries < 0 {
		return fmt.Errorf("state: embedded.max_entries is %d: it must not be negative", c.Embedded.MaxEntries)
	}
	if c.Embedded.SweepInterval < 0 {
		return fmt.Errorf("state: embedded.sweep_interval is %v: it must not be negative", c.Embedded.SweepInterval)
	}
	if c.Embedded.BusBuffer < 0 {
		return fmt.Errorf("state: embedded.bus_buffer is %d: it must not be negative", c.Embedded.BusBuffer)
	}
	return nil
}

// Open validates cfg and returns the backend it names, with defaults applied to unset
// fields. The caller closes it. A malformed configuration fails; a Redis that is down
// does not: calls then fail with [ErrUnavailable] and [Pinger] reports it, until it is
// back.
func Open(cfg Config) (KV, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Backend == BackendRedis {
		r, err := NewRedis(cfg.Redis)
		if err != nil {
			return nil, err // not a KV holding a nil *Redis
		}
		return r, nil
	}
	return NewEmbedded(EmbeddedOptions{
		MaxEntries:    cfg.Embedded.MaxEntries,
		SweepInterval: cfg.Embedded.SweepInterval,
		BusBuffer:     cfg.Embedded.BusBuffer,
	}), nil
}

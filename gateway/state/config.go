package state

import (
	"fmt"
	"time"
)

// Backends [Open] knows.
const (
	BackendEmbedded = "embedded"
)

// Config is the state section of the configuration file.
type Config struct {
	// Backend names the implementation: "embedded" (the default when empty). "redis"
	// arrives with scale-out.
	Backend  string         `yaml:"backend" json:"backend,omitempty"`
	Embedded EmbeddedConfig `yaml:"embedded" json:"embedded,omitzero"`
}

// EmbeddedConfig configures the embedded backend. Zero fields take their defaults
// ([DefaultMaxEntries], [DefaultSweepInterval]).
type EmbeddedConfig struct {
	// MaxEntries bounds how many entries the store holds; past it, writes that would add
	// one fail rather than evict.
	MaxEntries int `yaml:"max_entries" json:"max_entries,omitempty"`
	// SweepInterval is how often expired entries are removed in the background.
	SweepInterval time.Duration `yaml:"sweep_interval" json:"sweep_interval,omitempty"`
}

// Validate reports the first setting Open would refuse.
func (c Config) Validate() error {
	switch c.Backend {
	case "", BackendEmbedded:
	default:
		return fmt.Errorf("state: unknown backend %q: the allowed values are %q (the default)", c.Backend, BackendEmbedded)
	}
	if c.Embedded.MaxEntries < 0 {
		return fmt.Errorf("state: embedded.max_entries is %d: it must not be negative", c.Embedded.MaxEntries)
	}
	if c.Embedded.SweepInterval < 0 {
		return fmt.Errorf("state: embedded.sweep_interval is %v: it must not be negative", c.Embedded.SweepInterval)
	}
	return nil
}

// Open validates cfg and returns the backend it names, with defaults applied to unset
// fields. The caller closes it.
func Open(cfg Config) (KV, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return NewEmbedded(EmbeddedOptions{
		MaxEntries:    cfg.Embedded.MaxEntries,
		SweepInterval: cfg.Embedded.SweepInterval,
	}), nil
}

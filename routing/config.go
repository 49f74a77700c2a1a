package routing

import (
	"fmt"
	"time"
)

// Config is the routing section of the configuration file.
type Config struct {
	// Demo enables the built-in demo target when present.
	Demo *DemoConfig `yaml:"demo" json:"demo,omitempty"`
}

// DemoConfig configures the built-in demo target.
type DemoConfig struct {
	// Delay is added to every demo call, to simulate a backend's latency in demos, load
	// tests and shutdown tests. The call still ends early if its deadline passes.
	Delay time.Duration `yaml:"delay" json:"delay,omitempty"`
}

// Build returns the method table for cfg.
func Build(cfg Config) (*Table, error) {
	tb := NewTable()
	if cfg.Demo != nil {
		d := NewDemo(*cfg.Demo)
		for _, m := range d.Methods() {
			if err := tb.Add(m, d); err != nil {
				return nil, fmt.Errorf("routing demo: %w", err)
			}
		}
	}
	return tb, nil
}

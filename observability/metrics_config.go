package observability

// MetricsConfig is the metrics section of the configuration file. It is read at start; a
// reload that changes it takes effect on restart.
type MetricsConfig struct {
	// Enabled turns the metrics — the pipeline's metrics stage, the targets' measurements
	// and GET /metrics on the admin listener — on or off (default on).
	Enabled *bool `yaml:"enabled" json:"enabled,omitempty"`
}

// On reports whether metrics are on: unless enabled is false.
func (c MetricsConfig) On() bool { return c.Enabled == nil || *c.Enabled }

package observability

import (
	"fmt"
	"io"
	"log/slog"
)

// LogConfig is the log section of the configuration file.
type LogConfig struct {
	// Level is debug, info, warn or error (default info).
	Level string `yaml:"level" json:"level,omitempty"`
	// Format is json or text (default json).
	Format string `yaml:"format" json:"format,omitempty"`
	// Access is the per-call access log.
	Access AccessConfig `yaml:"access" json:"access,omitzero"`
	// DebugPayloads logs each call's params and result at debug level, with secret fields
	// redacted and bounded in size (RedactJSON); off by default: payloads are the callers'.
	DebugPayloads bool `yaml:"debug_payloads" json:"debug_payloads,omitempty"`
}

// ParseLevel returns the configured level (info when unset).
func (c LogConfig) ParseLevel() (slog.Level, error) {
	var level slog.Level
	if c.Level != "" {
		if err := level.UnmarshalText([]byte(c.Level)); err != nil {
			return 0, fmt.Errorf("log level %q: want debug, info, warn or error", c.Level)
		}
	}
	return level, nil
}

// Validate reports a level, format or access setting the logger does not know.
func (c LogConfig) Validate() error {
	if _, err := c.ParseLevel(); err != nil {
		return err
	}
	if c.Format != "" && c.Format != "json" && c.Format != "text" {
		return fmt.Errorf("log format %q: want json or text", c.Format)
	}
	return c.Access.Validate()
}

// NewLogger returns a structured logger writing to w in cfg's format. Its level is read
// from level on every record, so a reload can change it; level is set from cfg here. Every
// record logged with a context carries the ids of that context (ContextHandler).
func NewLogger(cfg LogConfig, w io.Writer, level *slog.LevelVar) (*slog.Logger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l, _ := cfg.ParseLevel()
	level.Set(l)
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "text" {
		return slog.New(NewContextHandler(slog.NewTextHandler(w, opts))), nil
	}
	return slog.New(NewContextHandler(slog.NewJSONHandler(w, opts))), nil
}

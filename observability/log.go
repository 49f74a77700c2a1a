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

// Validate reports a level or format the logger does not know.
func (c LogConfig) Validate() error {
	if _, err := c.ParseLevel(); err != nil {
		return err
	}
	if c.Format != "" && c.Format != "json" && c.Format != "text" {
		return fmt.Errorf("log format %q: want json or text", c.Format)
	}
	return nil
}

// NewLogger returns a structured logger writing to w in cfg's format. Its level is read
// from level on every record, so a reload can change it; level is set from cfg here.
func NewLogger(cfg LogConfig, w io.Writer, level *slog.LevelVar) (*slog.Logger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l, _ := cfg.ParseLevel()
	level.Set(l)
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "text" {
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return slog.New(slog.NewJSONHandler(w, opts)), nil
}

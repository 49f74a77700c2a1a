package mcpface

import (
	"fmt"
	"time"
)

// TasksConfig is mcp_face.tasks: MCP tasks on /mcp — a task-augmented tools/call answered
// with a task, and tasks/get, tasks/result, tasks/list, tasks/cancel (2025-11-25) and
// tasks/get, tasks/update, tasks/cancel (the io.modelcontextprotocol/tasks extension of
// 2026-07-28) — each task one of the gateway's own (NEKTE delegate's), see tasks.go.
type TasksConfig struct {
	// Enabled turns MCP tasks on, and with them the tasks capability (2025-11-25) and the
	// tasks extension (2026-07-28) the face declares (default false). They need the nekte
	// section: the tasks are NEKTE's.
	Enabled *bool `yaml:"enabled" json:"enabled,omitempty"`
	// MaxPerPrincipal bounds the MCP tasks one principal holds at once, finished ones
	// included until they expire (default DefaultTaskMaxPerPrincipal; 0 or absent: the
	// default). Unfinished tasks are bounded by nekte.tasks.max_per_owner too.
	MaxPerPrincipal int `yaml:"max_per_principal" json:"max_per_principal,omitempty"`
	// ResultTTL is how long the face answers for a task after its creation — its status,
	// its result, its place in tasks/list — and the largest ttl a request may ask for
	// (default DefaultTaskResultTTL; 0 or absent: the default). It is the task's ttl.
	ResultTTL time.Duration `yaml:"result_ttl" json:"result_ttl,omitempty"`
	// PollInterval is the pollInterval the face suggests to its callers (default
	// DefaultTaskPollInterval; 0 or absent: the default; at most ResultTTL).
	PollInterval time.Duration `yaml:"poll_interval" json:"poll_interval,omitempty"`
}

const (
	// DefaultTaskMaxPerPrincipal is mcp_face.tasks.max_per_principal's default.
	DefaultTaskMaxPerPrincipal = 64
	// DefaultTaskResultTTL is mcp_face.tasks.result_ttl's default.
	DefaultTaskResultTTL = time.Hour
	// DefaultTaskPollInterval is mcp_face.tasks.poll_interval's default.
	DefaultTaskPollInterval = time.Second
)

// on reports whether MCP tasks are on.
func (c TasksConfig) on() bool { return c.Enabled != nil && *c.Enabled }

// maxPerPrincipal is MaxPerPrincipal with its default.
func (c TasksConfig) maxPerPrincipal() int {
	if c.MaxPerPrincipal <= 0 {
		return DefaultTaskMaxPerPrincipal
	}
	return c.MaxPerPrincipal
}

// resultTTL is ResultTTL with its default.
func (c TasksConfig) resultTTL() time.Duration {
	if c.ResultTTL <= 0 {
		return DefaultTaskResultTTL
	}
	return c.ResultTTL
}

// pollInterval is PollInterval with its default.
func (c TasksConfig) pollInterval() time.Duration {
	if c.PollInterval <= 0 {
		return DefaultTaskPollInterval
	}
	return c.PollInterval
}

// Validate refuses negative bounds and a poll interval longer than the result TTL (0 or
// absent: the defaults).
func (c TasksConfig) Validate() error {
	switch {
	case c.MaxPerPrincipal < 0:
		return fmt.Errorf("max_per_principal must not be negative (got %d; 0 or absent: the default, %d)", c.MaxPerPrincipal, DefaultTaskMaxPerPrincipal)
	case c.ResultTTL < 0:
		return fmt.Errorf("result_ttl must not be negative (got %v; 0 or absent: the default, %v)", c.ResultTTL, DefaultTaskResultTTL)
	case c.PollInterval < 0:
		return fmt.Errorf("poll_interval must not be negative (got %v; 0 or absent: the default, %v)", c.PollInterval, DefaultTaskPollInterval)
	case c.pollInterval() > c.resultTTL():
		return fmt.Errorf("poll_interval (%v) must not exceed result_ttl (%v)", c.pollInterval(), c.resultTTL())
	}
	return nil
}

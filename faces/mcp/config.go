package mcpface

import (
	"fmt"
	"time"
)

// Config enables the MCP face: the bridged MCP catalog served as one MCP server at /mcp
// (streamable HTTP) and, for older clients, GET /sse with POST /message (the legacy
// HTTP+SSE transport) on the boundary listener. Absent, none of them is served. Its
// settings are read at start; a reload does not change them.
type Config struct {
	// LocalhostProtection refuses requests whose Host or Origin is not a loopback name
	// (DNS-rebinding protection; default true). Turn it off only behind a proxy that checks
	// them itself.
	LocalhostProtection *bool `yaml:"localhost_protection" json:"localhost_protection,omitempty"`
	// SSE serves the legacy HTTP+SSE transport at GET /sse and POST /message (default true).
	SSE *bool `yaml:"sse" json:"sse,omitempty"`
	// SessionKey signs the Mcp-Session-Id of the streamable HTTP transport (at least
	// MinSessionKeyBytes bytes; give it as ${ENV}). Every replica, and the process after a
	// restart, needs the same key to accept a session; absent, a random key is drawn at
	// start, so sessions end with the process.
	SessionKey string `yaml:"session_key" json:"session_key,omitempty"`
	// SessionTTL is how long a session lives after its initialize (default 24h); its record
	// in the state store, and a revocation, expire with it.
	SessionTTL time.Duration `yaml:"session_ttl" json:"session_ttl,omitempty"`
	// ToolsChangedDelay is how long the face waits after the compute agents' operators
	// change (an agent connecting or leaving, here or on another replica) before it
	// republishes its tools and sends notifications/tools/list_changed to its sessions, so
	// that a burst of changes makes one notification (default 250ms; 0 or absent: the
	// default; negative: refused by ValidateToolsChangedDelay).
	ToolsChangedDelay time.Duration `yaml:"tools_changed_delay" json:"tools_changed_delay,omitempty"`
	// StdioMaxInFlight bounds the gateway's own calls (NEKTE and other routed methods)
	// running at once on `gatehouse stdio`; a further line waits, and the reading of stdin
	// with it, until one ends (default DefaultStdioMaxInFlight).
	StdioMaxInFlight int `yaml:"stdio_max_in_flight" json:"stdio_max_in_flight,omitempty"`
	// ListCache bounds the cache of the lists the face narrows per caller (tools/list,
	// resources/list, resources/templates/list, prompts/list); absent, the defaults.
	ListCache ListCacheConfig `yaml:"list_cache" json:"list_cache,omitzero"`
	// Tasks turns on MCP tasks on /mcp (task-augmented tools/call, tasks/*), run as the
	// gateway's own tasks (tasks.go); absent, off.
	Tasks TasksConfig `yaml:"tasks" json:"tasks,omitzero"`
	// MRTR bounds the calls held for the answers of 2026-07-28 callers to their upstream's
	// input requests (mrtrconfig.go); absent, the defaults.
	MRTR MRTRConfig `yaml:"mrtr" json:"mrtr,omitzero"`
}

// ListCacheConfig is mcp_face.list_cache: the in-process cache of the lists the face
// narrows per caller, keyed by the caller's view, the catalog version and the page.
type ListCacheConfig struct {
	// Enabled turns the cache on (default true).
	Enabled *bool `yaml:"enabled" json:"enabled,omitempty"`
	// MaxEntries is how many narrowed lists the cache holds at most (default
	// DefaultListCacheEntries; 0 or absent: the default).
	MaxEntries int `yaml:"max_entries" json:"max_entries,omitempty"`
	// MaxBytes bounds the size of the lists held, as JSON (default DefaultListCacheBytes; 0
	// or absent: the default). A list larger than it is not cached.
	MaxBytes int `yaml:"max_bytes" json:"max_bytes,omitempty"`
	// MaxAge is how long a narrowed list is served at most (default DefaultListCacheMaxAge;
	// 0 or absent: the default). It is also the ttlMs of 2026-07-28 list results.
	MaxAge time.Duration `yaml:"max_age" json:"max_age,omitempty"`
}

const (
	// MinSessionKeyBytes is the shortest mcp_face.session_key accepted.
	MinSessionKeyBytes = 32
	// DefaultSessionTTL is how long an MCP session lives after its initialize.
	DefaultSessionTTL = 24 * time.Hour
	// DefaultStdioMaxInFlight is mcp_face.stdio_max_in_flight's default.
	DefaultStdioMaxInFlight = 64
	// DefaultToolsChangedDelay is mcp_face.tools_changed_delay's default.
	DefaultToolsChangedDelay = 250 * time.Millisecond
	// DefaultListCacheEntries is mcp_face.list_cache.max_entries' default.
	DefaultListCacheEntries = 4096
	// DefaultListCacheBytes is mcp_face.list_cache.max_bytes' default (32 MiB).
	DefaultListCacheBytes = 32 << 20
	// DefaultListCacheMaxAge is mcp_face.list_cache.max_age's default.
	DefaultListCacheMaxAge = 30 * time.Second
)

// on reports whether the list cache is on.
func (c ListCacheConfig) on() bool { return c.Enabled == nil || *c.Enabled }

// maxEntries is MaxEntries with its default.
func (c ListCacheConfig) maxEntries() int {
	if c.MaxEntries <= 0 {
		return DefaultListCacheEntries
	}
	return c.MaxEntries
}

// maxBytes is MaxBytes with its default.
func (c ListCacheConfig) maxBytes() int {
	if c.MaxBytes <= 0 {
		return DefaultListCacheBytes
	}
	return c.MaxBytes
}

// maxAge is MaxAge with its default.
func (c ListCacheConfig) maxAge() time.Duration {
	if c.MaxAge <= 0 {
		return DefaultListCacheMaxAge
	}
	return c.MaxAge
}

// Validate refuses negative bounds (0 or absent: the defaults).
func (c ListCacheConfig) Validate() error {
	switch {
	case c.MaxEntries < 0:
		return fmt.Errorf("max_entries must not be negative (got %d; 0 or absent: the default, %d)", c.MaxEntries, DefaultListCacheEntries)
	case c.MaxBytes < 0:
		return fmt.Errorf("max_bytes must not be negative (got %d; 0 or absent: the default, %d)", c.MaxBytes, DefaultListCacheBytes)
	case c.MaxAge < 0:
		return fmt.Errorf("max_age must not be negative (got %v; 0 or absent: the default, %v)", c.MaxAge, DefaultListCacheMaxAge)
	}
	return nil
}

// toolsChangedDelay is ToolsChangedDelay with its default.
func (c Config) toolsChangedDelay() time.Duration {
	if c.ToolsChangedDelay <= 0 {
		return DefaultToolsChangedDelay
	}
	return c.ToolsChangedDelay
}

// ValidateSessionKey reports a session_key shorter than MinSessionKeyBytes; absent, the
// key is drawn at start and valid.
func (c Config) ValidateSessionKey() error {
	if c.SessionKey != "" && len(c.SessionKey) < MinSessionKeyBytes {
		return fmt.Errorf("the key is %d bytes long: it must have at least %d (for example the output of `openssl rand -base64 48`)",
			len(c.SessionKey), MinSessionKeyBytes)
	}
	return nil
}

// StdioInFlight is StdioMaxInFlight with its default.
func (c Config) StdioInFlight() int {
	if c.StdioMaxInFlight <= 0 {
		return DefaultStdioMaxInFlight
	}
	return c.StdioMaxInFlight
}

// ValidateToolsChangedDelay refuses a negative tools_changed_delay (0 or absent is the
// default).
func (c Config) ValidateToolsChangedDelay() error {
	if c.ToolsChangedDelay < 0 {
		return fmt.Errorf("must not be negative (got %v; 0 or absent: the default, %v)", c.ToolsChangedDelay, DefaultToolsChangedDelay)
	}
	return nil
}

// localOnly reports whether DNS-rebinding protection is on.
func (c Config) localOnly() bool {
	return c.LocalhostProtection == nil || *c.LocalhostProtection
}

// sseOn reports whether the legacy SSE transport is served.
func (c Config) sseOn() bool { return c.SSE == nil || *c.SSE }

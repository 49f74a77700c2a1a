package mcpbackend_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

func TestValidate(t *testing.T) {
	stdio := func(mut func(*mcpbackend.Config)) mcpbackend.Config {
		c := mcpbackend.Config{Name: "a", Stdio: &mcpbackend.StdioConfig{Command: "server"}}
		mut(&c)
		return c
	}
	tests := []struct {
		name string
		cfg  mcpbackend.Config
		want string // "" for valid
	}{
		{"minimal stdio", stdio(func(*mcpbackend.Config) {}), ""},
		{"http", mcpbackend.Config{Name: "h", HTTP: &mcpbackend.HTTPConfig{URL: "https://mcp.example/mcp", TLS: &mcpbackend.TLSConfig{}}}, ""},
		{"no transport", mcpbackend.Config{Name: "a"}, "exactly one of stdio, sse, http"},
		{"two transports", stdio(func(c *mcpbackend.Config) { c.SSE = &mcpbackend.HTTPConfig{URL: "http://x/sse"} }), "exactly one"},
		{"bad name", stdio(func(c *mcpbackend.Config) { c.Name = "a b" }), "name must be"},
		{"relative url", mcpbackend.Config{Name: "h", HTTP: &mcpbackend.HTTPConfig{URL: "/mcp"}}, "absolute http"},
		{"tls on http", mcpbackend.Config{Name: "h", HTTP: &mcpbackend.HTTPConfig{URL: "http://x/mcp", TLS: &mcpbackend.TLSConfig{}}}, "not https"},
		{"unknown version", stdio(func(c *mcpbackend.Config) { c.ProtocolVersions = []string{"2024-01-01"} }), "protocol_versions"},
		{"timeout ≥ interval", stdio(func(c *mcpbackend.Config) {
			c.Heartbeat = mcpbackend.HeartbeatConfig{Interval: time.Second, Timeout: time.Second}
		}), "heartbeat"},
		{"jitter", stdio(func(c *mcpbackend.Config) { c.Restart.Jitter = 2 }), "restart"},
		{"max < initial", stdio(func(c *mcpbackend.Config) {
			c.Restart = mcpbackend.BackoffConfig{Initial: time.Second, Max: time.Millisecond}
		}), "restart"},
		{"mode", stdio(func(c *mcpbackend.Config) { c.Names.Mode = "sometimes" }), "mode must be"},
		{"separator", stdio(func(c *mcpbackend.Config) { c.Names.Separator = "/" }), "separator"},
		{"dot separator", stdio(func(c *mcpbackend.Config) { c.Names.Separator = "." }), ""},
		{"glob", stdio(func(c *mcpbackend.Config) { c.Tools.Deny = []string{"["} }), "bad pattern"},
		{"root", stdio(func(c *mcpbackend.Config) { c.Roots = []mcpbackend.RootConfig{{URI: "/tmp"}} }), "file://"},
		{"policy", stdio(func(c *mcpbackend.Config) { c.Sampling = "allow" }), "sampling must be"},
		{"negative cap", stdio(func(c *mcpbackend.Config) { c.MaxConcurrent = -1 }), "max_concurrent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestValidateAll(t *testing.T) {
	up := func(name, mode, prefix string) mcpbackend.Config {
		return mcpbackend.Config{Name: name, Stdio: &mcpbackend.StdioConfig{Command: "s"}, Names: mcpbackend.NamesConfig{Mode: mode, Prefix: prefix}}
	}
	tests := []struct {
		name string
		cfgs []mcpbackend.Config
		want string
	}{
		{"distinct", []mcpbackend.Config{up("a", "", ""), up("b", "never", "")}, ""},
		{"duplicate name", []mcpbackend.Config{up("a", "", ""), up("a", "never", "")}, `"a" is configured twice`},
		{"shared prefix", []mcpbackend.Config{up("a", "always", "x"), up("b", "on_collision", "x")}, `share the name prefix "x__"`},
		{"never ignores prefixes", []mcpbackend.Config{up("a", "never", "x"), up("b", "never", "x")}, ""},
		{"invalid member", []mcpbackend.Config{up("a", "bad", "")}, "mode must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mcpbackend.ValidateAll(tt.cfgs)
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

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
		{"routing header", mcpbackend.Config{Name: "h", HTTP: &mcpbackend.HTTPConfig{URL: "http://x/mcp", Headers: map[string]string{"mcp-name": "x"}}}, "mcp-name is set by the gateway"},
		{"routing header on sse", mcpbackend.Config{Name: "h", SSE: &mcpbackend.HTTPConfig{URL: "http://x/sse", Headers: map[string]string{"Mcp-Method": "tools/call"}}}, "Mcp-Method is set by the gateway"},
		{"other headers", mcpbackend.Config{Name: "h", HTTP: &mcpbackend.HTTPConfig{URL: "http://127.0.0.1/mcp", Headers: map[string]string{"X-Tenant": "a"}}}, ""},
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
		{"client policies", stdio(func(c *mcpbackend.Config) { c.Sampling, c.Elicitation = "client", "client" }), ""},
		{"elicitation policy", stdio(func(c *mcpbackend.Config) { c.Elicitation = "ask" }), "elicitation must be refuse, client or route"},
		{"negative cap", stdio(func(c *mcpbackend.Config) { c.MaxConcurrent = -1 }), "max_concurrent"},
		{"idle conns at the limit", mcpbackend.Config{Name: "h", HTTP: &mcpbackend.HTTPConfig{URL: "http://127.0.0.1/mcp", MaxIdleConns: mcpbackend.MaxMaxIdleConns}}, ""},
		{"one idle conn", mcpbackend.Config{Name: "h", SSE: &mcpbackend.HTTPConfig{URL: "http://127.0.0.1/sse", MaxIdleConns: 1}}, ""},
		{"idle conns past the limit", mcpbackend.Config{Name: "h", HTTP: &mcpbackend.HTTPConfig{URL: "http://x/mcp", MaxIdleConns: mcpbackend.MaxMaxIdleConns + 1}}, "max_idle_conns"},
		{"negative idle conns", mcpbackend.Config{Name: "h", SSE: &mcpbackend.HTTPConfig{URL: "http://x/sse", MaxIdleConns: -1}}, "max_idle_conns"},
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

func TestValidateRoutes(t *testing.T) {
	up := func(sampling, elicitation string) []mcpbackend.Config {
		return []mcpbackend.Config{{Name: "up1", Stdio: &mcpbackend.StdioConfig{Command: "s"}, Sampling: sampling, Elicitation: elicitation}}
	}
	method := &mcpbackend.RouteConfig{Method: "llm.sample"}
	httpRoute := func(url string, tls bool) *mcpbackend.RouteConfig {
		h := &mcpbackend.RouteHTTPConfig{URL: url}
		if tls {
			h.TLS = &mcpbackend.TLSConfig{}
		}
		return &mcpbackend.RouteConfig{HTTP: h}
	}
	tests := []struct {
		name                  string
		cfgs                  []mcpbackend.Config
		sampling, elicitation *mcpbackend.RouteConfig
		want                  string // "" for valid
	}{
		{"no route policy, no backend", up("client", "refuse"), nil, nil, ""},
		{"route with backends", up("route", "route"), method, httpRoute("https://llm.internal/sample", true), ""},
		{"sampling backend missing", up("route", ""), nil, method, `mcp upstream "up1": sampling is route but sampling_backend is not set`},
		{"elicitation backend missing", up("", "route"), method, nil, `mcp upstream "up1": elicitation is route but elicitation_backend is not set`},
		{"both and neither", up("route", ""), &mcpbackend.RouteConfig{Method: "m", HTTP: &mcpbackend.RouteHTTPConfig{URL: "http://x/"}}, nil, "sampling_backend: needs exactly one of http, method"},
		{"empty", up("route", ""), &mcpbackend.RouteConfig{}, nil, "needs exactly one"},
		{"relative url", up("route", ""), httpRoute("/sample", false), nil, "absolute http"},
		{"tls on http", up("route", ""), httpRoute("http://x/sample", true), nil, "not https"},
		{"negative timeout", up("route", ""), &mcpbackend.RouteConfig{HTTP: &mcpbackend.RouteHTTPConfig{URL: "http://x/", Timeout: -time.Second}}, nil, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mcpbackend.ValidateRoutes(tt.cfgs, tt.sampling, tt.elicitation)
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

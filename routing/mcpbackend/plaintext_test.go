package mcpbackend_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// TestPlaintextHopToken checks that a configuration sending a hop credential over plain
// http:// to a host that is not loopback is refused unless the upstream opts in.
func TestPlaintextHopToken(t *testing.T) {
	httpUp := func(url, mode string, allow bool) mcpbackend.Config {
		return mcpbackend.Config{Name: "h", HTTP: &mcpbackend.HTTPConfig{URL: url, AllowPlaintextHopToken: allow},
			DownstreamToken: gateway.DownstreamTokenConfig{Mode: mode}}
	}
	const refused = "would send a hop token over it in the clear"
	tests := []struct {
		name string
		cfg  mcpbackend.Config
		want string // "" when accepted
	}{
		{"remote http, mint by default", httpUp("http://tools.example.com/mcp", "", false), refused},
		{"remote http, passthrough", httpUp("http://10.0.0.7:8080/mcp", "passthrough", false), refused},
		{"remote http, ipv6", httpUp("http://[2001:db8::1]/mcp", "mint", false), refused},
		{"a name resolving anywhere", httpUp("http://localhost.example.com/mcp", "", false), refused},
		{"remote sse", mcpbackend.Config{Name: "h", SSE: &mcpbackend.HTTPConfig{URL: "http://tools.example.com/sse"}}, "sse.allow_plaintext_hop_token"},
		{"remote http, opted in", httpUp("http://tools.example.com/mcp", "", true), ""},
		{"remote http, no token", httpUp("http://tools.example.com/mcp", "none", false), ""},
		{"remote https", httpUp("https://tools.example.com/mcp", "", false), ""},
		{"127.0.0.1", httpUp("http://127.0.0.1:9000/mcp", "", false), ""},
		{"127.8.9.10", httpUp("http://127.8.9.10/mcp", "", false), ""},
		{"::1", httpUp("http://[::1]:9000/mcp", "passthrough", false), ""},
		{"localhost", httpUp("http://localhost:9000/mcp", "", false), ""},
		{"LOCALHOST", httpUp("http://LOCALHOST/mcp", "", false), ""},
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

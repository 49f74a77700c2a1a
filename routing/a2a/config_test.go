package a2a_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/a2a"
)

func TestConfigValidate(t *testing.T) {
	ok := a2a.Config{Name: "x", CardURL: "https://agent.example"}
	for _, tc := range []struct {
		name string
		mut  func(*a2a.Config)
		want string // "" for valid
	}{
		{"minimal", func(*a2a.Config) {}, ""},
		{"loopback http mints", func(c *a2a.Config) { c.CardURL = "http://127.0.0.1:9999" }, ""},
		{"no name", func(c *a2a.Config) { c.Name = "" }, "name"},
		{"slash in name", func(c *a2a.Config) { c.Name = "a/b" }, "name"},
		{"no card_url", func(c *a2a.Config) { c.CardURL = "" }, "card_url"},
		{"card_url not http", func(c *a2a.Config) { c.CardURL = "ftp://x" }, "card_url"},
		{"card_url with credentials", func(c *a2a.Config) { c.CardURL = "https://u:p@x" }, "credentials"},
		{"plain http off loopback with a token", func(c *a2a.Config) { c.CardURL = "http://agent.example" }, "in the clear"},
		{"plain http, no token", func(c *a2a.Config) {
			c.CardURL = "http://agent.example"
			c.DownstreamToken = gateway.DownstreamTokenConfig{Mode: "none"}
		}, ""},
		{"plain http allowed", func(c *a2a.Config) { c.CardURL, c.AllowPlaintextHopToken = "http://agent.example", true }, ""},
		{"bad hop mode", func(c *a2a.Config) { c.DownstreamToken.Mode = "steal" }, "downstream_token"},
		{"negative timeout", func(c *a2a.Config) { c.RequestTimeout = -time.Second }, "request_timeout"},
		{"refresh too fast", func(c *a2a.Config) { c.CardRefresh = time.Millisecond }, "card_refresh"},
		{"negative limit", func(c *a2a.Config) { c.MaxResponseBytes = -1 }, "max_response_bytes"},
		{"two key sources", func(c *a2a.Config) {
			c.CardSignature = a2a.SignatureConfig{JWKSURL: "https://k", JWKSFile: "/k"}
		}, "not both"},
		{"required without keys", func(c *a2a.Config) { c.CardSignature.RequireSignedCard = true }, "require_signed_card"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mut(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestValidateAllUnique(t *testing.T) {
	a := a2a.Config{Name: "x", CardURL: "https://a"}
	if err := a2a.ValidateAll([]a2a.Config{a, a}); err == nil || !strings.Contains(err.Error(), "named") {
		t.Fatalf("duplicate names: %v", err)
	}
	b := a2a.Config{Name: "y", CardURL: "https://b", Prefix: "a2a.x."}
	if err := a2a.ValidateAll([]a2a.Config{a, b}); err == nil || !strings.Contains(err.Error(), "prefix") {
		t.Fatalf("duplicate prefixes: %v", err)
	}
	if d := a.WithDefaults(); d.Prefix != "a2a.x." || d.RequestTimeout != a2a.DefaultRequestTimeout || d.MaxCardBytes != a2a.DefaultMaxCardBytes {
		t.Fatalf("defaults %+v", d)
	}
}

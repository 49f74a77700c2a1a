package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fullAuthSection uses every key of the auth section.
const fullAuthSection = `routing: {demo: {}}
auth:
  jwt:
    issuers:
      - issuer: gatehouse-dev
        audiences: [gatehouse]
        jwks_file: JWKS
        algorithms: [RS256, PS256]
        required_claims: [tenant]
        leeway: 45s
        refresh_interval: 5m
        refresh_rate_limit: 30s
        max_token_bytes: 4096
        scope_claims: [scope, scp, roles]
        tier_claim: tier
      - issuer: https://idp.example.com/
        audiences: [api://gatehouse]
        jwks_url: https://idp.example.com/.well-known/jwks.json
      - issuer: dev-secret
        audiences: [gatehouse]
        secret: ${GATEHOUSE_TEST_SECRET}
        algorithms: [HS256]
      - issuer: pem
        audiences: [gatehouse]
        pem_files: [a.pem, b.pem]
  api_keys:
    - name: ci
      hash: sha256:8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92
      scopes: [deploy]
      tier: enterprise
  anonymous: {loopback_only: true, tier: standard, scopes: [read]}
  keyring:
    issuer: gatehouse
    algorithm: EdDSA
    rotate_every: 24h
    max_token_ttl: 15m
    overlap: 16m
    publish_ahead: 5m
    sync_interval: 30s
`

// TestValidateAuthSection: `gatehouse validate` accepts every key of the auth section and
// reports what is wrong with one, without echoing secrets.
func TestValidateAuthSection(t *testing.T) {
	t.Setenv("GATEHOUSE_TEST_SECRET", strings.Repeat("s", 40))
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	full := strings.Replace(fullAuthSection, "JWKS", devJWKS, 1)
	tests := []struct {
		name string
		body string
		code int
		want []string
	}{
		{"every key", full, 0, []string{"ok"}},
		{"short secret", strings.Replace(full, "${GATEHOUSE_TEST_SECRET}", "tooshort-secret", 1), 1, []string{"at least 32 characters"}},
		{"plain http JWKS", strings.Replace(full, "https://idp.example.com/.well-known", "http://idp.example.com", 1), 1, []string{"must be https"}},
		{"HMAC for public keys", strings.Replace(full, "[RS256, PS256]", "[RS256, HS256]", 1), 1, []string{"HMAC is never allowed with public keys"}},
		{"alg none", strings.Replace(full, "[RS256, PS256]", "[none]", 1), 1, []string{"must be one of"}},
		{"two key sources", strings.Replace(full, "pem_files: [a.pem, b.pem]", "pem_files: [a.pem]\n        jwks_file: x.json", 1), 1, []string{"exactly one of"}},
		{"api key in clear", strings.Replace(full, "sha256:8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92", "hunter2", 1), 1, []string{"must match the pattern"}},
		{"overlap shorter than the token lifetime", strings.Replace(full, "overlap: 16m", "overlap: 5m", 1), 1, []string{"shorter than max_token_ttl"}},
		{"unknown key", strings.Replace(full, "tier_claim: tier", "tier_claims: tier", 1), 1, []string{`unknown key "tier_claims"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"validate", "--config", write("c.yaml", tt.body)}, &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Fatalf("output %q lacks %q", out, w)
				}
			}
			if strings.Contains(out, "tooshort-secret") || strings.Contains(out, "hunter2") || strings.Contains(out, strings.Repeat("s", 40)) {
				t.Fatalf("output echoes a secret: %s", out)
			}
		})
	}
}

// TestServeVerifiesDevTokens runs the gateway with the development JWKS and calls it with a
// token from `gatehouse token`: accepted; none, or a forged one, refused with 401 and a
// reason; the token never in the gateway's logs.
func TestServeVerifiesDevTokens(t *testing.T) {
	jwks, err := filepath.Abs(devJWKS)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	body := "routing: {demo: {}}\nauth:\n  jwt:\n    issuers:\n      - {issuer: gatehouse-dev, audiences: [gatehouse], jwks_file: " + jwks + "}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"token", "--key", devKey, "--sub", "alice", "--scope", "demo"}, &stdout, &stderr); code != 0 {
		t.Fatalf("token: %s", stderr.String())
	}
	tok := strings.TrimSpace(stdout.String())
	p := startProcess(t, cfg)
	tests := []struct {
		name   string
		auth   string
		status int
		want   string
	}{
		{"valid token", "Bearer " + tok, http.StatusOK, `"result"`},
		{"no token", "", http.StatusUnauthorized, `"reason":"no credential"`},
		{"forged signature", "Bearer " + tok[:len(tok)-4] + "AAAA", http.StatusUnauthorized, `"reason":"bad signature"`},
		{"alg none", "Bearer eyJhbGciOiJub25lIn0." + strings.Split(tok, ".")[1] + ".", http.StatusUnauthorized, `"reason":"malformed token"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, p.rpc, strings.NewReader(`{"jsonrpc":"2.0","method":"get_data","id":1}`))
			req.Header.Set("Content-Type", "application/json")
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.want) {
				t.Fatalf("got %d %s; want %d with %s", resp.StatusCode, b, tt.status, tt.want)
			}
		})
	}
	for part := range strings.SplitSeq(tok, ".") {
		if strings.Contains(p.stderr.String(), part) {
			t.Fatalf("the gateway logged part of the token:\n%s", p.stderr.String())
		}
	}
}

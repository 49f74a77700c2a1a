package server

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	mcpface "github.com/gatehouse-dev/gatehouse/faces/mcp"
)

// securedMCPConfig accepts development tokens, serves the MCP face and has a policy.
func securedMCPConfig(t *testing.T) string {
	t.Helper()
	return devJWTConfig(t) + `mcp_face: {}
policy:
  rules:
    - {match: {method: subtract}, scopes: [calc.read]}
    - {match: {method: add}, scopes: [calc.write, calc.read]}
`
}

// protectedResourceDoc is the OAuth protected-resource metadata document (RFC 9728 §2) as
// a client reads it.
type protectedResourceDoc struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
}

// TestProtectedResourceMetadata: the MCP face's OAuth protected-resource metadata names the
// /mcp URL, the configured issuers and the policy's scopes, at both paths.
func TestProtectedResourceMetadata(t *testing.T) {
	ts := start(t, securedMCPConfig(t), nil)
	for _, path := range []string{mcpface.ProtectedResourcePath, mcpface.ProtectedResourcePath + mcpface.Path} {
		status, hdr, body := getCard(t, ts, path, "")
		if status != http.StatusOK || hdr.Get("Content-Type") != faces.JSONContentType {
			t.Fatalf("GET %s: %d %s", path, status, body)
		}
		var got protectedResourceDoc
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatal(err)
		}
		want := protectedResourceDoc{
			Resource:               ts.base + mcpface.Path,
			AuthorizationServers:   []string{"gatehouse-dev"},
			BearerMethodsSupported: []string{"header"},
			ScopesSupported:        []string{"calc.read", "calc.write"},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("GET %s: got %+v, want %+v", path, got, want)
		}
	}
	off := start(t, baseConfig, nil)
	if status, _, _ := getCard(t, off, mcpface.ProtectedResourcePath, ""); status != http.StatusNotFound {
		t.Fatalf("without the MCP face: %d", status)
	}
}

// TestBearerChallenge: a 401's WWW-Authenticate says invalid_token when a token was
// presented and refused, invalid_request for two credentials, and on the MCP face names
// the protected-resource metadata.
func TestBearerChallenge(t *testing.T) {
	ts := start(t, securedMCPConfig(t), nil)
	tok := devToken(t, "alice")
	bad := tok[:len(tok)-4] + "AAAA"
	meta := `, resource_metadata="` + ts.base + mcpface.ProtectedResourcePath + mcpface.Path + `"`
	tests := []struct {
		name, path string
		header     []string
		want       string
	}{
		{"rpc no credential", httprpc.RPCPath, nil, `Bearer realm="gatehouse"`},
		{"rpc bad token", httprpc.RPCPath, []string{"Authorization", "Bearer " + bad}, `Bearer realm="gatehouse", error="invalid_token"`},
		{"rpc not a JWT", httprpc.RPCPath, []string{"Authorization", "Bearer nope"}, `Bearer realm="gatehouse", error="invalid_token"`},
		{"rpc two credentials", httprpc.RPCPath, []string{"Authorization", "Bearer " + tok, "X-API-Key", "k"}, `Bearer realm="gatehouse", error="invalid_request"`},
		{"mcp no credential", mcpface.Path, nil, `Bearer realm="gatehouse"` + meta},
		{"mcp bad token", mcpface.Path, []string{"Authorization", "Bearer " + bad}, `Bearer realm="gatehouse", error="invalid_token"` + meta},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, ts.base+tt.path,
				strings.NewReader(`{"jsonrpc":"2.0","method":"subtract","params":[2,1],"id":1}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", faces.JSONContentType)
			req.Header.Set("Accept", "application/json, text/event-stream")
			for i := 0; i+1 < len(tt.header); i += 2 {
				req.Header.Set(tt.header[i], tt.header[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || got != tt.want {
				t.Fatalf("status %d, WWW-Authenticate %q, want 401 %q", resp.StatusCode, got, tt.want)
			}
		})
	}
	if strings.Contains(ts.logs.String(), tok[strings.LastIndexByte(tok, '.')+1:]) {
		t.Fatal("the logs contain the token")
	}
}

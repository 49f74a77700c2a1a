package mcpbackend_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TestReadMethods: the target serves resources/read and prompts/get under its namespace,
// refuses params of the wrong shape, and CatalogItem names the tool, resource or prompt each
// call reaches — for a completion, the prompt or template it refers to.
func TestReadMethods(t *testing.T) {
	b, _ := start(t, []mcpbackend.Config{fixture("fx", map[string]string{"FIXTURE_RESOURCES": "2"})})
	target := b.Target("mcp.")
	if got := target.ReadMethods(); strings.Join(got, " ") != "mcp.resources/read mcp.prompts/get mcp.completion/complete" {
		t.Fatalf("ReadMethods = %q", got)
	}
	ctx := ctxTimeout(t, 10*time.Second)
	invoke := []struct {
		name, method, params string
		want                 string // in the result; "" when code is set
		code                 schemas.Code
	}{
		{"read a listed resource", "mcp.resources/read", `{"uri":"res://fx/item/2"}`, "item res://fx/item/2", 0},
		{"read through a template", "mcp.resources/read", `{"uri":"res://fx/tmpl/42"}`, "templated res://fx/tmpl/42", 0},
		{"get a prompt", "mcp.prompts/get", `{"name":"greet","arguments":{"who":"ada"}}`, "hello ada", 0},
		{"read without a uri", "mcp.resources/read", `{"name":"x"}`, "", schemas.CodeInvalidParams},
		{"get without a name", "mcp.prompts/get", `{}`, "", schemas.CodeInvalidParams},
		{"get an unknown prompt", "mcp.prompts/get", `{"name":"nope"}`, "", schemas.CodeCapabilityNotFound},
		{"complete without a ref", "mcp.completion/complete", `{"argument":{"name":"a","value":"b"}}`, "", schemas.CodeInvalidParams},
	}
	for _, tt := range invoke {
		t.Run(tt.name, func(t *testing.T) {
			res, err := target.Invoke(ctx, &gateway.Call{Method: tt.method, Params: []byte(tt.params), Protocol: gateway.ProtocolMCP})
			if tt.code != 0 {
				if got := codeOf(err); got != tt.code {
					t.Fatalf("code %d (%v), want %d", got, err, tt.code)
				}
				return
			}
			if err != nil || !strings.Contains(string(res.Value), tt.want) {
				t.Fatalf("got %v, %v; want %s", res, err, tt.want)
			}
		})
	}
	reaches := []struct {
		name, method, params string
		want                 gateway.Reach
	}{
		{"tool method", "mcp.echo", `{}`, gateway.Reach{Kind: gateway.ReachMCPTool, Server: "fx", Name: "echo"}},
		{"tools/call", mcpbackend.MethodToolsCall, `{"name":"echo"}`, gateway.Reach{Kind: gateway.ReachMCPTool, Server: "fx", Name: "echo"}},
		{"listed resource", "mcp.resources/read", `{"uri":"res://fx/item/2"}`,
			gateway.Reach{Kind: gateway.ReachMCPResource, Server: "fx", Name: "res://fx/item/2"}},
		{"resource by template", "mcp.resources/read", `{"uri":"res://fx/tmpl/7"}`,
			gateway.Reach{Kind: gateway.ReachMCPResource, Server: "fx", Name: "res://fx/tmpl/7"}},
		{"prompt", "mcp.prompts/get", `{"name":"greet"}`, gateway.Reach{Kind: gateway.ReachMCPPrompt, Server: "fx", Name: "greet"}},
		{"completion of a prompt", "mcp.completion/complete", `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"a"}}`,
			gateway.Reach{Kind: gateway.ReachMCPPrompt, Server: "fx", Name: "greet"}},
		{"completion of a template", "mcp.completion/complete", `{"ref":{"type":"ref/resource","uri":"res://fx/tmpl/{id}"},"argument":{"name":"id","value":"1"}}`,
			gateway.Reach{Kind: gateway.ReachMCPResource, Server: "fx", Name: "res://fx/tmpl/{id}"}},
		{"unknown prompt", "mcp.prompts/get", `{"name":"nope"}`, gateway.Reach{Kind: gateway.ReachMCP}},
		{"unknown tool", "mcp.nope", `{}`, gateway.Reach{Kind: gateway.ReachMCP}},
		{"malformed params", "mcp.resources/read", `[1]`, gateway.Reach{Kind: gateway.ReachMCP}},
	}
	for _, tt := range reaches {
		t.Run("reaches/"+tt.name, func(t *testing.T) {
			call := &gateway.Call{Method: tt.method, Params: []byte(tt.params), Target: target}
			if got := target.Reaches(call, true); got != tt.want {
				t.Fatalf("Reaches = %+v, want %+v", got, tt.want)
			}
			wantBackend := ""
			if tt.want.Server != "" {
				wantBackend = mcpbackend.BackendPrefix + tt.want.Server
			}
			if got := gateway.BackendOf(call); got != wantBackend {
				t.Errorf("BackendOf = %q, want %q", got, wantBackend)
			}
			// Without detail only the read methods are looked up.
			want := tt.want
			if !target.ReadMethod(tt.method) {
				want = gateway.Reach{Kind: gateway.ReachMCP}
			}
			if got := target.Reaches(&gateway.Call{Method: tt.method, Params: []byte(tt.params)}, false); got != want {
				t.Fatalf("Reaches without detail = %+v, want %+v", got, want)
			}
		})
	}
	for _, tt := range []struct {
		method string
		want   bool
	}{{"mcp.resources/read", true}, {"mcp.prompts/get", true}, {"mcp.completion/complete", true}, {"resources/read", false}, {"mcp.echo", false}} {
		if got := target.ReadMethod(tt.method); got != tt.want {
			t.Errorf("ReadMethod(%q) = %v", tt.method, got)
		}
	}
}

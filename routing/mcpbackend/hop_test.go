package mcpbackend_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// withToken is a call's context as the dispatch hands it to the bridge: a deadline, and the
// hop credential ("" for none).
func withToken(t *testing.T, token string) context.Context {
	t.Helper()
	return gateway.WithHopToken(ctxTimeout(t, 10*time.Second), token)
}

func TestHopAuthPerUpstream(t *testing.T) {
	up := func(name, names string, d gateway.DownstreamTokenConfig, env map[string]string) mcpbackend.Config {
		c := fixture(name, env)
		c.Names.Mode, c.DownstreamToken = names, d
		return c
	}
	never := func(name string, d gateway.DownstreamTokenConfig, tools ...string) mcpbackend.Config {
		c := up(name, mcpbackend.PrefixNever, d, nil)
		c.Tools.Allow = tools
		return c
	}
	resources := map[string]string{"FIXTURE_RESOURCES": "1"}
	b, _ := start(t, []mcpbackend.Config{
		up("a", mcpbackend.PrefixAlways, gateway.DownstreamTokenConfig{}, resources),
		up("b", mcpbackend.PrefixAlways, gateway.DownstreamTokenConfig{Mode: "passthrough"}, resources),
		up("c", mcpbackend.PrefixAlways, gateway.DownstreamTokenConfig{Mode: "mint", Audience: "api://c"}, nil),
		never("n", gateway.DownstreamTokenConfig{Mode: "none"}, "echo", "pid"),
		never("m", gateway.DownstreamTokenConfig{}, "pid"), // pid (and prompt greet) collide with n's
	})
	mintA := gateway.HopAuth{Mode: gateway.HopMint, Audience: "a"}
	pass := gateway.HopAuth{Mode: gateway.HopPassthrough}
	mintC := gateway.HopAuth{Mode: gateway.HopMint, Audience: "api://c"}
	none := gateway.HopAuth{Mode: gateway.HopNone}
	tests := []struct {
		name, method, params string
		want                 gateway.HopAuth
	}{
		{"tools/call", mcpbackend.MethodToolsCall, `{"name":"a__echo","arguments":{}}`, mintA},
		{"method per tool", "mcp.b__echo", `{"message":"x"}`, pass},
		{"configured audience", "mcp.c__echo", `{}`, mintC},
		{"upstream with mode none", "mcp.echo", `{}`, none},
		{"colliding tool", "mcp.pid", `{}`, none},
		{"unknown tool", "mcp.nope", `{}`, none},
		{"unknown tool by tools/call", mcpbackend.MethodToolsCall, `{"name":"nope"}`, none},
		{"tools/call without a name", mcpbackend.MethodToolsCall, `{"arguments":{}}`, none},
		{"tools/call params not an object", mcpbackend.MethodToolsCall, `[1]`, none},
		{"tool outside the namespace", "a__echo", `{}`, none},
		{"resources/read of a listed resource", "resources/read", `{"uri":"res://b/item/1"}`, pass},
		{"resources/read by template prefix", "resources/read", `{"uri":"res://c/tmpl/42"}`, mintC},
		{"resources/read of the other upstream", "resources/read", `{"uri":"res://a/item/1"}`, mintA},
		{"resources/subscribe: the bridge's, no credential", "resources/subscribe", `{"uri":"res://a/item/1"}`, none},
		{"resources/unsubscribe: the bridge's, no credential", "resources/unsubscribe", `{"uri":"res://b/tmpl/7"}`, none},
		{"resources/read of an unknown resource", "resources/read", `{"uri":"res://zz/item/1"}`, none},
		{"resources/read without a uri", "resources/read", `{}`, none},
		{"prompts/get", "prompts/get", `{"name":"b__greet","arguments":{"who":"x"}}`, pass},
		{"colliding prompt", "prompts/get", `{"name":"greet"}`, none},
		{"completion of a prompt", "completion/complete", `{"ref":{"type":"ref/prompt","name":"c__greet"},"argument":{"name":"who","value":"a"}}`, mintC},
		{"completion of a template", "completion/complete", `{"ref":{"type":"ref/resource","uri":"res://a/tmpl/{id}"},"argument":{"name":"id","value":"1"}}`, mintA},
		{"completion of an unknown prompt", "completion/complete", `{"ref":{"type":"ref/prompt","name":"nope"},"argument":{"name":"x","value":""}}`, none},
		{"completion without a ref", "completion/complete", `{}`, none},
		{"another method", "tools/list", `{}`, none},
	}
	target := b.Target("mcp.")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := target.HopAuth(&gateway.Call{Method: tt.method, Params: []byte(tt.params)}); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	t.Run("empty namespace: tools first, as Invoke routes them", func(t *testing.T) {
		bare := b.Target("")
		if got := bare.HopAuth(&gateway.Call{Method: "b__echo"}); got != pass {
			t.Fatalf("tool: got %+v", got)
		}
		if got := bare.HopAuth(&gateway.Call{Method: "resources/read", Params: []byte(`{"uri":"res://a/item/1"}`)}); got != mintA {
			t.Fatalf("resources/read: got %+v", got)
		}
	})
}

// hopMeta decodes the _meta the fixture's hop tool, resource or prompt echoed.
func hopMeta(t *testing.T, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("echoed _meta %q: %v", text, err)
	}
	return m
}

// assertAuth checks the hop credential in an echoed _meta ("" for none).
func assertAuth(t *testing.T, meta map[string]any, want string) {
	t.Helper()
	got, present := meta[mcpbackend.MetaKeyAuthorization]
	switch {
	case want == "" && present:
		t.Fatalf("_meta carried %s = %v, want none", mcpbackend.MetaKeyAuthorization, got)
	case want != "" && got != want:
		t.Fatalf("_meta %s = %v, want %q (meta %v)", mcpbackend.MetaKeyAuthorization, got, want, meta)
	}
}

func TestHopCredentialOverStdio(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20250618, mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			hop := map[string]string{"FIXTURE_HOP": "1", "FIXTURE_RESOURCES": "1"}
			fx, quiet := fixture("fx", hop), fixture("quiet", hop)
			fx.ProtocolVersions, quiet.ProtocolVersions = []string{version}, []string{version}
			quiet.DownstreamToken.Mode = "none"
			b, _ := start(t, []mcpbackend.Config{fx, quiet})
			testStdioHop(t, b, version)
		})
	}
}

func testStdioHop(t *testing.T, b *mcpbackend.Bridge, version string) {
	hop := func(ctx context.Context, tool string) map[string]any {
		t.Helper()
		res, err := b.CallTool(ctx, tool, json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		return hopMeta(t, firstText(t, res))
	}
	calls := 0 // tools/call requests to fx made with a credential
	t.Run("tools/call carries the token", func(t *testing.T) {
		calls++
		meta := hop(withToken(t, "tok-1"), "fx__hop")
		assertAuth(t, meta, "Bearer tok-1")
		if version == mcp.ProtocolVersion20260728 && meta[mcp.MetaKeyProtocolVersion] != version {
			t.Fatalf("the request's own _meta was lost: %v", meta)
		}
	})
	t.Run("merged with the progress token", func(t *testing.T) {
		calls++
		ctx := mcpbackend.WithProgress(withToken(t, "tok-2"), func(mcpbackend.Progress) {})
		meta := hop(ctx, "fx__hop")
		assertAuth(t, meta, "Bearer tok-2")
		if p, _ := meta["progressToken"].(string); !strings.HasPrefix(p, "gatehouse-") {
			t.Fatalf("progressToken %v missing beside the credential", meta["progressToken"])
		}
	})
	t.Run("no token, no member", func(t *testing.T) {
		assertAuth(t, hop(withToken(t, ""), "fx__hop"), "")
	})
	t.Run("mode none sends none", func(t *testing.T) {
		assertAuth(t, hop(withToken(t, "tok-leak"), "quiet__hop"), "")
	})
	t.Run("resources/read and prompts/get carry it", func(t *testing.T) {
		res, err := b.ReadResource(withToken(t, "tok-r"), "res://fx/hop")
		if err != nil {
			t.Fatal(err)
		}
		var rr struct{ Contents []struct{ Text string } }
		if err := json.Unmarshal(res, &rr); err != nil || len(rr.Contents) != 1 {
			t.Fatalf("read %s: %v", res, err)
		}
		assertAuth(t, hopMeta(t, rr.Contents[0].Text), "Bearer tok-r")
		res, err = b.GetPrompt(withToken(t, "tok-p"), "fx__hop", nil)
		if err != nil {
			t.Fatal(err)
		}
		var pr struct {
			Messages []struct{ Content struct{ Text string } }
		}
		if err := json.Unmarshal(res, &pr); err != nil || len(pr.Messages) != 1 {
			t.Fatalf("prompt %s: %v", res, err)
		}
		assertAuth(t, hopMeta(t, pr.Messages[0].Content.Text), "Bearer tok-p")
	})
	t.Run("through the target", func(t *testing.T) {
		calls++
		res, err := b.Target("mcp.").Invoke(withToken(t, "tok-t"), &gateway.Call{Method: mcpbackend.MethodToolsCall,
			Params: []byte(`{"name":"fx__hop","arguments":{}}`), Zone: gateway.ZoneInternal})
		if err != nil {
			t.Fatal(err)
		}
		assertAuth(t, hopMeta(t, firstText(t, res.Value)), "Bearer tok-t")
	})
	t.Run("concurrent calls each carry their own", func(t *testing.T) {
		const n = 32
		calls += n
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				want := "Bearer tok-c" + strconv.Itoa(i)
				res, err := b.CallTool(gateway.WithHopToken(context.Background(), "tok-c"+strconv.Itoa(i)), "fx__hop",
					json.RawMessage(`{"tag":"`+strconv.Itoa(i)+`"}`))
				if err != nil {
					t.Error(err)
					return
				}
				var meta map[string]any
				if err := json.Unmarshal([]byte(firstTextOf(res)), &meta); err != nil || meta[mcpbackend.MetaKeyAuthorization] != want {
					t.Errorf("call %d saw %v, want %q", i, meta[mcpbackend.MetaKeyAuthorization], want)
				}
			})
		}
		wg.Wait()
	})
	t.Run("the bridge's own requests carry none", func(t *testing.T) {
		log := callText(t, b, "fx__hop_log", `{}`)
		seen := map[string]int{}
		withKey := 0
		for line := range strings.SplitSeq(log, "\n") {
			method, members, _ := strings.Cut(line, " ")
			seen[method]++
			if !strings.Contains(","+members+",", ","+mcpbackend.MetaKeyAuthorization+",") {
				continue
			}
			switch method {
			case "tools/call":
				withKey++
			case "resources/read", "prompts/get":
			default:
				t.Errorf("the bridge's own %s request carried the credential", method)
			}
		}
		if withKey != calls {
			t.Errorf("%d tools/call requests carried a credential, want %d\n%s", withKey, calls, log)
		}
		for _, m := range []string{"tools/list", "prompts/list", "resources/list"} {
			if seen[m] == 0 {
				t.Errorf("no %s request was recorded:\n%s", m, log)
			}
		}
		if seen["initialize"]+seen["server/discover"] == 0 {
			t.Errorf("no handshake request was recorded:\n%s", log)
		}
	})
}

// firstTextOf returns the text of a CallToolResult's first content item, "" if it has none.
func firstTextOf(res json.RawMessage) string {
	var r struct{ Content []struct{ Text string } }
	if json.Unmarshal(res, &r) != nil || len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

// TestDownstreamTokenValidate: the section is validated with the rest of the backend, its
// errors naming it (the rules themselves are tested in package gateway).
func TestDownstreamTokenValidate(t *testing.T) {
	cfg := func(d gateway.DownstreamTokenConfig) mcpbackend.Config {
		return mcpbackend.Config{Name: "docs", Stdio: &mcpbackend.StdioConfig{Command: "server"}, DownstreamToken: d}
	}
	tests := []struct {
		name string
		d    gateway.DownstreamTokenConfig
		want string // "" for valid
	}{
		{"absent", gateway.DownstreamTokenConfig{}, ""},
		{"unknown mode", gateway.DownstreamTokenConfig{Mode: "forward"}, `mcp upstream "docs": downstream_token.mode: "forward" is not one of mint, passthrough, none`},
		{"audience with a space", gateway.DownstreamTokenConfig{Audience: "docs api"}, "downstream_token.audience must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mcpbackend.ValidateAll([]mcpbackend.Config{cfg(tt.d)})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

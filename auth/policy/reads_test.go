package policy_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/auth/policy"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

var readRules = []policy.Rule{
	{ID: "docs", Match: policy.Match{MCPResource: "files/file:///docs/*"}, Scopes: []string{"docs"}},
	{ID: "secret", Match: policy.Match{MCPResource: "files/file:///docs/secret.md"}, Scopes: []string{"secret"}},
	{ID: "prompts", Match: policy.Match{MCPPrompt: "files/*"}, Scopes: []string{"prompts"}},
	{ID: "review", Match: policy.Match{MCPPrompt: "files/review"}, Scopes: []string{"review"}, Mutation: policy.Destructive},
	{ID: "mcp-methods", Match: policy.Match{Method: "mcp.*"}, Scopes: []string{"never"}},
}

func resource(uri string) policy.Subject {
	return policy.Subject{Method: "mcp.resources/read", Kind: policy.KindMCP, MCPServer: "files", MCPResource: uri}
}

func prompt(name string) policy.Subject {
	return policy.Subject{Method: "mcp.prompts/get", Kind: policy.KindMCP, MCPServer: "files", MCPPrompt: name}
}

// TestDecideResourcesAndPrompts: mcp_resource and mcp_prompt rules match "<server>/<uri or
// name>" globs, rank with mcp_tool (exact before glob, then more literal characters, then
// above capability and method), default to READ_ONLY,
// and an unmatched resource or prompt is refused under default deny and READ_ONLY under
// default allow.
func TestDecideResourcesAndPrompts(t *testing.T) {
	tests := []struct {
		name         string
		def          string
		subject      policy.Subject
		scopes       []string
		wantRule     string
		wantAllowed  bool
		wantMutation policy.Mutation
	}{
		{"resource glob", "", resource("file:///docs/a.md"), []string{"docs"}, "docs", true, policy.ReadOnly},
		{"exact resource beats its glob", "", resource("file:///docs/secret.md"), []string{"docs"}, "secret", false, policy.ReadOnly},
		{"an unknown resource falls to the method rule", "", policy.Subject{Method: "mcp.resources/read", Kind: policy.KindMCP},
			nil, "mcp-methods", false, policy.NonIdempotentWrite},
		{"prompt glob", "", prompt("summarize"), []string{"prompts"}, "prompts", true, policy.ReadOnly},
		{"exact prompt, its own mutation class", "", prompt("review"), []string{"review"}, "review", true, policy.Destructive},
		{"other server under deny", "", policy.Subject{Method: "mcp.prompts/get", Kind: policy.KindMCP, MCPServer: "web", MCPPrompt: "x"},
			[]string{"prompts"}, "mcp-methods", false, policy.NonIdempotentWrite},
		{"a longer resource glob beats a shorter method glob", "", resource("file:///docs/b.md"), []string{"docs"}, "docs", true, policy.ReadOnly},
		{"unmatched resource under deny", "", policy.Subject{Method: "x", Kind: policy.KindMCP, MCPServer: "web", MCPResource: "https://a"},
			nil, "", false, policy.NonIdempotentWrite},
		{"unmatched resource under allow reads", policy.DefaultAllow,
			policy.Subject{Method: "x", Kind: policy.KindMCP, MCPServer: "web", MCPResource: "https://a"}, nil, "", true, policy.ReadOnly},
		{"unmatched tool under allow writes", policy.DefaultAllow,
			policy.Subject{Method: "x", Kind: policy.KindMCP, MCPServer: "web", MCPTool: "t"}, nil, "", true, policy.NonIdempotentWrite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engine(t, policy.Config{Rules: readRules, Default: tt.def, ApprovalFor: []policy.Mutation{policy.NonIdempotentWrite}})
			d := e.Decide(policy.Input{Zone: gateway.ZoneExternal, Protocol: gateway.ProtocolMCP, Subject: tt.subject,
				Principal: gateway.Principal{Scopes: tt.scopes}})
			if d.Rule != tt.wantRule || d.Allowed != tt.wantAllowed || d.Mutation != tt.wantMutation {
				t.Fatalf("got rule %q allowed %v mutation %s (%s), want %q %v %s", d.Rule, d.Allowed, d.Mutation, d.Reason,
					tt.wantRule, tt.wantAllowed, tt.wantMutation)
			}
			if tt.wantMutation == policy.ReadOnly && d.NeedsApproval {
				t.Fatal("an unmatched read needs approval under approval_for [NON_IDEMPOTENT_WRITE]")
			}
		})
	}
	if e := engine(t, policy.Config{Rules: readRules}); !e.MatchesMCPReads() || e.MatchesMCPTools() {
		t.Fatalf("MatchesMCPReads %v, MatchesMCPTools %v", e.MatchesMCPReads(), e.MatchesMCPTools())
	}
}

// TestFilterResourcesAndPrompts: a listing shows the resources and prompts whose rule's
// scopes the caller holds.
func TestFilterResourcesAndPrompts(t *testing.T) {
	e := engine(t, policy.Config{Rules: readRules})
	got := e.Filter(gateway.Principal{Scopes: []string{"docs", "prompts"}}, gateway.ZoneExternal, gateway.ProtocolMCP,
		[]policy.Subject{resource("file:///docs/a.md"), resource("file:///docs/secret.md"), prompt("summarize"), prompt("review")})
	if want := []bool{true, false, true, false}; !equalBools(got, want) {
		t.Fatalf("Filter = %v, want %v", got, want)
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReadMatchValidation: mcp_resource and mcp_prompt need "<server>/…", count as the
// one match of their rule, and may be read by conditions.
func TestReadMatchValidation(t *testing.T) {
	tests := []struct {
		name string
		rule policy.Rule
		want string // in the error; "" for none
	}{
		{"resource without server", policy.Rule{Match: policy.Match{MCPResource: "file:"}}, `match.mcp_resource "file:" is not <server>/<uri>`},
		{"prompt without server", policy.Rule{Match: policy.Match{MCPPrompt: "review"}}, `match.mcp_prompt "review" is not <server>/<prompt>`},
		{"two matches", policy.Rule{Match: policy.Match{MCPPrompt: "a/b", MCPResource: "a/c"}}, "exactly one of"},
		{"condition on the resource", policy.Rule{Match: policy.Match{MCPResource: "a/*"}, When: `call.mcp_resource.startsWith("a/")`}, ""},
		{"condition on the prompt", policy.Rule{Match: policy.Match{MCPPrompt: "a/*"}, When: `call.mcp_prompt == "a/b"`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.New(policy.Config{Rules: []policy.Rule{tt.rule}})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New: %v, want %s", err, tt.want)
			}
		})
	}
	e := engine(t, policy.Config{Rules: []policy.Rule{{Match: policy.Match{MCPPrompt: "a/*"}, When: `call.mcp_prompt == "a/b"`}}})
	for name, want := range map[string]bool{"b": true, "c": false} {
		d := e.Decide(policy.Input{Zone: gateway.ZoneInternal, Subject: policy.Subject{Method: "m", Kind: policy.KindMCP, MCPServer: "a", MCPPrompt: name}})
		if d.Allowed != want {
			t.Errorf("prompt a/%s: allowed %v (%s)", name, d.Allowed, d.Reason)
		}
	}
}

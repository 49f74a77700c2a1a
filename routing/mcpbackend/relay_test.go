package mcpbackend_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Protocol revisions the relay is tested on: a handshake revision, where the server sends
// requests of its own and attribution falls back to the calls in flight, and the
// stateless one, where they come back as input requests of the call itself.
var relayVersions = []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728}

// testPeer is a downstream client: it answers sampling with its id as the text, and
// elicitation with its id as the name.
type testPeer struct {
	id   string
	caps mcpbackend.PeerCapabilities
	// before, when set, runs at the start of each request (a barrier).
	before func(ctx context.Context) error

	mu       sync.Mutex
	requests []string
	logs     []string
}

func newPeer(id string) *testPeer {
	return &testPeer{id: id, caps: mcpbackend.PeerCapabilities{Sampling: true, Elicitation: true, LogLevel: "debug"}}
}

func (p *testPeer) ID() string                                { return p.id }
func (p *testPeer) Capabilities() mcpbackend.PeerCapabilities { return p.caps }

func (p *testPeer) Log(params json.RawMessage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.logs = append(p.logs, string(params))
}

func (p *testPeer) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	p.mu.Lock()
	p.requests = append(p.requests, method+" "+string(params))
	p.mu.Unlock()
	if p.before != nil {
		if err := p.before(ctx); err != nil {
			return nil, err
		}
	}
	if method == "sampling/createMessage" {
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"` + p.id + `"},"model":"m","stopReason":"endTurn"}`), nil
	}
	return json.RawMessage(`{"action":"accept","content":{"name":"` + p.id + `"}}`), nil
}

func (p *testPeer) seen() (requests, logs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...), append([]string(nil), p.logs...)
}

// interactive is the fixture with its interactive tools, speaking version, with both
// policies set to policy.
func interactive(version, policy string, env map[string]string) mcpbackend.Config {
	if env == nil {
		env = map[string]string{}
	}
	env["FIXTURE_INTERACTIVE"] = "1"
	c := fixture("fx", env)
	c.ProtocolVersions = []string{version}
	c.Sampling, c.Elicitation = policy, policy
	return c
}

// callAs calls a tool with peer p and returns the text of its result.
func callAs(t *testing.T, b *mcpbackend.Bridge, p mcpbackend.Peer, tool, args string) (string, error) {
	t.Helper()
	ctx := ctxTimeout(t, 15*time.Second)
	if p != nil {
		ctx = mcpbackend.WithPeer(ctx, p)
	}
	res, err := b.CallTool(ctx, tool, json.RawMessage(args))
	if err != nil {
		return "", err
	}
	return firstText(t, res), nil
}

func TestRequestsReachTheCallingPeer(t *testing.T) {
	for _, v := range relayVersions {
		t.Run(v, func(t *testing.T) {
			b, _ := start(t, []mcpbackend.Config{interactive(v, mcpbackend.PolicyClient, nil)})
			p := newPeer("p1")
			tests := []struct {
				tool, args, want string
			}{
				{"sample", `{"prompt":"hi"}`, `"text":"p1"`},
				{"elicit", `{"message":"who?"}`, `elicited: accept {"name":"p1"}`},
			}
			for _, tt := range tests {
				got, err := callAs(t, b, p, tt.tool, tt.args)
				if err != nil || !strings.Contains(got, tt.want) {
					t.Errorf("%s = %q, %v; want %q", tt.tool, got, err, tt.want)
				}
			}
			requests, _ := p.seen()
			if len(requests) != 2 || !strings.Contains(requests[0], `"hi"`) || !strings.Contains(requests[1], `"default":"ada"`) {
				t.Fatalf("requests the peer saw: %q", requests)
			}
		})
	}
}

func TestRequestsRefusedWithReason(t *testing.T) {
	noSampling := newPeer("ns")
	noSampling.caps.Sampling = false
	tests := []struct {
		name, policy string
		peer         *testPeer
		tool, args   string
		reason       string // in the error the bridge returns (2026-07-28, where it is the call's)
	}{
		{"refuse", mcpbackend.PolicyRefuse, newPeer("p"), "sample", `{"prompt":"x"}`, ""},
		{"no peer", mcpbackend.PolicyClient, nil, "sample", `{"prompt":"x"}`, "cannot be attributed"},
		{"not declared", mcpbackend.PolicyClient, noSampling, "sample", `{"prompt":"x"}`, "did not declare the sampling capability"},
		{"url mode", mcpbackend.PolicyClient, newPeer("p"), "elicit", `{"message":"m","mode":"url"}`, "only form mode"},
		{"route without a backend", mcpbackend.PolicyRoute, newPeer("p"), "sample", `{"prompt":"x"}`, ""},
	}
	for _, v := range relayVersions {
		t.Run(v, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					b, _ := start(t, []mcpbackend.Config{interactive(v, tt.policy, nil)})
					var peer mcpbackend.Peer
					if tt.peer != nil {
						peer = tt.peer
					}
					got, err := callAs(t, b, peer, tt.tool, tt.args)
					if err == nil {
						t.Fatalf("%s answered %q", tt.tool, got)
					}
					if v == mcp.ProtocolVersion20260728 && tt.reason != "" {
						ge, ok := errors.AsType[*gateway.Error](err)
						if !ok || ge.Code() != schemas.CodeDependencyFailed || !strings.Contains(ge.Message(), tt.reason) ||
							ge.Data()["upstream"] != "fx" || ge.Data()["policy"] != mcpbackend.PolicyClient {
							t.Fatalf("error %v, want DEPENDENCY_FAILED saying %q", err, tt.reason)
						}
					}
					if tt.peer != nil {
						if requests, _ := tt.peer.seen(); len(requests) != 0 {
							t.Fatalf("the peer was asked: %q", requests)
						}
					}
				})
			}
		})
	}
}

// TestConcurrentCallersNotMisrouted holds one call in flight on the upstream's only
// session while another caller's call makes a request the server sends outside any
// call's context (a handshake revision over stdio): it is refused, never given to the
// other caller. On 2026-07-28 the request comes back in its call's context and two
// concurrent callers each get their own.
func TestConcurrentCallersNotMisrouted(t *testing.T) {
	t.Run("ambiguous is refused", func(t *testing.T) {
		for _, holder := range []struct {
			name string
			peer mcpbackend.Peer
		}{{"other peer", newPeer("a")}, {"caller without a peer", nil}} {
			t.Run(holder.name, func(t *testing.T) {
				b, logs := start(t, []mcpbackend.Config{interactive(mcp.ProtocolVersion20251125, mcpbackend.PolicyClient, nil)})
				held := make(chan error, 1)
				go func() {
					_, err := callAs(t, b, holder.peer, "gate", `{"name":"g"}`)
					held <- err
				}()
				waitFor(t, 10*time.Second, "the held call to reach the server", func() bool { return callText(t, b, "gates", `{}`) == "1" })
				pb := newPeer("b")
				if got, err := callAs(t, b, pb, "sample", `{"prompt":"x"}`); err == nil {
					t.Fatalf("an ambiguous request was answered: %q", got)
				}
				if got := callText(t, b, "open", `{"name":"g"}`); got != "open" {
					t.Fatalf("open = %q", got)
				}
				if err := <-held; err != nil {
					t.Fatal(err)
				}
				if p, ok := holder.peer.(*testPeer); ok {
					if requests, _ := p.seen(); len(requests) != 0 {
						t.Fatalf("misrouted to the other caller: %q", requests)
					}
				}
				if requests, _ := pb.seen(); len(requests) != 0 {
					t.Fatalf("an ambiguous request reached a caller: %q", requests)
				}
				if !strings.Contains(logs.String(), "calls of several callers are in flight") {
					t.Fatalf("the refusal was not logged:\n%s", logs)
				}
				// Alone on the session, the same caller is asked.
				if got, err := callAs(t, b, pb, "sample", `{"prompt":"x"}`); err != nil || !strings.Contains(got, `"b"`) {
					t.Fatalf("sample alone = %q, %v", got, err)
				}
			})
		}
	})
	t.Run("exact on "+mcp.ProtocolVersion20260728, func(t *testing.T) {
		b, _ := start(t, []mcpbackend.Config{interactive(mcp.ProtocolVersion20260728, mcpbackend.PolicyClient, nil)})
		concurrentCallers(t, b, "sample", `{"prompt":"x"}`, `"text":"%s"`)
	})
}

// concurrentCallers makes two calls of tool with different peers whose requests each
// wait for the other's (so both calls are in flight when they are attributed) and
// checks that each caller got its own.
func concurrentCallers(t *testing.T, b *mcpbackend.Bridge, tool, args, wantFmt string) {
	t.Helper()
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	barrier := func(ctx context.Context) error {
		arrived.Done()
		select {
		case <-both:
			return nil
		case <-ctx.Done():
			return gateway.AsError(ctx.Err())
		}
	}
	peers := []*testPeer{newPeer("a"), newPeer("b")}
	results := make([]string, len(peers))
	errs := make([]error, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		p.before = barrier
		wg.Go(func() { results[i], errs[i] = callAs(t, b, p, tool, args) })
	}
	wg.Wait()
	for i, p := range peers {
		if want := strings.ReplaceAll(wantFmt, "%s", p.id); errs[i] != nil || !strings.Contains(results[i], want) {
			t.Errorf("caller %s got %q, %v; want %s", p.id, results[i], errs[i], want)
		}
		if requests, _ := p.seen(); len(requests) != 1 {
			t.Errorf("caller %s was asked %d times", p.id, len(requests))
		}
	}
}

// TestHTTPResponseStreamAttributesExactly: over streamable HTTP a request the server
// sends on a call's response stream is handled in that call's context, so two
// concurrent callers each get their own even on a handshake revision.
func TestHTTPResponseStreamAttributesExactly(t *testing.T) {
	s := server.NewMCPServer("http-elicit", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("elicit"), func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if answer := server.ElicitationResponse(r.Params.InputResponses, "input"); answer != nil {
			raw, _ := json.Marshal(answer.Content)
			return mcp.NewToolResultText("elicited " + string(raw)), nil
		}
		return server.NewInputRequestBuilder("").Elicit("input", mcp.ElicitationParams{Message: "name?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}).ToolResult(), nil
	})
	h := server.NewStreamableHTTPServer(s, server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
	hs := httptest.NewServer(http.HandlerFunc(h.ServeHTTP))
	t.Cleanup(func() {
		_ = h.Shutdown(context.Background())
		hs.Close()
	})
	cfg := httpUpstream(hs.URL + "/mcp")
	cfg.Elicitation = mcpbackend.PolicyClient
	b, _ := start(t, []mcpbackend.Config{cfg})
	concurrentCallers(t, b, "elicit", `{}`, `{"name":"%s"}`)
}

func TestLogRelayed(t *testing.T) {
	tests := []struct {
		name, version, level string
		want                 []string // messages the peer receives, in order
	}{
		// A handshake revision's level is one per session: the gateway asks for every
		// level and leaves filtering to the face.
		{"session level", mcp.ProtocolVersion20251125, "warning", []string{"one", "two", "three"}},
		// On 2026-07-28 each call asks for its caller's level.
		{"request level", mcp.ProtocolVersion20260728, "info", []string{"one", "three"}},
		{"none asked", mcp.ProtocolVersion20260728, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, logs := start(t, []mcpbackend.Config{interactive(tt.version, mcpbackend.PolicyRefuse, nil)})
			p := newPeer("p")
			p.caps.LogLevel = tt.level
			if got, err := callAs(t, b, p, "log", `{"messages":"info:one,debug:two,error:three"}`); err != nil || got != "logged" {
				t.Fatalf("log = %q, %v", got, err)
			}
			_, got := p.seen()
			if len(got) != len(tt.want) {
				t.Fatalf("peer got %q, want %q", got, tt.want)
			}
			for i, w := range tt.want {
				var m struct{ Level, Logger, Data string }
				if err := json.Unmarshal([]byte(got[i]), &m); err != nil || m.Data != w || m.Logger != "fixture" {
					t.Fatalf("message %d = %s, want data %q", i, got[i], w)
				}
			}
			if len(tt.want) > 0 && !strings.Contains(logs.String(), `msg="upstream log" upstream=fx mcp_level=error logger=fixture data=three`) {
				t.Fatalf("not in the gateway log:\n%s", logs)
			}
		})
	}
	t.Run("no caller", func(t *testing.T) {
		b, logs := start(t, []mcpbackend.Config{interactive(mcp.ProtocolVersion20251125, mcpbackend.PolicyRefuse, nil)})
		if got := callText(t, b, "log", `{"messages":"warning:alone"}`); got != "logged" {
			t.Fatalf("log = %q", got)
		}
		if !strings.Contains(logs.String(), "data=alone") || !strings.Contains(logs.String(), "upstream log not relayed") {
			t.Fatalf("gateway log:\n%s", logs)
		}
	})
}

func TestCompletionForwarded(t *testing.T) {
	b, _ := start(t, []mcpbackend.Config{
		interactive(mcp.ProtocolVersion20260728, mcpbackend.PolicyRefuse, map[string]string{"FIXTURE_COMPLETIONS": "1"}),
		func() mcpbackend.Config { // a second upstream without completions
			c := fixture("plain", nil)
			c.Names.Mode = mcpbackend.PrefixAlways
			return c
		}(),
	})
	ctx := ctxTimeout(t, 10*time.Second)
	tests := []struct {
		name, params, want string
		code               schemas.Code
	}{
		{"prompt", `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"a"}}`, `"values":["ada","alan"]`, 0},
		{"resource template", `{"ref":{"type":"ref/resource","uri":"res://fx/tmpl/{id}"},"argument":{"name":"id","value":"1"}}`, `"values":[]`, 0},
		{"upstream without completions", `{"ref":{"type":"ref/prompt","name":"plain__greet"},"argument":{"name":"who","value":"a"}}`, `{"completion":{"values":[]}}`, 0},
		{"unknown prompt", `{"ref":{"type":"ref/prompt","name":"nope"},"argument":{"name":"who","value":""}}`, "", schemas.CodeCapabilityNotFound},
		{"bad ref", `{"ref":{"type":"ref/tool","name":"x"},"argument":{"name":"a","value":""}}`, "", schemas.CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := b.Complete(ctx, json.RawMessage(tt.params))
			if tt.code != 0 {
				if codeOf(err) != tt.code {
					t.Fatalf("got %s, %v; want code %d", res, err, tt.code)
				}
				return
			}
			if err != nil || !strings.Contains(string(res), tt.want) {
				t.Fatalf("got %s, %v; want %s", res, err, tt.want)
			}
		})
	}
}

func TestCapabilitiesDeclaredByPolicy(t *testing.T) {
	route := routeFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return nil, nil })
	tests := []struct {
		name, policy          string
		opts                  []mcpbackend.Option
		sampling, elicitation bool
	}{
		{"refuse", mcpbackend.PolicyRefuse, nil, false, false},
		{"client", mcpbackend.PolicyClient, nil, true, true},
		{"route without handlers", mcpbackend.PolicyRoute, nil, false, false},
		{"route with handlers", mcpbackend.PolicyRoute, []mcpbackend.Option{mcpbackend.WithSampling(route), mcpbackend.WithElicitation(route)}, true, true},
	}
	for _, v := range relayVersions {
		for _, tt := range tests {
			t.Run(v+"/"+tt.name, func(t *testing.T) {
				b, _ := start(t, []mcpbackend.Config{interactive(v, tt.policy, nil)}, tt.opts...)
				var caps struct {
					Sampling    *struct{} `json:"sampling"`
					Elicitation *struct {
						Form *struct{} `json:"form"`
					} `json:"elicitation"`
				}
				if err := json.Unmarshal([]byte(callText(t, b, "caps", `{}`)), &caps); err != nil {
					t.Fatal(err)
				}
				if (caps.Sampling != nil) != tt.sampling || (caps.Elicitation != nil) != tt.elicitation ||
					(caps.Elicitation != nil && caps.Elicitation.Form == nil) {
					t.Fatalf("declared sampling %v, elicitation %+v", caps.Sampling != nil, caps.Elicitation)
				}
			})
		}
	}
}

// routeFunc is a SamplingHandler and ElicitationHandler.
type routeFunc func(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error)

func (f routeFunc) CreateMessage(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error) {
	return f(ctx, upstream, params)
}

func (f routeFunc) Elicit(ctx context.Context, upstream string, params json.RawMessage) (json.RawMessage, error) {
	return f(ctx, upstream, params)
}

func TestRoutePolicy(t *testing.T) {
	var mu sync.Mutex
	var got []string
	route := routeFunc(func(_ context.Context, upstream string, params json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		got = append(got, upstream+" "+string(params))
		mu.Unlock()
		if strings.Contains(string(params), "fail") {
			return nil, gateway.Errorf(schemas.CodeUnavailable, "The sampling backend answered HTTP 503")
		}
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"routed"},"model":"m"}`), nil
	})
	for _, v := range relayVersions {
		t.Run(v, func(t *testing.T) {
			got = nil
			b, _ := start(t, []mcpbackend.Config{interactive(v, mcpbackend.PolicyRoute, nil)}, mcpbackend.WithSampling(route))
			// A peer is present but not asked: the policy is route.
			p := newPeer("p")
			if res, err := callAs(t, b, p, "sample", `{"prompt":"hi"}`); err != nil || !strings.Contains(res, `"routed"`) {
				t.Fatalf("sample = %q, %v", res, err)
			}
			if _, err := callAs(t, b, p, "sample", `{"prompt":"fail"}`); err == nil {
				t.Fatal("a backend error did not fail the call")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 2 || !strings.HasPrefix(got[0], `fx {`) || !strings.Contains(got[0], `"maxTokens":10`) {
				t.Fatalf("the handler saw %q", got)
			}
			if requests, _ := p.seen(); len(requests) != 0 {
				t.Fatalf("the peer was asked under route: %q", requests)
			}
		})
	}
}

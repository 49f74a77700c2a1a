package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// serveDemoMCP serves the conformance fixtures (demo.MCP) over streamable HTTP on
// loopback and returns the endpoint's URL.
func serveDemoMCP(t *testing.T) string {
	t.Helper()
	h := demo.NewMCP(demo.MCPOptions{Logger: slog.New(slog.DiscardHandler)}).StreamableHTTPHandler()
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Shutdown(context.Background())
		hs.Close()
	})
	return hs.URL + "/mcp"
}

// downstream is an MCP client of the face that answers sampling and elicitation.
type downstream struct {
	*client.Client
	mu   sync.Mutex
	logs []string
}

// CreateMessage implements client.SamplingHandler.
func (d *downstream) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	prompt := ""
	if len(req.Messages) > 0 {
		if tc, ok := req.Messages[0].Content.(mcp.TextContent); ok {
			prompt = tc.Text
		}
	}
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant,
		Content: mcp.NewTextContent("completed " + prompt)}, Model: "test-model", StopReason: "endTurn"}, nil
}

// Elicit implements client.ElicitationHandler.
func (d *downstream) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"username": "ada", "email": "ada@example.com", "asked": req.Params.Message}}}, nil
}

func (d *downstream) logged() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.logs...)
}

// connectFace connects a client of protocol 2025-11-25 (the face relays server requests
// to clients of a handshake revision) to the face at url, with the standalone GET stream
// open, where mcp-go sends sampling requests.
func connectFace(t *testing.T, url string) *downstream {
	t.Helper()
	d := &downstream{}
	tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening(), //nolint:staticcheck // sampling requests arrive on the GET stream
		transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	d.Client = client.NewClient(tr, client.WithSamplingHandler(d), client.WithElicitationHandler(d))
	d.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationMessage) {
			d.mu.Lock()
			d.logs = append(d.logs, fmt.Sprint(n.Params.AdditionalFields["data"]))
			d.mu.Unlock()
		}
	})
	t.Cleanup(func() { _ = d.Close() })
	ctx := ctxFor(t, 10*time.Second)
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "relay-test", Version: "1"}
	if _, err := d.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return d
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// toolText calls a tool and returns its first text.
func toolText(t *testing.T, c *client.Client, name string, args map[string]any) string {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(ctxFor(t, 15*time.Second), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: no content", name)
	}
	tc, _ := mcp.AsTextContent(res.Content[0])
	if tc == nil || res.IsError {
		t.Fatalf("%s: %+v", name, res)
	}
	return tc.Text
}

// TestMCPFaceRelaysToTheCaller runs the fixtures' interactive tools through the face, the
// fixtures bridged over streamable HTTP on both kinds of protocol revision: on
// 2025-11-25 the upstream sends its own requests (elicitation on the call's stream,
// sampling on the GET stream), on 2026-07-28 they come back as input requests of the
// call.
func TestMCPFaceRelaysToTheCaller(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			ts := start(t, strings.Replace(baseConfig, "routing:\n  demo: {}\n", fmt.Sprintf(`routing:
  mcp:
    servers:
      - name: demo
        http: {url: %q}
        protocol_versions: [%s]
        sampling: client
        elicitation: client
`, serveDemoMCP(t), version), 1)+"mcp_face: {}\n", nil)
			d := connectFace(t, ts.base+"/mcp")
			waitFor(t, func() bool {
				res, err := d.ListTools(ctxFor(t, 5*time.Second), mcp.ListToolsRequest{})
				return err == nil && len(res.Tools) > 5
			})
			tests := []struct {
				tool string
				args map[string]any
				want string
			}{
				{"test_sampling", map[string]any{"prompt": "the sky"}, "LLM response: completed the sky"},
				{"test_elicitation", map[string]any{"message": "who are you?"}, `"asked":"who are you?"`},
				{"test_elicitation_sep1034_defaults", nil, "action=accept"},
			}
			for _, tt := range tests {
				if got := toolText(t, d.Client, tt.tool, tt.args); !strings.Contains(got, tt.want) {
					t.Errorf("%s = %q, want %q in it", tt.tool, got, tt.want)
				}
			}

			level := mcp.SetLevelRequest{}
			level.Params.Level = mcp.LoggingLevelDebug
			if err := d.SetLevel(ctxFor(t, 5*time.Second), level); err != nil { //nolint:staticcheck // the face speaks 2025-11-25 here
				t.Fatal(err)
			}
			toolText(t, d.Client, "test_tool_with_logging", nil)
			waitFor(t, func() bool { return len(d.logged()) >= 3 })
			if got := strings.Join(d.logged(), "|"); got != "Tool execution started|Tool processing data|Tool execution completed" {
				t.Fatalf("logs relayed: %q", got)
			}

			req := mcp.CompleteRequest{}
			req.Params.Ref = mcp.PromptReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}
			req.Params.Argument = mcp.CompleteArgument{Name: "arg1", Value: "par"}
			res, err := d.Complete(ctxFor(t, 5*time.Second), req)
			if err != nil || strings.Join(res.Completion.Values, ",") != "paris,park,party" {
				t.Fatalf("completion: %+v, %v", res, err)
			}
		})
	}
}

// TestMCPFaceRelayNeedsTheCapability: a client that did not declare sampling is not
// asked; the call fails with the gateway's reason.
func TestMCPFaceRelayNeedsTheCapability(t *testing.T) {
	ts := start(t, strings.Replace(baseConfig, "routing:\n  demo: {}\n", fmt.Sprintf(`routing:
  mcp:
    servers:
      - name: demo
        http: {url: %q}
        sampling: client
`, serveDemoMCP(t)), 1)+"mcp_face: {}\n", nil)
	tr, err := transport.NewStreamableHTTP(ts.base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	t.Cleanup(func() { _ = c.Close() })
	ctx := ctxFor(t, 15*time.Second)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "test_sampling", map[string]any{"prompt": "x"}
	waitFor(t, func() bool {
		_, err := c.CallTool(ctx, req)
		return err != nil && !strings.Contains(err.Error(), "not found")
	})
	_, err = c.CallTool(ctx, req)
	if err == nil || !strings.Contains(err.Error(), "did not declare the sampling capability") {
		t.Fatalf("sampling for a client without the capability: %v", err)
	}
}

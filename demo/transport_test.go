package demo_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/demo"
)

func TestServeStdioEndsAtEOF(t *testing.T) {
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	var out strings.Builder
	if err := demo.NewMCP(demo.MCPOptions{}).ServeStdio(context.Background(), in, &out); err != nil {
		t.Fatalf("ServeStdio: %v, want nil at EOF", err)
	}
	if got := out.String(); !strings.Contains(got, `"id":1`) || !strings.Contains(got, `"result":{}`) {
		t.Errorf("output %q, want the ping's empty result", got)
	}
}

func TestServeStdioEndsWithContext(t *testing.T) {
	in, feed := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- demo.NewMCP(demo.MCPOptions{}).ServeStdio(ctx, in, io.Discard) }()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeStdio: %v, want nil when the context ends", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("ServeStdio did not return when its context ended")
	}
	_ = feed.Close() // releases the read mcp-go left blocked on in
}

func TestServerInfo(t *testing.T) {
	tests := []struct {
		opts          demo.MCPOptions
		name, version string
	}{
		{demo.MCPOptions{}, demo.DefaultMCPName, demo.DefaultMCPVersion},
		{demo.MCPOptions{Name: "upstream-a", Version: "2.0.0"}, "upstream-a", "2.0.0"},
	}
	for _, tt := range tests {
		c := inProcess(mcp.ProtocolVersion20251125)(t, demo.NewMCP(tt.opts))
		if err := c.Start(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		res, err := c.Initialize(ctxT(t), mcp.InitializeRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if res.ServerInfo.Name != tt.name || res.ServerInfo.Version != tt.version {
			t.Errorf("serverInfo %+v, want %s %s", res.ServerInfo, tt.name, tt.version)
		}
		caps := res.Capabilities
		if caps.Tools == nil || caps.Resources == nil || !caps.Resources.Subscribe || caps.Prompts == nil ||
			caps.Logging == nil || caps.Completions == nil || caps.Sampling != nil || caps.Elicitation != nil {
			t.Errorf("capabilities %s: want tools, resources (subscribe), prompts, logging, completions, and no client capabilities",
				asJSON(t, caps))
		}
	}
}

func TestStepDelay(t *testing.T) {
	tests := []struct {
		delay    time.Duration
		min, max time.Duration
	}{
		{0, 3 * demo.DefaultMCPStepDelay, testTimeout}, // three steps: two between notifications, one to settle
		{-1, 0, demo.DefaultMCPStepDelay},
		{10 * time.Millisecond, 30 * time.Millisecond, demo.DefaultMCPStepDelay * 3},
	}
	for _, tt := range tests {
		c := connect(t, demo.NewMCP(demo.MCPOptions{StepDelay: tt.delay}), peers[0], &fakeUser{})
		start := time.Now()
		callTool(t, c, "test_tool_with_progress", nil)
		if took := time.Since(start); took < tt.min || took > tt.max {
			t.Errorf("StepDelay %v: the call took %v, want between %v and %v", tt.delay, took, tt.min, tt.max)
		}
	}
}

func TestHTTPRefusesForeignHost(t *testing.T) {
	url := serveHTTP(t, demo.NewMCP(demo.MCPOptions{}))
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, tt := range []struct {
		host string
		want int
	}{{"evil.example.com", http.StatusForbidden}, {"", http.StatusOK}} {
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if tt.host != "" {
			req.Host = tt.host
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != tt.want {
			t.Errorf("Host %q: status %d, want %d", req.Host, res.StatusCode, tt.want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

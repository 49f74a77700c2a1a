package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
)

// stdioRun is a ServeStdio running on pipes.
type stdioRun struct {
	in   *io.PipeWriter // the client's side of stdin
	out  *io.PipeReader // the client's side of stdout
	done chan error
	logs *syncBuffer
}

// serveStdio starts ServeStdio on yaml with pipes for stdin and stdout.
func serveStdio(t *testing.T, yaml string) *stdioRun {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	run := &stdioRun{in: inW, out: outR, done: make(chan error, 1), logs: &syncBuffer{}}
	logger := slog.New(slog.NewTextHandler(run.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	go func() {
		err := ServeStdio(context.Background(), cfg, Options{Logger: logger}, inR, outW)
		_ = outW.Close() // the client's reader ends, as it would at the process's exit
		run.done <- err
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		if err := run.wait(); err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		_ = outR.Close()
		if t.Failed() {
			t.Logf("logs:\n%s", run.logs.String())
		}
	})
	return run
}

// wait returns ServeStdio's result, once.
func (r *stdioRun) wait() error {
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
		}
		return err
	case <-time.After(testTimeout):
		return io.ErrNoProgress
	}
}

// TestServeStdio drives the stdio face with mcp-go's client: the aggregated catalog, a
// tool call, a resource, a prompt; the end of stdin stops it cleanly.
func TestServeStdio(t *testing.T) {
	run := serveStdio(t, faceConfig("127.0.0.1:0", demoUpstream(t, demo.MCPOptions{}), ""))
	c := client.NewClient(transport.NewIO(run.out, run.in, io.NopCloser(strings.NewReader(""))))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "desktop-agent", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil || res.ServerInfo.Name != "gatehouse" {
		t.Fatalf("initialize: %+v, %v", res, err)
	}
	callSimpleText(t, c)
	read := mcp.ReadResourceRequest{}
	read.Params.URI = "test://static-text"
	rr, err := c.ReadResource(ctx, read)
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].(mcp.TextResourceContents).Text != "This is the content of the static text resource." {
		t.Fatalf("resources/read: %+v, %v", rr, err)
	}
	get := mcp.GetPromptRequest{}
	get.Params.Name = "test_simple_prompt"
	pr, err := c.GetPrompt(ctx, get)
	if err != nil || len(pr.Messages) == 0 {
		t.Fatalf("prompts/get: %+v, %v", pr, err)
	}
	_ = c.Close() // closes stdin
	if err := run.wait(); err != nil {
		t.Fatalf("ServeStdio after stdin closed: %v", err)
	}
	if !strings.Contains(run.logs.String(), "stdin closed") {
		t.Fatalf("logs:\n%s", run.logs.String())
	}
}

// TestServeStdioAnswersBeforeStopping: a call still running when stdin ends is answered
// before the server stops (mcp-go alone would cancel it).
func TestServeStdioAnswersBeforeStopping(t *testing.T) {
	const step = 150 * time.Millisecond // test_tool_with_progress takes 3 steps
	run := serveStdio(t, faceConfig("127.0.0.1:0", demoUpstream(t, demo.MCPOptions{StepDelay: step}), ""))
	lines := []string{
		`{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}},"id":1}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{}},"id":"call"}`,
	}
	go func() {
		_, _ = io.WriteString(run.in, strings.Join(lines, "\n")+"\n")
		_ = run.in.Close()
	}()
	answered := map[string]string{}
	sc := bufio.NewScanner(run.out)
	for sc.Scan() {
		var msg struct {
			ID     any             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.ID != nil {
			id, _ := json.Marshal(msg.ID)
			answered[string(id)] = string(msg.Result)
		}
	}
	if err := run.wait(); err != nil {
		t.Fatal(err)
	}
	if got := answered[`"call"`]; !strings.Contains(got, "Tool with progress executed successfully") {
		t.Fatalf("the call was not answered before the server stopped: %v", answered)
	}
}

// TestServeStdioNeedsAnonymousAccess: without auth.anonymous the local caller is not
// admitted, and ServeStdio says so before reading anything.
func TestServeStdioNeedsAnonymousAccess(t *testing.T) {
	cfg, err := Parse("test.yaml", []byte(strings.Replace(faceConfig("127.0.0.1:0", "", ""), "auth:\n  anonymous: {}\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	err = ServeStdio(context.Background(), cfg, Options{}, strings.NewReader(""), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "auth.anonymous") {
		t.Fatalf("ServeStdio: %v", err)
	}
}

// TestBindDemo: the demo gRPC backend is started for stdio only when a route points at it
// (always, for serve on port 0), on a free port, and only those routes follow it there.
func TestBindDemo(t *testing.T) {
	const demoAddr = "127.0.0.1:50061"
	for _, tt := range []struct {
		name   string
		demo   bool
		always bool
		routes []string
		bound  bool
	}{
		{"no demo", false, false, []string{demoAddr}, false},
		{"no demo, always", false, true, []string{demoAddr}, false},
		{"demo, no route to it", true, false, []string{"127.0.0.1:50099"}, false},
		{"demo, no route to it, always", true, true, []string{"127.0.0.1:50099"}, true},
		{"demo with routes to it", true, false, []string{demoAddr, "127.0.0.1:50099", demoAddr}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &Config{}
			if tt.demo {
				cfg.Server.DemoGRPC = &DemoGRPCConfig{Addr: demoAddr}
			}
			for _, addr := range tt.routes {
				cfg.Routing.GRPC = append(cfg.Routing.GRPC, grpcbackend.Config{Address: addr})
			}
			ln, err := bindDemo(cfg, tt.always)
			if err != nil {
				t.Fatal(err)
			}
			if (ln != nil) != tt.bound {
				t.Fatalf("bound: %v, want %v", ln != nil, tt.bound)
			}
			for i, b := range cfg.Routing.GRPC {
				want := tt.routes[i]
				if tt.bound && want == demoAddr {
					want = ln.Addr().String()
				}
				if b.Address != want {
					t.Errorf("route %d: %s, want %s", i, b.Address, want)
				}
			}
			if ln != nil {
				if host, port, _ := net.SplitHostPort(ln.Addr().String()); host != "127.0.0.1" || port == "50061" {
					t.Errorf("bound to %s", ln.Addr())
				}
				_ = ln.Close()
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/internal/conformance"
	toolv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/tool/v1"
)

// binary is the gatehouse binary built once for the tests that run it as a process.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gatehouse-cmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "gatehouse")
	build := exec.Command("go", "build", "-race", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building gatehouse:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func TestRunCommands(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(good, []byte("routing: {demo: {}}\n"), 0o600)
	_ = os.WriteFile(bad, []byte("server:\n  boundary:\n    adr: x\nlog: {level: loud}\n"), 0o600)
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr []string
	}{
		{[]string{"version"}, 0, "gatehouse ", nil},
		{[]string{"help"}, 0, "usage:", nil},
		{nil, 2, "", []string{"usage:"}},
		{[]string{"frobnicate"}, 2, "", []string{`unknown command "frobnicate"`}},
		{[]string{"validate"}, 2, "", []string{"--config is required"}},
		{[]string{"validate", "--config", good}, 0, "good.yaml: ok", nil},
		{[]string{"validate", "--config", bad}, 1, "", []string{bad + ":3:5:", `unknown key "adr"`, bad + ":4:14:"}},
		{[]string{"validate", "--config", filepath.Join(dir, "missing.yaml")}, 1, "", []string{"missing.yaml"}},
		{[]string{"serve", "--config", bad}, 1, "", []string{bad + ":3:5:"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout %q lacks %q", stdout.String(), tt.stdout)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q", stderr.String(), w)
				}
			}
		})
	}
}

// process is a gatehouse serve process started by a test.
type process struct {
	cmd    *exec.Cmd
	rpc    string
	admin  string
	stderr *lockedBuffer
	exited chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String()
}

func startProcess(t *testing.T, configFile string) *process {
	t.Helper()
	boundary, admin := freeAddr(t), freeAddr(t)
	p := &process{
		cmd:    exec.Command(binary, "serve", "--config", configFile, "--boundary-addr", boundary, "--admin-addr", admin),
		rpc:    "http://" + boundary + "/rpc",
		admin:  "http://" + admin,
		stderr: &lockedBuffer{},
		exited: make(chan error, 1),
	}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("gatehouse stderr:\n%s", p.stderr.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(p.admin + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("gatehouse did not become ready:\n%s", p.stderr.String())
	return nil
}

func (p *process) call(body string) (string, error) {
	resp, err := http.Post(p.rpc, "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return string(b), err
}

func (p *process) waitExit(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("gatehouse exited with %v", err)
		}
	case <-time.After(within):
		t.Fatalf("gatehouse still running %v after SIGTERM", within)
	}
}

func TestServeSIGTERMUnderLoad(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	_ = os.WriteFile(cfg, []byte("auth: {anonymous: {}}\nrouting: {demo: {delay: 1s}}\nserver: {shutdown_grace: 10s}\n"), 0o600)
	p := startProcess(t, cfg)
	const calls = 24
	var wg sync.WaitGroup
	var failed atomic.Int32
	var firstErr atomic.Value
	for i := range calls {
		wg.Go(func() {
			out, err := p.call(fmt.Sprintf(`{"jsonrpc":"2.0","method":"subtract","params":[%d,1],"id":%d}`, i+1, i))
			if err == nil && !strings.Contains(out, fmt.Sprintf(`"result":%d,`, i)) {
				err = fmt.Errorf("wrong answer %s", out)
			}
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		})
	}
	time.Sleep(300 * time.Millisecond) // every call is now inside its 1 s of backend latency
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d in-flight calls failed across SIGTERM; first: %v", n, calls, firstErr.Load())
	}
	p.waitExit(t, 10*time.Second)
	if !strings.Contains(p.stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no clean stop logged")
	}
}

func TestServeSIGHUPReloadsUnderLoad(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	write := func(maxBatch int) {
		body := fmt.Sprintf("auth: {anonymous: {}}\nrouting: {demo: {}}\nbatch: {max_size: %d}\nserver: {watch_config: false}\n", maxBatch)
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(2)
	p := startProcess(t, cfg)
	three := `[{"jsonrpc":"2.0","method":"get_data","id":1},{"jsonrpc":"2.0","method":"get_data","id":2},{"jsonrpc":"2.0","method":"get_data","id":3}]`
	if out, _ := p.call(three); !strings.Contains(out, "max_batch_size") {
		t.Fatalf("max_size 2 not in force: %s", out)
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if out, err := p.call(`{"jsonrpc":"2.0","method":"subtract","params":[3,1],"id":1}`); err != nil || !strings.Contains(out, `"result":2,`) {
					failed.Add(1)
				} else {
					ok.Add(1)
				}
			}
		})
	}
	for i := range 10 {
		write(3 + i%2)
		_ = p.cmd.Process.Signal(syscall.SIGHUP)
		time.Sleep(30 * time.Millisecond)
	}
	write(3)
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool { out, _ := p.call(three); return strings.HasPrefix(out, "[") })

	// An invalid file is refused; the last good configuration keeps serving.
	_ = os.WriteFile(cfg, []byte("batch: {max_size: nope}\n"), 0o600)
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, func() bool { return strings.Contains(p.stderr.String(), "reload refused") })
	if out, _ := p.call(three); !strings.HasPrefix(out, "[") {
		t.Fatalf("after a refused reload: %s", out)
	}
	stop()
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d calls failed during reloads", failed.Load(), failed.Load()+ok.Load())
	}
	t.Logf("%d calls during 11 reloads, none failed", ok.Load())
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startBackend runs `gatehouse demo-grpc` as its own process.
func startBackend(t *testing.T, addr string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, "demo-grpc", "--addr", addr)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "serving on") })
	return cmd
}

func TestGRPCBackendInAnotherProcess(t *testing.T) {
	backendAddr := freeAddr(t)
	backend := startBackend(t, backendAddr)
	defer func() { _ = backend.Process.Kill(); _ = backend.Wait() }()
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	_ = os.WriteFile(cfg, []byte(fmt.Sprintf(`auth: {anonymous: {}}
websocket: {}
routing:
  grpc:
    - name: calculator
      address: %q
      descriptors: {reflection: true}
      methods: {subtract: calculator.v1.CalculatorService/Subtract}
      services: [{service: calculator.v1.CalculatorService, prefix: "calc.", naming: snake}]
      unwrap: {subtract: result}
`, backendAddr)), 0o600)
	p := startProcess(t, cfg)
	if out, err := p.call(`{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`); err != nil || !strings.Contains(out, `"result":19`) {
		t.Fatalf("unary: %s %v", out, err)
	}
	if out, _ := p.call(`{"jsonrpc":"2.0","method":"calc.count","params":{"from":1,"to":2},"id":2}`); !strings.Contains(out, `"result":[{"value":"1"},{"value":"2"}]`) {
		t.Fatalf("server streaming collected: %s", out)
	}
	// A deadline that passes while the backend is still streaming.
	req, _ := http.NewRequest(http.MethodPost, p.rpc, strings.NewReader(`{"jsonrpc":"2.0","method":"calc.count","params":{"from":1,"to":50,"interval":"0.1s"},"id":9}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Deadline-Ms", fmt.Sprint(time.Now().Add(400*time.Millisecond).UnixMilli()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.Contains(string(body), `"code":-32000`) {
		t.Fatalf("deadline: %s", body)
	}
	// Client streaming and bidi over WebSocket.
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimSuffix(strings.TrimPrefix(p.rpc, "http"), "/rpc")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ws.Close() }()
	for _, m := range []string{
		`{"jsonrpc":"2.0","method":"calc.accumulate","id":"b"}`,
		`{"jsonrpc":"2.0","method":"$/stream/send","params":{"id":"b","value":{"delta":4}}}`,
		`{"jsonrpc":"2.0","method":"$/stream/send","params":{"id":"b","value":{"delta":3}}}`,
		`{"jsonrpc":"2.0","method":"$/stream/end","params":{"id":"b"}}`,
	} {
		_ = ws.WriteMessage(websocket.TextMessage, []byte(m))
	}
	var got []string
	for len(got) < 3 {
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, m, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("bidi: %v after %v", err, got)
		}
		got = append(got, string(m))
	}
	if !strings.Contains(got[1], `"total":"7"`) || !strings.Contains(got[2], `"result":{"messages":2}`) {
		t.Fatalf("bidi: %v", got)
	}

	// The backend dies: calls fail explicitly and readiness says so.
	_ = backend.Process.Kill()
	_ = backend.Wait()
	out, _ := p.call(`{"jsonrpc":"2.0","method":"subtract","params":[1,1],"id":3}`)
	if !strings.Contains(out, `"code":-32020`) || !strings.Contains(out, `"backend":"calculator"`) {
		t.Fatalf("with the backend gone: %s", out)
	}
	waitFor(t, func() bool {
		resp, err := http.Get(p.admin + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})

	// It comes back on the same address: the gateway reconnects by itself.
	backend = startBackend(t, backendAddr)
	waitFor(t, func() bool {
		out, _ := p.call(`{"jsonrpc":"2.0","method":"subtract","params":[2,1],"id":4}`)
		return strings.Contains(out, `"result":1`)
	})
}

// TestDemoMCPBridgedOverStdio bridges `gatehouse demo-mcp` (the conformance fixtures) as a
// stdio upstream and calls its tools through the JSON-RPC boundary.
func TestDemoMCPBridgedOverStdio(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	_ = os.WriteFile(cfg, []byte(fmt.Sprintf(`auth: {anonymous: {}}
routing:
  mcp:
    servers:
      - name: demo
        stdio: {command: %q, args: [demo-mcp]}
`, binary)), 0o600)
	p := startProcess(t, cfg)
	var out string
	waitFor(t, func() bool {
		out, _ = p.call(`{"jsonrpc":"2.0","method":"mcp.test_simple_text","params":{},"id":1}`)
		return strings.Contains(out, `"result"`)
	})
	if !strings.Contains(out, `This is a simple text response for testing.`) {
		t.Fatalf("test_simple_text: %s", out)
	}
	out, _ = p.call(`{"jsonrpc":"2.0","method":"mcp.test_error_handling","params":{},"id":2}`)
	if !strings.Contains(out, `"code":1001`) {
		t.Fatalf("a tool error must be TOOL_FAILED: %s", out)
	}
}

// TestToolServiceOverGRPC invokes bridged MCP tools with tool.v1.ToolService on the
// internal listener.
func TestToolServiceOverGRPC(t *testing.T) {
	internal := freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	_ = os.WriteFile(cfg, []byte(fmt.Sprintf(`auth: {anonymous: {}}
server: {internal: {addr: %q}}
routing:
  mcp:
    servers:
      - name: demo
        stdio: {command: %q, args: [demo-mcp]}
`, internal, binary)), 0o600)
	startProcess(t, cfg)
	conn, err := grpc.NewClient(internal, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	client := toolv1.NewToolServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var list *toolv1.ListToolsResponse
	waitFor(t, func() bool {
		list, err = client.ListTools(ctx, &toolv1.ListToolsRequest{NamePrefix: "test_"})
		return err == nil && len(list.GetTools()) > 5
	})
	var simple *toolv1.ToolDescriptor
	for _, d := range list.GetTools() {
		if d.GetName() == "test_simple_text" {
			simple = d
		}
	}
	if simple == nil || simple.GetInputSchema() == nil || len(simple.GetVersion()) != 16 {
		t.Fatalf("test_simple_text descriptor: %v", simple)
	}

	r, err := client.ToolInvocation(ctx, &toolv1.ToolInvocationRequest{InvocationId: "inv-1", ToolName: "test_simple_text"})
	if err != nil || r.GetStatus() != toolv1.ToolResultStatus_TOOL_RESULT_STATUS_SUCCESS || r.GetInvocationId() != "inv-1" ||
		r.GetContent()[0].GetText() != "This is a simple text response for testing." || r.GetProvenance().GetProducer() != "demo" {
		t.Fatalf("simple text: %v %v", r, err)
	}
	r, err = client.ToolInvocation(ctx, &toolv1.ToolInvocationRequest{ToolName: "test_image_content"})
	if err != nil || len(r.GetContent()) != 1 || r.GetContent()[0].GetBlob().GetMimeType() != "image/png" || len(r.GetContent()[0].GetBlob().GetData()) == 0 {
		t.Fatalf("image: %v %v", r, err)
	}
	r, err = client.ToolInvocation(ctx, &toolv1.ToolInvocationRequest{ToolName: "test_error_handling"})
	if err != nil || r.GetStatus() != toolv1.ToolResultStatus_TOOL_RESULT_STATUS_ERROR || r.GetErrorMessage() == "" {
		t.Fatalf("tool error: %v %v", r, err)
	}
	if _, err := client.ToolInvocation(ctx, &toolv1.ToolInvocationRequest{ToolName: "no_such_tool"}); status.Code(err) != codes.NotFound {
		t.Fatalf("unknown tool: %v", err)
	}
}

// TestGatewayMCPFaceConformance runs the official MCP conformance suite against the
// gateway's /mcp face fronting `gatehouse demo-mcp`, comparing with
// internal/conformance/expected-failures-gateway.txt.
func TestGatewayMCPFaceConformance(t *testing.T) {
	tools := conformance.Tools{Dir: filepath.Join("..", "..", conformance.DefaultToolsDir)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := tools.Check(ctx); errors.Is(err, conformance.ErrNotInstalled) && os.Getenv("CONFORMANCE_REQUIRED") == "" {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	known, err := tools.Scenarios(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join("..", "..", "internal", "conformance", "expected-failures-gateway.txt"))
	if err != nil {
		t.Fatal(err)
	}
	expected, err := conformance.ParseExpected(f)
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "gatehouse.yaml")
	_ = os.WriteFile(cfg, []byte(fmt.Sprintf(`auth: {anonymous: {}}
mcp_face: {}
routing:
  mcp:
    servers:
      - name: demo
        stdio: {command: %q, args: [demo-mcp]}
`, binary)), 0o600)
	p := startProcess(t, cfg)
	url := strings.TrimSuffix(p.rpc, "/rpc") + "/mcp"
	waitFor(t, func() bool { // the catalog is published once the upstream is up
		out, _ := p.call(`{"jsonrpc":"2.0","method":"mcp.test_simple_text","params":{},"id":1}`)
		return strings.Contains(out, `"result"`)
	})
	var log bytes.Buffer
	results, err := tools.Run(ctx, conformance.RunOptions{URL: url, OutDir: filepath.Join(t.TempDir(), "results"), Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	v := conformance.Compare(results, expected, known)
	var report bytes.Buffer
	if err := conformance.WriteReport(&report, results, expected, v); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + report.String())
	if !v.OK() {
		t.Errorf("the gateway's MCP face does not conform as expected-failures-gateway.txt says\n%s", log.String())
	}
}

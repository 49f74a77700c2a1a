package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// startBackend runs `gatehouse demo-grpc` as its own process on addr ("127.0.0.1:0" lets
// the kernel pick) and returns it with the address it bound.
func startBackend(t *testing.T, addr string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(binary, "demo-grpc", "--addr", addr)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var bound string
	waitFor(t, func() bool {
		_, after, ok := strings.Cut(stderr.String(), "serving on ")
		bound, _, _ = strings.Cut(after, "\n")
		return ok && strings.Contains(after, "\n")
	})
	return cmd, bound
}

func TestGRPCBackendInAnotherProcess(t *testing.T) {
	backend, backendAddr := startBackend(t, "127.0.0.1:0")
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
	backend, _ = startBackend(t, backendAddr)
	waitFor(t, func() bool {
		out, _ := p.call(`{"jsonrpc":"2.0","method":"subtract","params":[2,1],"id":4}`)
		return strings.Contains(out, `"result":1`)
	})
}

package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/internal/openrpctest"
)

const discoverRequest = `{"jsonrpc":"2.0","method":"rpc.discover","id":1}`

// openRPCDoc is the part of an OpenRPC document the tests read.
type openRPCDoc struct {
	Info struct {
		Version string `json:"version"`
	} `json:"info"`
	Servers []struct {
		URL string `json:"url"`
	} `json:"servers"`
	Methods []struct {
		Name           string `json:"name"`
		ParamStructure string `json:"paramStructure"`
		Params         []struct {
			Name     string `json:"name"`
			Required bool   `json:"required"`
		} `json:"params"`
		Errors []struct {
			Ref string `json:"$ref"`
		} `json:"errors"`
	} `json:"methods"`
}

func (d *openRPCDoc) names() []string {
	out := make([]string, 0, len(d.Methods))
	for _, m := range d.Methods {
		out = append(out, m.Name)
	}
	return out
}

// discoverOpenRPC asks rpc.discover over HTTP and returns the raw document and its parts.
func discoverOpenRPC(t *testing.T, ts *testServer) (json.RawMessage, openRPCDoc) {
	t.Helper()
	r := ts.rpc(t, discoverRequest)
	if r.Error != nil {
		t.Fatalf("rpc.discover: %+v", r.Error)
	}
	var d openRPCDoc
	if err := json.Unmarshal(r.Result, &d); err != nil {
		t.Fatalf("rpc.discover: %v\n%s", err, r.Result)
	}
	return r.Result, d
}

// getOpenRPC fetches GET /openrpc.json.
func getOpenRPC(t *testing.T, ts *testServer) (int, string) {
	t.Helper()
	resp, err := http.Get(ts.base + "/openrpc.json")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// openRPCEndToEnd serves the calculator gRPC backend (mapped methods and the whole service
// under calc.), the demo MCP upstream (tools callable from the boundary) and NEKTE.
const openRPCEndToEnd = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
websocket: {}
auth: {anonymous: {}}
log: {level: debug}
nekte: {}
routing:
  grpc:
    - name: calculator
      address: %q
      descriptors: {reflection: true}
      methods: {subtract: calculator.v1.CalculatorService/Subtract}
      services:
        - {service: calculator.v1.CalculatorService, prefix: "calc.", naming: snake}
  mcp:
    direct_zones: [external]
    servers:
      - name: demo
        stdio: {command: %q, args: ["-test.run=^TestDemoMCPProcess$"], env: {%s: "1"}}
`

// TestOpenRPCEndToEnd asks a gateway serving a gRPC backend, an MCP upstream and NEKTE
// for its OpenRPC document over HTTP, WebSocket and GET /openrpc.json: one document, which
// fits the official meta-schema and lists every routed method with its params and errors.
func TestOpenRPCEndToEnd(t *testing.T) {
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ts := start(t, fmt.Sprintf(openRPCEndToEnd, addr, self, demoMCPEnv), nil)
	ts.waitReadyWithin(20 * time.Second)
	var raw json.RawMessage
	var d openRPCDoc
	waitFor(t, func() bool { // the gRPC descriptors and the MCP catalog load after start
		raw, d = discoverOpenRPC(t, ts)
		return slices.Contains(d.names(), "mcp.test_simple_text") && slices.Contains(d.names(), "calc.count")
	})
	openrpctest.Check(t, raw)
	if d.Info.Version != buildVersion() || len(d.Servers) != 2 || !strings.HasSuffix(d.Servers[0].URL, "/rpc") || !strings.HasPrefix(d.Servers[1].URL, "ws://") {
		t.Errorf("info and servers: %+v %+v", d.Info, d.Servers)
	}
	tests := []struct {
		method, structure string
		params            []string // name, with "*" when required
		error             string   // one of its kind's errors
	}{
		{"subtract", "by-name", []string{"minuend", "subtrahend"}, "AGENT_EXECUTION_FAILED"},
		{"calc.count", "by-name", []string{"from", "to", "interval"}, "AGENT_EXECUTION_FAILED"},
		{"mcp.test_simple_text", "by-name", nil, "TOOL_FAILED"},
		{"nekte.invoke", "by-name", []string{"cap*", "h", "in", "budget"}, "VERSION_MISMATCH"},
		{"nekte.task.status", "by-name", []string{"task_id*"}, "TASK_NOT_FOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			i := slices.Index(d.names(), tt.method)
			if i < 0 {
				t.Fatalf("%s missing from %v", tt.method, d.names())
			}
			m := d.Methods[i]
			var params, errs []string
			for _, p := range m.Params {
				params = append(params, p.Name+map[bool]string{true: "*"}[p.Required])
			}
			for _, e := range m.Errors {
				errs = append(errs, strings.TrimPrefix(e.Ref, "#/components/errors/"))
			}
			if m.ParamStructure != tt.structure || !slices.Equal(params, tt.params) || !slices.Contains(errs, tt.error) || !slices.Contains(errs, "INVALID_PARAMS") {
				t.Errorf("got %s %v errors %v, want %s %v with %s", m.ParamStructure, params, errs, tt.structure, tt.params, tt.error)
			}
		})
	}
	if slices.Contains(d.names(), "rpc.discover") {
		t.Error("the document lists rpc.discover")
	}
	if ws := wsRoundTrip(t, dialWS(t, ts, nil), discoverRequest, true); decodeOne(t, ws).Result == nil || string(decodeOne(t, ws).Result) != string(raw) {
		t.Errorf("over WebSocket, another document:\n%s\nwant\n%s", ws, raw)
	}
	if status, body := getOpenRPC(t, ts); status != http.StatusOK || body != string(raw) {
		t.Errorf("GET /openrpc.json: %d, another document than an anonymous caller's:\n%s", status, body)
	}
	resp, err := http.Post(ts.base+"/openrpc.json", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /openrpc.json: %d, want 405", resp.StatusCode)
	}
}

// TestOpenRPCShowsWhatTheCallerMayCall: under visibilityPolicy, a caller's document lists
// the methods its scopes reach and never a bridged tool, since the policy keeps external
// callers from MCP targets (even with routing.mcp.direct_zones listing external): they
// reach tools through nekte.invoke, which is listed. GET /openrpc.json lists what a caller
// without credentials may call.
func TestOpenRPCShowsWhatTheCallerMayCall(t *testing.T) {
	tools := []string{"mcp.test_simple_text", "mcp.test_image_content"}
	tests := []struct {
		name          string
		scopes        string
		shown, hidden []string
	}{
		{"no scopes", "", []string{"get_data", "update", "nekte.discover", "nekte.invoke"}, append([]string{"subtract", "sum"}, tools...)},
		{"math", "math", []string{"subtract", "sum", "update", "nekte.invoke"}, tools},
		{"math and tools", "math, tools", []string{"subtract", "sum", "nekte.invoke"}, tools},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := strings.Replace(baseConfig, "  anonymous: {}\n", "  anonymous: {scopes: ["+tt.scopes+"]}\n", 1) + visibilityPolicy
			ts := start(t, withDemoMCP(t, yaml, externalMCP), nil)
			waitFor(t, func() bool { return slices.Contains(discoverIDs(t, ts, 0), "test_image_content") })
			raw, d := discoverOpenRPC(t, ts)
			openrpctest.Check(t, raw)
			for _, m := range tt.shown {
				if !slices.Contains(d.names(), m) {
					t.Errorf("%s missing from %v", m, d.names())
				}
			}
			for _, m := range tt.hidden {
				if strings.Contains(string(raw), `"`+m+`"`) {
					t.Errorf("%s is in the document: %v", m, d.names())
				}
				_, _, body := ts.post(`{"jsonrpc":"2.0","method":"` + m + `","params":{"minuend":1,"subtrahend":1},"id":1}`)
				if r := decodeOne(t, body); r.Error == nil || r.Error.Code < 4000 || r.Error.Code > 4999 {
					t.Errorf("%s is hidden but the caller may call it: %s", m, body)
				}
			}
			// GET /openrpc.json is anyone's: a caller without scopes never sees subtract.
			status, body := getOpenRPC(t, ts)
			if status != http.StatusOK || strings.Contains(body, `"subtract"`) || !strings.Contains(body, `"get_data"`) {
				t.Errorf("GET /openrpc.json: %d %s", status, body)
			}
		})
	}
}

// TestOpenRPCFollowsTheZone asks rpc.discover from the boundary and through the internal
// gRPC face under the default direct zones: the bridged tools, callable directly from the
// internal zone only, are in the internal caller's document alone.
func TestOpenRPCFollowsTheZone(t *testing.T) {
	withInternal := strings.Replace(baseConfig, "  admin: {addr: \"127.0.0.1:0\"}\n",
		"  admin: {addr: \"127.0.0.1:0\"}\n  internal: {addr: \"127.0.0.1:0\"}\n", 1) + "nekte: {}\n"
	ts := start(t, withDemoMCP(t, withInternal, ""), nil)
	waitFor(t, func() bool { return slices.Contains(discoverIDs(t, ts, 0), "test_simple_text") })
	external, d := discoverOpenRPC(t, ts)
	if slices.Contains(d.names(), "mcp.test_simple_text") || !slices.Contains(d.names(), "nekte.invoke") {
		t.Errorf("the boundary's document: %v", d.names())
	}
	r := invokeInternal(t, ts, "rpc.discover")
	if r.Error != nil {
		t.Fatalf("internal rpc.discover: %+v", r.Error)
	}
	openrpctest.Check(t, r.Result)
	var internal openRPCDoc
	if err := json.Unmarshal(r.Result, &internal); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(internal.names(), "mcp.test_simple_text") || string(r.Result) == string(external) {
		t.Errorf("the internal caller's document: %v", internal.names())
	}
}

package semantic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/internal/hardening"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// The limits of the gateway under test, small so that a call at a limit ± 1 is cheap.
const (
	maxBody       = 4096 // jsonrpc.max_body_bytes
	maxDepth      = 8    // jsonrpc.max_depth
	maxString     = 256  // jsonrpc.max_string_bytes
	maxBatch      = 8    // batch.max_size
	maxHeader     = 4097 // server.boundary.max_header_bytes (its least value)
	maxWSMessage  = 2048 // websocket.max_message_bytes
	maxA2AMessage = 2048 // a2a.max_message_bytes
	maxA2AParts   = 4    // a2a.max_parts
	maxSession    = 2048 // session.max_message_bytes
	maxSessionID  = 128  // a session envelope's id (fixed)
	maxTaskInput  = 1024 // nekte.tasks.max_input_bytes
	maxRecv       = 4096 // server.internal.max_recv_bytes
)

// config is the gateway of every test here: every face on, the calculator (a real gRPC
// backend whose hits are counted) under the prefix "calc.", anonymous callers.
const config = `
server:
  boundary: {addr: "127.0.0.1:0", max_header_bytes: %[2]d}
  admin: {addr: "127.0.0.1:0"}
  internal: {addr: "127.0.0.1:0", max_recv_bytes: %[3]d}
  shutdown_grace: 5s
auth: {anonymous: {}}
log: {level: info}
jsonrpc: {max_body_bytes: %[4]d, max_depth: %[5]d, max_string_bytes: %[6]d}
batch: {max_size: %[7]d}
websocket: {max_message_bytes: %[8]d}
routing:
  grpc:
    - name: calculator
      address: "%[1]s"
      descriptors: {reflection: true}
      services:
        - {service: calculator.v1.CalculatorService, prefix: "calc.", naming: snake}
nekte: {tasks: {max_input_bytes: %[9]d}}
a2a: {max_message_bytes: %[10]d, max_parts: %[11]d}
mcp_face: {}
session:
  max_message_bytes: %[12]d
  routes:
    - name: calc
      capability: {method: calc.subtract}
`

// env is a gateway in front of a counting calculator, and the checks of every call.
type env struct {
	t    *testing.T
	g    *hardening.Gateway
	gen  Gen
	addr string        // the calculator's address: a secret no answer may carry
	hits *atomic.Int64 // calls the calculator's service received
	hc   *http.Client

	mu       sync.Mutex
	counts   map[string]map[string]int // class → outcome → calls
	failures int                       // calls seen after the test failed
}

// newEnv starts the calculator and the gateway and waits until the calculator's methods
// are routed; extra is more of the routing section.
func newEnv(t *testing.T, extra ...string) *env {
	t.Helper()
	e := &env{t: t, hits: &atomic.Int64{}, counts: map[string]map[string]int{}, gen: Gen{R: hardening.Rand(t)}}
	count := func(method string) {
		if strings.HasPrefix(method, "/calculator.v1.CalculatorService/") {
			e.hits.Add(1)
		}
	}
	gs := demo.NewCalculatorServer(
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			count(info.FullMethod)
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			count(info.FullMethod)
			return h(srv, ss)
		}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = gs.Serve(ln) }()
	t.Cleanup(func() { gs.Stop(); <-served }) // after the gateway's stop
	e.addr = ln.Addr().String()
	e.g = hardening.Start(t, strings.Replace(fmt.Sprintf(config, e.addr, maxHeader, maxRecv, maxBody, maxDepth, maxString, maxBatch,
		maxWSMessage, maxTaskInput, maxA2AMessage, maxA2AParts, maxSession), "nekte:", strings.Join(extra, "")+"nekte:", 1))
	e.hc = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
	t.Cleanup(e.hc.CloseIdleConnections)
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, _, body := e.post("/rpc", `{"jsonrpc":"2.0","id":0,"method":"calc.get_data"}`, nil)
		if strings.Contains(body, `"result"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the calculator's methods are not routed: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return e
}

// post sends body to path on the boundary with headers, and checks every header and the
// body for leaks.
func (e *env) post(path, body string, headers map[string]string) (int, http.Header, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.g.Base+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		e.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("POST %s: reading: %v", path, err)
	}
	e.leaks("response headers", fmt.Sprint(resp.Header))
	e.leaks("response body", string(out))
	return resp.StatusCode, resp.Header, string(out)
}

// leaks fails the test when msg carries internal detail or the backend's address.
func (e *env) leaks(where, msg string) {
	e.t.Helper()
	if l := hardening.Leaks(msg, e.addr); len(l) > 0 {
		e.t.Errorf("%s leaks %q: %.600s", where, l, msg)
	}
}

// tooMany reports whether the run has failed so often that going on is noise.
func (e *env) tooMany() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.t.Failed() {
		e.failures++
	}
	return e.failures > 8
}

// count records one call of class with its outcome.
func (e *env) count(class, outcome string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts[class] == nil {
		e.counts[class] = map[string]int{}
	}
	e.counts[class][outcome]++
}

// finish logs the counts per class and outcome and checks that nothing panicked and the
// gateway still answers /healthz.
func (e *env) finish() {
	e.t.Helper()
	e.mu.Lock()
	classes := slices.Sorted(maps.Keys(e.counts))
	var b strings.Builder
	total := 0
	for _, c := range classes {
		fmt.Fprintf(&b, "\n  %-28s", c)
		for _, o := range slices.Sorted(maps.Keys(e.counts[c])) {
			fmt.Fprintf(&b, " %s=%d", o, e.counts[c][o])
			total += e.counts[c][o]
		}
	}
	e.mu.Unlock()
	e.t.Logf("%d calls, %d backend hits, by class and outcome:%s", total, e.hits.Load(), b.String())
	if logs := e.g.Logs(); strings.Contains(strings.ToLower(logs), "panic") {
		e.t.Errorf("the gateway logged a panic:\n%s", logs)
	}
	resp, err := e.hc.Get(e.g.Admin + "/healthz")
	if err != nil {
		e.t.Fatalf("/healthz: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("/healthz: %d", resp.StatusCode)
	}
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    schemas.Code   `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

// reply is one JSON-RPC response, checked well-formed.
type reply struct {
	ID     json.RawMessage
	Result json.RawMessage
	Error  *rpcError
}

// outcome is "ok" or the error's code, for the counts.
func (r reply) outcome() string {
	if r.Error == nil {
		return "ok"
	}
	return fmt.Sprint(r.Error.Code)
}

// parseReply checks that raw is one well-formed JSON-RPC 2.0 response — "jsonrpc":"2.0",
// an id, exactly one of result and error, an error with a code of the table, a
// non-empty message and object data with a trace id — and returns it.
func parseReply(raw []byte) (reply, error) { return parseReplyOf(raw, true) }

// parseReplyOf is parseReply; traced asks for data.trace_id in an error.
func parseReplyOf(raw []byte, traced bool) (reply, error) {
	var m map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return reply{}, fmt.Errorf("not a JSON object: %w", err)
	}
	for k := range m {
		if k != "jsonrpc" && k != "id" && k != "result" && k != "error" {
			return reply{}, fmt.Errorf("member %q", k)
		}
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return reply{}, fmt.Errorf("jsonrpc %s", m["jsonrpc"])
	}
	id, ok := m["id"]
	if !ok {
		return reply{}, fmt.Errorf("no id")
	}
	r := reply{ID: id, Result: m["result"]}
	_, hasResult := m["result"]
	eraw, hasError := m["error"]
	if hasResult == hasError {
		return reply{}, fmt.Errorf("result and error: %v, %v", hasResult, hasError)
	}
	if hasError {
		var pe struct {
			Code    *json.Number   `json:"code"`
			Message *string        `json:"message"`
			Data    map[string]any `json:"data"`
		}
		if err := json.Unmarshal(eraw, &pe); err != nil {
			return reply{}, fmt.Errorf("error object: %w", err)
		}
		if pe.Code == nil || pe.Message == nil || *pe.Message == "" {
			return reply{}, fmt.Errorf("error without code or message")
		}
		n, err := pe.Code.Int64()
		if err != nil {
			return reply{}, fmt.Errorf("code %s", *pe.Code)
		}
		if _, ok := schemas.Lookup(schemas.Code(n)); !ok {
			return reply{}, fmt.Errorf("code %d is not in the error table", n)
		}
		if traced && (pe.Data == nil || pe.Data["trace_id"] == nil) {
			return reply{}, fmt.Errorf("error data without trace_id")
		}
		r.Error = &rpcError{Code: schemas.Code(n), Message: *pe.Message, Data: pe.Data}
	}
	return r, nil
}

// sameID reports whether the response id got is the request id sent (JSON values
// compared, numbers as their text: an id is echoed, never rounded).
func sameID(sent string, got json.RawMessage) bool {
	if strings.HasPrefix(sent, `"`) {
		var a, b string
		return json.Unmarshal([]byte(sent), &a) == nil && json.Unmarshal(got, &b) == nil && a == b
	}
	return strings.TrimSpace(sent) == strings.TrimSpace(string(got))
}

// want is what a class of input must get: a success (code 0) or an error of code, with
// data[limit] equal to limit when set; refused calls must not reach the backend.
type want struct {
	code  schemas.Code
	limit string
}

func (w want) String() string {
	if w.code == 0 {
		return "success"
	}
	if w.limit != "" {
		return fmt.Sprintf("%d (limit %s)", w.code, w.limit)
	}
	return fmt.Sprint(w.code)
}

// matches reports whether r is what w asks for.
func (w want) matches(r reply) bool {
	if w.code == 0 {
		return r.Error == nil
	}
	return r.Error != nil && r.Error.Code == w.code && (w.limit == "" || r.Error.Data["limit"] == w.limit)
}

package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/demo"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
	toolv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/tool/v1"
)

// calcConfig routes the JSON-RPC specification's method names, and the whole calculator
// service under "calc.", to a calculator.v1 gRPC backend at the address given.
const calcConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  internal: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
websocket: {}
auth: {anonymous: {}}
log: {level: debug}
routing:
  grpc:
    - name: calculator
      address: "%s"
      descriptors: {reflection: true}
      methods:
        subtract: calculator.v1.CalculatorService/Subtract
        sum: calculator.v1.CalculatorService/Sum
        update: calculator.v1.CalculatorService/Update
        notify_hello: calculator.v1.CalculatorService/NotifyHello
        get_data: calculator.v1.CalculatorService/GetData
      services:
        - {service: calculator.v1.CalculatorService, prefix: "calc.", naming: snake}
      unwrap: {subtract: result, sum: result, get_data: result}
`

func startCalc(t *testing.T) *testServer {
	t.Helper()
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	ts := start(t, fmt.Sprintf(calcConfig, addr), nil)
	ts.waitReadyWithin(20 * time.Second)
	return ts
}

// TestSpecExamplesThroughGRPC replays every JSON-RPC specification example against the
// calculator.v1 gRPC backend: the same answers as the built-in demo, through transcoding.
func TestSpecExamplesThroughGRPC(t *testing.T) {
	ts := startCalc(t)
	files, _ := filepath.Glob("testdata/spec/*.txtar")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, ex := range parseExchanges(t, ar) {
				status, _, body := ts.post(ex.send)
				if strings.TrimSpace(ex.spec) == "" {
					if status != http.StatusNoContent || body != "" {
						t.Errorf("exchange %d: got %d %s, want no response", ex.n, status, body)
					}
					continue
				}
				if !jsonSubset(t, ex.spec, body) {
					t.Errorf("exchange %d:\n got %s\nwant %s", ex.n, body, ex.spec)
				}
			}
		})
	}
}

func TestServerStreamingOverSSE(t *testing.T) {
	ts := startCalc(t)
	req, _ := http.NewRequest(http.MethodPost, ts.base+"/rpc", strings.NewReader(`{"jsonrpc":"2.0","method":"calc.count","params":{"from":1,"to":3},"id":7}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, d)
		}
	}
	want := []string{
		`{"jsonrpc":"2.0","method":"$/stream","params":{"id":7,"seq":0,"value":{"value":"1"}}}`,
		`{"jsonrpc":"2.0","method":"$/stream","params":{"id":7,"seq":1,"value":{"value":"2"}}}`,
		`{"jsonrpc":"2.0","method":"$/stream","params":{"id":7,"seq":2,"value":{"value":"3"}}}`,
		`{"jsonrpc":"2.0","result":{"messages":3},"id":7}`,
	}
	if strings.Join(events, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
}

func TestServerStreamingCollectedWithoutSSE(t *testing.T) {
	ts := startCalc(t)
	_, _, body := ts.post(`{"jsonrpc":"2.0","method":"calc.count","params":{"from":1,"to":3},"id":1}`)
	if r := decodeOne(t, body); r.Error != nil || !jsonEqualT(string(r.Result), `[{"value":"1"},{"value":"2"},{"value":"3"}]`) {
		t.Fatalf("got %s", body)
	}
}

func jsonEqualT(a, b string) bool {
	return strings.Join(strings.Fields(a), "") == strings.Join(strings.Fields(b), "")
}

func TestStreamingOverWebSocket(t *testing.T) {
	ts := startCalc(t)
	t.Run("server streaming", func(t *testing.T) {
		c := dialWS(t, ts, nil)
		wsSend(t, c, `{"jsonrpc":"2.0","method":"calc.count","params":{"from":1,"to":2},"id":"s"}`)
		got := []string{wsRead(t, c, 5*time.Second), wsRead(t, c, 5*time.Second), wsRead(t, c, 5*time.Second)}
		want := []string{
			`{"jsonrpc":"2.0","method":"$/stream","params":{"id":"s","seq":0,"value":{"value":"1"}}}`,
			`{"jsonrpc":"2.0","method":"$/stream","params":{"id":"s","seq":1,"value":{"value":"2"}}}`,
			`{"jsonrpc":"2.0","result":{"messages":2},"id":"s"}`,
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("got\n%s", strings.Join(got, "\n"))
		}
	})
	t.Run("client streaming", func(t *testing.T) {
		c := dialWS(t, ts, nil)
		wsSend(t, c, `{"jsonrpc":"2.0","method":"calc.sum_stream","id":1}`)
		for _, v := range []string{"1", "2", "4"} {
			wsSend(t, c, `{"jsonrpc":"2.0","method":"$/stream/send","params":{"id":1,"value":{"value":`+v+`}}}`)
		}
		wsSend(t, c, `{"jsonrpc":"2.0","method":"$/stream/end","params":{"id":1}}`)
		if r := decodeOne(t, wsRead(t, c, 5*time.Second)); r.Error != nil || !jsonEqualT(string(r.Result), `{"result":7,"count":"3"}`) {
			t.Fatalf("got %+v %s", r.Error, r.Result)
		}
	})
	t.Run("bidi", func(t *testing.T) {
		c := dialWS(t, ts, nil)
		wsSend(t, c, `{"jsonrpc":"2.0","method":"calc.accumulate","id":"b"}`)
		for i, d := range []string{"5", "-2", "10"} {
			wsSend(t, c, `{"jsonrpc":"2.0","method":"$/stream/send","params":{"id":"b","value":{"delta":"`+d+`"}}}`)
			want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/stream","params":{"id":"b","seq":%d,"value":{"total":"%s","count":"%d"}}}`,
				i, []string{"5", "3", "13"}[i], i+1)
			if got := wsRead(t, c, 5*time.Second); got != want {
				t.Fatalf("step %d: got %s\nwant %s", i, got, want)
			}
		}
		wsSend(t, c, `{"jsonrpc":"2.0","method":"$/stream/end","params":{"id":"b"}}`)
		if got := wsRead(t, c, 5*time.Second); got != `{"jsonrpc":"2.0","result":{"messages":3},"id":"b"}` {
			t.Fatalf("final: %s", got)
		}
	})
	t.Run("cancel request", func(t *testing.T) {
		c := dialWS(t, ts, nil)
		wsSend(t, c, `{"jsonrpc":"2.0","method":"calc.count","params":{"from":1,"to":100,"interval":"1s"},"id":"slow"}`)
		if m := wsRead(t, c, 5*time.Second); !strings.Contains(m, `"seq":0`) {
			t.Fatalf("first message: %s", m)
		}
		wsSend(t, c, `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"slow"},"id":"c"}`)
		got := map[string]string{}
		for range 2 {
			r := decodeOne(t, wsRead(t, c, 5*time.Second))
			if r.Error != nil {
				got[string(r.ID)] = fmt.Sprint(r.Error.Code)
			} else {
				got[string(r.ID)] = string(r.Result)
			}
		}
		if got[`"c"`] != "true" || got[`"slow"`] != "-32024" {
			t.Fatalf("got %v; want the cancel acknowledged and the call CANCELLED", got)
		}
	})
	t.Run("client streaming needs a stream", func(t *testing.T) {
		_, _, body := ts.post(`{"jsonrpc":"2.0","method":"calc.sum_stream","id":1}`)
		if r := decodeOne(t, body); r.Error == nil || r.Error.Code != -32600 {
			t.Fatalf("over HTTP: %s", body)
		}
	})
}

func TestInternalGRPCFace(t *testing.T) {
	ts := startCalc(t)
	conn, err := grpc.NewClient(ts.InternalAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hc := healthpb.NewHealthClient(conn)
	waitFor(t, func() bool {
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "calculator"})
		return err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING
	})
	if r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("overall health: %v %v", r, err)
	}
	rc, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := rc.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if !strings.Contains(strings.Join(names, ","), "grpc.health.v1.Health") {
		t.Fatalf("reflection lists %v", names)
	}
	_ = rc.CloseSend()
}

// rawFrame and rawServerCodec let a test server echo messages without knowing their types.
type rawFrame struct{ b []byte }

type rawServerCodec struct{}

func (rawServerCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(*rawFrame).b)}, nil
}

func (rawServerCodec) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*rawFrame).b = data.Materialize()
	return nil
}

func (rawServerCodec) Name() string { return "proto" }

// serveEcho runs a gRPC server that answers every unary method with its request.
func serveEcho(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.ForceServerCodecV2(rawServerCodec{}), grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		var f rawFrame
		if err := stream.RecvMsg(&f); err != nil {
			return err
		}
		_ = stream.SetHeader(metadata.Pairs("x-served-by", "echo", "x-secret", "not for callers"))
		return stream.SendMsg(&f)
	}))
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String()
}

func TestReloadPicksUpChangedDescriptors(t *testing.T) {
	dir := t.TempDir()
	const protoV1 = `syntax = "proto3"; package t.v1; message M { string s = 1; } service S { rpc A(M) returns (M); }`
	const protoV2 = `syntax = "proto3"; package t.v1; message M { string s = 1; int64 n = 2; } service S { rpc A(M) returns (M); rpc B(M) returns (M); }`
	writeFile(t, dir, "svc.proto", protoV1)
	cfgText := strings.Replace(baseConfig, "routing:\n  demo: {}\n", fmt.Sprintf(`routing:
  grpc:
    - name: echo
      address: %q
      descriptors: {protos: {import_paths: [%q], files: [svc.proto]}}
      services: [{service: t.v1.S, prefix: "t."}]
`, serveEcho(t), dir), 1)
	path := writeFile(t, dir, "gatehouse.yaml", cfgText)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := startConfig(t, cfg, nil)
	call := func(method, params string) response {
		_, _, body := ts.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s,"id":1}`, method, params))
		return decodeOne(t, body)
	}
	waitFor(t, func() bool { return call("t.a", `{"s":"x"}`).Error == nil })
	if r := call("t.a", `{"s":"x"}`); string(r.Result) != `{"s":"x"}` {
		t.Fatalf("echo: %s", r.Result)
	}
	if r := call("t.b", `{}`); r.Error == nil || r.Error.Code != -32601 {
		t.Fatalf("t.b before the change: %+v", r)
	}
	writeFile(t, dir, "svc.proto", protoV2)
	if err := ts.ReloadFile(path); err != nil { // the YAML is unchanged: SIGHUP reloads anyway
		t.Fatal(err)
	}
	waitFor(t, func() bool { return call("t.b", `{"s":"y","n":"5"}`).Error == nil })
	if r := call("t.b", `{"s":"y","n":5}`); string(r.Result) != `{"s":"y","n":"5"}` {
		t.Fatalf("after the reload: %s", r.Result)
	}
}

func TestGatewayServiceInvoke(t *testing.T) {
	ts := startCalc(t)
	conn, err := grpc.NewClient(ts.InternalAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	client := gatehousev1.NewGatewayServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	r, err := client.Invoke(ctx, &gatehousev1.InvokeRequest{Method: "subtract", Params: []byte(`[42,23]`)})
	if err != nil || string(r.GetResult()) != "19" {
		t.Fatalf("subtract: %v %v", r, err)
	}
	tests := []struct {
		method, params string
		code           codes.Code
		jsonrpc        string
	}{
		{"nope", ``, codes.Unimplemented, "-32601"},
		{"subtract", `{"minuend":"x"}`, codes.InvalidArgument, "-32602"},
		{"subtract", `{"a":1,"a":2}`, codes.InvalidArgument, "-32600"},
		{"subtract", `"str"`, codes.InvalidArgument, "-32600"},
	}
	for _, tt := range tests {
		_, err := client.Invoke(ctx, &gatehousev1.InvokeRequest{Method: tt.method, Params: []byte(tt.params)})
		st := status.Convert(err)
		if st.Code() != tt.code {
			t.Errorf("%s %s: %v, want %v", tt.method, tt.params, err, tt.code)
			continue
		}
		info, _ := st.Details()[0].(*errdetails.ErrorInfo)
		if info == nil || info.GetMetadata()["jsonrpc_code"] != tt.jsonrpc || !strings.Contains(info.GetMetadata()["data"], "trace_id") {
			t.Errorf("%s %s: details %v", tt.method, tt.params, st.Details())
		}
	}

	s, err := client.InvokeStream(ctx, &gatehousev1.InvokeStreamRequest{Method: "calc.count", Params: []byte(`{"from":1,"to":3}`)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(m.GetMessage()))
	}
	if strings.Join(got, " ") != `{"value":"1"} {"value":"2"} {"value":"3"}` {
		t.Fatalf("stream: %v", got)
	}

	// The caller's gRPC deadline is the call's deadline.
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	s, err = client.InvokeStream(short, &gatehousev1.InvokeStreamRequest{Method: "calc.count", Params: []byte(`{"from":1,"to":50,"interval":"0.1s"}`)})
	if err == nil {
		for err == nil {
			_, err = s.Recv()
		}
	}
	if code := status.Code(err); code != codes.DeadlineExceeded {
		t.Fatalf("past the deadline: %v", err)
	}
}

func TestSurfacedMetadata(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "svc.proto", `syntax = "proto3"; package t.v1; message M { string s = 1; } service S { rpc A(M) returns (M); }`)
	ts := start(t, strings.Replace(baseConfig, "routing:\n  demo: {}\n", fmt.Sprintf(`routing:
  grpc:
    - name: echo
      address: %q
      descriptors: {protos: {import_paths: [%q], files: [svc.proto]}}
      methods: {echo: t.v1.S/A}
      surface_metadata: [x-served-by]
`, serveEcho(t), dir), 1), nil)
	var hdr http.Header
	waitFor(t, func() bool {
		var status int
		status, hdr, _ = ts.post(`{"jsonrpc":"2.0","method":"echo","params":{"s":"x"},"id":1}`)
		return status == http.StatusOK && hdr.Get("Grpc-Metadata-X-Served-By") != ""
	})
	if hdr.Get("Grpc-Metadata-X-Served-By") != "echo" || hdr.Get("Grpc-Metadata-X-Secret") != "" {
		t.Fatalf("headers %v: only the allowed key may be surfaced", hdr)
	}
}

// TestDemoGRPCBackend checks server.demo_grpc starts the calculator with the server.
func TestDemoGRPCBackend(t *testing.T) {
	ts := start(t, strings.Replace(baseConfig, `admin: {addr: "127.0.0.1:0"}`,
		`admin: {addr: "127.0.0.1:0"}`+"\n  demo_grpc: {addr: \"127.0.0.1:0\"}", 1), nil)
	conn, err := grpc.NewClient(ts.DemoGRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "calculator.v1.CalculatorService"})
	if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("demo backend health: %v %v", r, err)
	}
}

// TestToolInvocationRefusalCarriesTraceID: a ToolInvocation refused before the pipeline
// (here: no MCP servers configured) still names a trace id in its error data, as every
// error across the boundary does.
func TestToolInvocationRefusalCarriesTraceID(t *testing.T) {
	ts := startCalc(t)
	conn, err := grpc.NewClient(ts.InternalAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = toolv1.NewToolServiceClient(conn).ToolInvocation(ctx, &toolv1.ToolInvocationRequest{ToolName: "anything"})
	st := status.Convert(err)
	if st.Code() != codes.Unimplemented || len(st.Details()) == 0 {
		t.Fatalf("ToolInvocation without MCP servers: %v, want Unimplemented with details", err)
	}
	info, _ := st.Details()[0].(*errdetails.ErrorInfo)
	var data struct {
		TraceID string `json:"trace_id"`
	}
	if info == nil || json.Unmarshal([]byte(info.GetMetadata()["data"]), &data) != nil || len(data.TraceID) != 32 {
		t.Fatalf("error data %v: want a 32-hex-digit trace_id", st.Details())
	}
}

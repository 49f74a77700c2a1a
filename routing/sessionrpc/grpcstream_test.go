package sessionrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/grpcbackend"
	"github.com/gatehouse-dev/gatehouse/routing/sessionrpc"
)

const countMethod = "/calculator.v1.CalculatorService/Count"

// serverEnd is how one Count stream ended on the server.
type serverEnd struct {
	err         error // what the handler returned
	md          metadata.MD
	hasDeadline bool
}

// countServer is the demo calculator with an interceptor that reports the end of every
// Count stream and, with failAfter > 0, fails a stream with UNAVAILABLE after that many
// messages.
type countServer struct {
	failAfter int
	ended     chan serverEnd
}

func (s *countServer) intercept(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if info.FullMethod != countMethod {
		return h(srv, ss)
	}
	md, _ := metadata.FromIncomingContext(ss.Context())
	_, dl := ss.Context().Deadline()
	if s.failAfter > 0 {
		ss = &failingStream{ServerStream: ss, left: s.failAfter}
	}
	err := h(srv, ss)
	select {
	case s.ended <- serverEnd{err: err, md: md, hasDeadline: dl}:
	default: // nobody waits for it (a benchmark)
	}
	return err
}

type failingStream struct {
	grpc.ServerStream
	left int
}

func (f *failingStream) SendMsg(m any) error {
	if f.left == 0 {
		return status.Error(codes.Unavailable, "calculator draining")
	}
	f.left--
	return f.ServerStream.SendMsg(m)
}

// startCalculator runs the real calculator on loopback and a gRPC backend for it, loaded
// by reflection and routed as in the default configuration (calc.count). Leaked
// goroutines fail a test once both are stopped.
func startCalculator(t testing.TB, failAfter int) (*grpcbackend.Backend, *countServer) {
	t.Helper()
	if _, ok := t.(*testing.T); ok { // a benchmark's runner goroutines are still about
		t.Cleanup(func() { goleak.VerifyNone(t) })
	}
	srv := &countServer{failAfter: failAfter, ended: make(chan serverEnd, 64)}
	gs := demo.NewCalculatorServer(grpc.ChainStreamInterceptor(srv.intercept))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = gs.Serve(ln) }()
	t.Cleanup(func() { gs.Stop(); <-served })
	b, err := grpcbackend.New(grpcbackend.Config{
		Name: "calculator", Address: ln.Addr().String(), Descriptors: grpcbackend.DescriptorsConfig{Reflection: true},
		Services: []grpcbackend.ServiceConfig{{Service: "calculator.v1.CalculatorService", Prefix: "calc.", Naming: "snake"}},
	}, slog.New(slog.DiscardHandler), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	select {
	case <-b.Loaded():
	case <-time.After(10 * time.Second):
		t.Fatalf("descriptors did not load: %v", b.Ready(context.Background()))
	}
	return b, srv
}

// countConfig maps Count: each value a text delta, every third also a status, the reply
// the whole text and the last value.
func countConfig() sessionrpc.GRPCConfig {
	return sessionrpc.GRPCConfig{
		Method: "calc.count",
		Request: map[string]sessionrpc.RequestField{
			"from":     {Value: 1},
			"to":       {From: "options.to", Default: 6},
			"interval": {From: "options.interval"},
		},
		Events: []sessionrpc.EventRule{
			{Type: "text-delta", Templates: map[string]string{"text": "{value} "}},
			{Type: "status", Every: 3, Templates: map[string]string{"message": "counted to {value}"}, Const: map[string]any{"status": "progress"}},
		},
		Done: sessionrpc.DoneMapping{Text: true, Fields: map[string]string{"last": "value"}},
	}
}

func newCount(t testing.TB, b *grpcbackend.Backend) *sessionrpc.GRPCStream {
	t.Helper()
	g, err := sessionrpc.NewGRPCStream("count", countConfig(), b)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func sessionCall(payload string) *gateway.Call {
	return &gateway.Call{Method: "session.count", Params: []byte(payload), TraceID: "0123456789abcdef0123456789abcdef"}
}

// awaitEnd returns how the server's next Count stream ended.
func awaitEnd(t *testing.T, srv *countServer) serverEnd {
	t.Helper()
	select {
	case e := <-srv.ended:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("the server's Count stream did not end")
		return serverEnd{}
	}
}

func TestGRPCStreamCalculator(t *testing.T) {
	b, srv := startCalculator(t, 0)
	g := newCount(t, b)
	ctx, cancel := context.WithTimeout(gateway.WithHopToken(context.Background(), "hop-credential"), 10*time.Second)
	defer cancel()
	res, err := g.Invoke(ctx, sessionCall(`{"message":"count for me","options":{"to":6}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := frames(t, res.Stream)
	_ = res.Stream.Close()
	var want []string
	for v := 1; v <= 6; v++ {
		n := string(rune('0' + v))
		want = append(want, canonical(t, []byte(event(`{"type":"text-delta","text":"`+n+` "}`))))
		if v%3 == 0 {
			want = append(want, canonical(t, []byte(event(`{"type":"status","status":"progress","message":"counted to `+n+`"}`))))
		}
	}
	// proto3 JSON writes an int64 as a string
	want = append(want, canonical(t, []byte(done(`{"text":"1 2 3 4 5 6 ","last":"6"}`))))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("frames\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
	end := awaitEnd(t, srv)
	if end.err != nil {
		t.Errorf("the server's stream ended with %v", end.err)
	}
	// the derived call ran under the session call's context: hop credential, trace, deadline
	if a := end.md.Get("authorization"); len(a) != 1 || a[0] != "Bearer hop-credential" {
		t.Errorf("authorization = %q, want the hop credential", a)
	}
	if id := end.md.Get("x-request-id"); len(id) != 1 || id[0] != "0123456789abcdef0123456789abcdef" {
		t.Errorf("x-request-id = %q, want the call's trace id", id)
	}
	if !end.hasDeadline {
		t.Error("the server's stream had no deadline")
	}
}

func TestGRPCStreamCancel(t *testing.T) {
	tests := []struct {
		name   string
		cancel func(context.CancelFunc, gateway.Stream)
		frame  string // the frame Recv returns next, "" for none expected
	}{
		{"the call's context cancelled", func(c context.CancelFunc, _ gateway.Stream) { c() }, "aborted"},
		{"the stream closed", func(_ context.CancelFunc, s gateway.Stream) { _ = s.Close() }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, srv := startCalculator(t, 0)
			g := newCount(t, b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res, err := g.Invoke(ctx, sessionCall(`{"message":"m","options":{"to":1000,"interval":"0.020s"}}`))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = res.Stream.Close() }()
			for range 2 {
				if _, err := res.Stream.Recv(ctx); err != nil {
					t.Fatal(err)
				}
			}
			tt.cancel(cancel, res.Stream)
			// the server sees its stream's context end, without the reader doing anything more
			if end := awaitEnd(t, srv); status.Code(end.err) != codes.Canceled {
				t.Fatalf("the server's stream ended with %v, want CANCELED", end.err)
			}
			if tt.frame == "" {
				return
			}
			f, err := res.Stream.Recv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var fr struct {
				Type    string
				Payload struct{ ErrorID string }
			}
			if err := json.Unmarshal(f, &fr); err != nil || fr.Type != "chat.error" || fr.Payload.ErrorID != tt.frame {
				t.Fatalf("frame after cancel = %s, want chat.error %s", f, tt.frame)
			}
			if _, err := res.Stream.Recv(ctx); !errors.Is(err, io.EOF) {
				t.Fatalf("Recv after the terminal frame = %v, want io.EOF", err)
			}
		})
	}
}

func TestGRPCStreamServerError(t *testing.T) {
	tests := []struct {
		name      string
		failAfter int
		payload   string
		events    int // chat.event frames before the chat.error
		errorID   string
		message   string
		grpcCode  string
	}{
		{"the server fails mid-stream", 4, `{"options":{"to":9}}`, 5, "UNAVAILABLE", "calculator draining", "Unavailable"},
		{"the server refuses the request", 0, `{"options":{"to":-1}}`, 0, "INVALID_PARAMS", "to must not be less than from", "InvalidArgument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, srv := startCalculator(t, tt.failAfter)
			g := newCount(t, b)
			res, err := g.Invoke(context.Background(), sessionCall(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			got := frames(t, res.Stream)
			_ = res.Stream.Close()
			if len(got) != tt.events+1 {
				t.Fatalf("got %d frames, want %d events and a chat.error: %v", len(got), tt.events, got)
			}
			for _, f := range got[:tt.events] {
				if !strings.Contains(f, `"type":"chat.event"`) {
					t.Fatalf("frame %s, want a chat.event", f)
				}
			}
			var last struct {
				Type    string
				Payload struct {
					ErrorID string
					Message string
					Code    int
					Detail  map[string]any
				}
			}
			if err := json.Unmarshal([]byte(got[tt.events]), &last); err != nil {
				t.Fatal(err)
			}
			p := last.Payload
			if last.Type != "chat.error" || p.ErrorID != tt.errorID || p.Message != tt.message || p.Code == 0 ||
				p.Detail["grpc_code"] != tt.grpcCode || p.Detail["backend"] != "calculator" {
				t.Fatalf("terminal frame = %s, want chat.error %s %q (grpc_code %s)", got[tt.events], tt.errorID, tt.message, tt.grpcCode)
			}
			if end := awaitEnd(t, srv); end.err == nil {
				t.Fatal("the server's stream ended without the error")
			}
		})
	}
}

func TestGRPCStreamDeadline(t *testing.T) {
	b, srv := startCalculator(t, 0)
	g := newCount(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := g.Invoke(ctx, sessionCall(`{"options":{"to":5,"interval":"2s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Stream.Close() }()
	var got []string
	for {
		f, err := res.Stream.Recv(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(f))
	}
	if len(got) != 2 || !strings.Contains(got[0], `"text":"1 "`) ||
		!strings.Contains(got[1], `"type":"chat.error"`) || !strings.Contains(got[1], `"errorId":"DEADLINE_EXCEEDED"`) {
		t.Fatalf("frames = %v, want the first value, then chat.error DEADLINE_EXCEEDED", got)
	}
	if end := awaitEnd(t, srv); end.err == nil {
		t.Fatal("the server's stream ran to its end past the deadline")
	}
}

// TestGRPCStreamDocumented runs the example of docs/session-grpc.md: its configuration
// decodes strictly and validates, and against the real calculator it gives the frames the
// page shows.
func TestGRPCStreamDocumented(t *testing.T) {
	page, err := os.ReadFile("../../docs/session-grpc.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```(yaml|json)\n(.*?)```").FindAllSubmatch(page, 2)
	if len(blocks) != 2 {
		t.Fatal("the page has no yaml example followed by its frames")
	}
	var doc struct {
		Session struct {
			Routes []sessionrpc.RouteConfig `yaml:"routes"`
		} `yaml:"session"`
	}
	if err := yaml.UnmarshalWithOptions(blocks[0][2], &doc, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	if err := sessionrpc.ValidateRoutes(doc.Session.Routes); err != nil {
		t.Fatal(err)
	}
	route := doc.Session.Routes[0]
	b, _ := startCalculator(t, 0)
	g, err := sessionrpc.NewGRPCStream(route.Name, *route.GRPC, b)
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(context.Background(), sessionCall(`{"message":"count","options":{"to":4}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Stream.Close() }()
	var got []string
	for _, f := range frames(t, res.Stream) {
		var fr struct{ Payload json.RawMessage }
		if err := json.Unmarshal([]byte(f), &fr); err != nil {
			t.Fatal(err)
		}
		got = append(got, canonical(t, fr.Payload))
	}
	var want []string
	for line := range strings.Lines(strings.TrimSpace(string(blocks[1][2]))) {
		want = append(want, canonical(t, []byte(line)))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("payloads\n got: %s\nwant (the page): %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

func TestGRPCStreamForwards(t *testing.T) {
	b, _ := startCalculator(t, 0)
	g := newCount(t, b)
	call := sessionCall(`{}`)
	call.Target = g
	if r := gateway.ReachOf(call, true); r.Kind != gateway.ReachGRPC || r.Server != "calculator" || r.Name != "calculator.v1.CalculatorService/Count" {
		t.Errorf("Reaches = %+v, want the gRPC method Count of calculator", r)
	}
	if got := gateway.BackendOf(call); got != "calculator" {
		t.Errorf("Backend = %q, want calculator", got)
	}
	if h := g.HopAuth(call); h.Mode != gateway.HopMint || h.Audience != "calculator" {
		t.Errorf("HopAuth = %+v, want a token minted for calculator", h)
	}
	if err := g.Ready(context.Background()); err != nil {
		t.Errorf("Ready = %v", err)
	}
	if g.NotRetryable(call) {
		t.Error("NotRetryable = true; the backend allows retries")
	}
	if g.Name() != "session:count" || g.Method() != "calc.count" {
		t.Errorf("Name, Method = %q, %q", g.Name(), g.Method())
	}
}

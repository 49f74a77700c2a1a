package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// capCaller is a target that runs a capability through the server's Invoker on behalf of
// its own caller, as the nekte.invoke target does: the input is params.in, or input when
// set. adjust, when set, derives the context the capability runs under.
type capCaller struct {
	inv    atomic.Pointer[capability.Invoker]
	cap    capability.Capability
	input  json.RawMessage
	adjust func(ctx context.Context) (context.Context, context.CancelFunc)

	mu       sync.Mutex
	outer    gateway.Call // the call capCaller served, identity only
	progress []gateway.Progress
	events   bool // the last result was a stream of named events
}

func (cc *capCaller) Name() string { return "capcaller" }

// set changes the capability and the input of the calls to come.
func (cc *capCaller) set(c capability.Capability, input string) {
	cc.mu.Lock()
	cc.cap, cc.input = c, json.RawMessage(input)
	cc.mu.Unlock()
}

func (cc *capCaller) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	cc.mu.Lock()
	cc.outer = gateway.Call{Principal: call.Principal, Zone: call.Zone, Protocol: call.Protocol, TraceID: call.TraceID}
	c, input := cc.cap, cc.input
	cc.mu.Unlock()
	if input == nil {
		var p struct {
			In json.RawMessage `json:"in"`
		}
		if err := json.Unmarshal(call.Params, &p); err != nil {
			return nil, gateway.NewError(schemas.CodeInvalidParams)
		}
		input = p.In
	}
	if cc.adjust != nil {
		var cancel context.CancelFunc
		ctx, cancel = cc.adjust(ctx)
		defer cancel()
	}
	ctx = gateway.WithProgress(ctx, func(p gateway.Progress) {
		cc.mu.Lock()
		cc.progress = append(cc.progress, p)
		cc.mu.Unlock()
	})
	res, err := (*cc.inv.Load()).Invoke(ctx, c, input)
	if err != nil {
		return nil, err
	}
	if res.Stream == nil {
		return res, nil
	}
	cc.mu.Lock()
	cc.events = res.Events
	cc.mu.Unlock()
	defer func() { _ = res.Stream.Close() }()
	var msgs []string
	for {
		msg, err := res.Stream.Recv(ctx)
		if errors.Is(err, io.EOF) {
			return gateway.NewResult([]byte("[" + strings.Join(msgs, ",") + "]")), nil
		}
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, string(msg))
	}
}

// innerTarget records the calls a capability runs as and answers them; with block set it
// waits for the call's context to end; with stream set it answers with that stream.
type innerTarget struct {
	block   bool
	stream  *fakeStream
	started chan struct{} // closed when the first call starts

	once       sync.Once
	mu         sync.Mutex
	calls      []gateway.Call
	deadlines  []time.Time
	ctxErrs    []error
	hadProgess []bool
}

func newInnerTarget() *innerTarget { return &innerTarget{started: make(chan struct{})} }

func (it *innerTarget) Name() string { return "inner" }

func (it *innerTarget) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	dl, _ := ctx.Deadline()
	progress := gateway.ProgressFrom(ctx)
	it.mu.Lock()
	it.calls = append(it.calls, gateway.Call{Method: call.Method, Params: append([]byte(nil), call.Params...), Principal: call.Principal,
		Deadline: call.Deadline, TraceID: call.TraceID, Zone: call.Zone, Protocol: call.Protocol, Capability: call.Capability})
	it.deadlines = append(it.deadlines, dl)
	it.hadProgess = append(it.hadProgess, progress != nil)
	it.mu.Unlock()
	it.once.Do(func() { close(it.started) })
	if progress != nil {
		progress(gateway.Progress{Progress: 1, Message: "inner"})
	}
	if it.block {
		<-ctx.Done()
		it.mu.Lock()
		it.ctxErrs = append(it.ctxErrs, ctx.Err())
		it.mu.Unlock()
		return nil, gateway.AsError(ctx.Err())
	}
	if it.stream != nil {
		return &gateway.Result{Stream: it.stream, Events: true}, nil
	}
	return gateway.NewResult([]byte(`{"ok":true}`)), nil
}

func (it *innerTarget) recorded() ([]gateway.Call, []time.Time, []bool) {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.calls, it.deadlines, it.hadProgess
}

// startCapCaller starts a server routing test.cap to cc and test.inner to inner, and
// gives cc the server's Invoker.
func startCapCaller(t *testing.T, yaml string, cc *capCaller, inner *innerTarget) *testServer {
	t.Helper()
	targets := map[string]gateway.Target{"test.cap": cc}
	if inner != nil {
		targets["test.inner"] = inner
	}
	ts := start(t, yaml, targets)
	inv := ts.CapabilityInvoker()
	cc.inv.Store(&inv)
	return ts
}

// TestCapabilityInvokerRunsAsTheCaller checks everything the inner call takes from the
// call it runs for: principal, zone, protocol, trace id, deadline, the progress sink; and
// what it gets of its own: the capability id and the input exactly as given.
func TestCapabilityInvokerRunsAsTheCaller(t *testing.T) {
	inner := newInnerTarget()
	cc := &capCaller{cap: capability.Capability{ID: "demo.inner", Method: "test.inner"}}
	ts := startCapCaller(t, baseConfig, cc, inner)
	input := `{"text":"x","deadline_ms":5,"depends_on":["a"]}`
	deadline := time.Now().Add(20 * time.Second).Truncate(time.Millisecond)
	_, hdr, body := ts.post(`{"jsonrpc":"2.0","method":"test.cap","params":{"in":`+input+`},"id":1}`,
		"X-Deadline-Ms", strconv.FormatInt(deadline.UnixMilli(), 10))
	if body != `{"jsonrpc":"2.0","result":{"ok":true},"id":1}` {
		t.Fatalf("got %s", body)
	}
	calls, deadlines, hadProgress := inner.recorded()
	if len(calls) != 1 {
		t.Fatalf("%d inner calls", len(calls))
	}
	got := calls[0]
	cc.mu.Lock()
	outer, progress := cc.outer, cc.progress
	cc.mu.Unlock()
	if got.Capability != "demo.inner" || got.Method != "test.inner" || string(got.Params) != input {
		t.Errorf("inner call %q %q params %s; want capability demo.inner, the input as it was", got.Capability, got.Method, got.Params)
	}
	if got.Principal.Subject != outer.Principal.Subject || got.Principal.Subject == "" || got.Zone != gateway.ZoneExternal ||
		got.Protocol != gateway.ProtocolHTTP || got.TraceID != outer.TraceID || got.TraceID != hdr.Get("X-Trace-Id") {
		t.Errorf("inner call ran as %+v; the caller is %+v, trace %s", got, outer, hdr.Get("X-Trace-Id"))
	}
	if !got.Deadline.Equal(deadline) || !deadlines[0].Equal(deadline) {
		t.Errorf("inner deadline %v (context %v), want the caller's %v", got.Deadline, deadlines[0], deadline)
	}
	if !hadProgress[0] || len(progress) != 1 || progress[0].Message != "inner" {
		t.Errorf("progress: sink seen %v, reports %+v; want the caller's sink to get the inner report", hadProgress[0], progress)
	}
}

func TestCapabilityInvokerPropagatesCancel(t *testing.T) {
	inner := newInnerTarget()
	inner.block = true
	cc := &capCaller{cap: capability.Capability{ID: "demo.inner", Method: "test.inner"}, input: json.RawMessage(`{}`)}
	cc.adjust = func(ctx context.Context) (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithCancel(ctx)
		go func() {
			<-inner.started
			cancel()
		}()
		return ctx, cancel
	}
	ts := startCapCaller(t, baseConfig, cc, inner)
	_, _, body := ts.post(`{"jsonrpc":"2.0","method":"test.cap","id":1}`)
	if r := decodeOne(t, body); r.Error == nil || r.Error.Code != int(schemas.CodeCancelled) {
		t.Fatalf("got %s, want CANCELLED", body)
	}
	inner.mu.Lock()
	defer inner.mu.Unlock()
	if len(inner.ctxErrs) != 1 || !errors.Is(inner.ctxErrs[0], context.Canceled) {
		t.Fatalf("inner context ended with %v", inner.ctxErrs)
	}
}

func TestCapabilityInvokerPropagatesDeadline(t *testing.T) {
	inner := newInnerTarget()
	inner.block = true
	const budget = 300 * time.Millisecond
	cc := &capCaller{cap: capability.Capability{ID: "demo.inner", Method: "test.inner"}, input: json.RawMessage(`{}`)}
	var want atomic.Int64
	cc.adjust = func(ctx context.Context) (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithTimeout(ctx, budget)
		dl, _ := ctx.Deadline()
		want.Store(dl.UnixMilli())
		return ctx, cancel
	}
	ts := startCapCaller(t, baseConfig, cc, inner)
	_, _, body := ts.post(`{"jsonrpc":"2.0","method":"test.cap","id":1}`)
	if r := decodeOne(t, body); r.Error == nil || r.Error.Code != int(schemas.CodeDeadlineExceeded) {
		t.Fatalf("got %s, want DEADLINE_EXCEEDED", body)
	}
	calls, deadlines, _ := inner.recorded()
	if len(calls) != 1 || calls[0].Deadline.UnixMilli() != want.Load() || deadlines[0].UnixMilli() != want.Load() {
		t.Fatalf("inner deadline %v (context %v), want %v", calls[0].Deadline, deadlines[0], time.UnixMilli(want.Load()))
	}
}

// TestCapabilityInvokerStream checks a streamed capability: its stream comes back unread,
// marked as events when it is, and the configuration it runs in is held until it is closed.
func TestCapabilityInvokerStream(t *testing.T) {
	inner := newInnerTarget()
	inner.stream = newFakeStream(nil, false, taskEvents[:2]...)
	cc := &capCaller{cap: capability.Capability{ID: "demo.inner", Method: "test.inner", Streaming: true}, input: json.RawMessage(`{}`)}
	ts := startCapCaller(t, baseConfig, cc, inner)
	_, _, body := ts.post(`{"jsonrpc":"2.0","method":"test.cap","id":1}`)
	if want := `{"jsonrpc":"2.0","result":[` + taskEvents[0] + `,` + taskEvents[1] + `],"id":1}`; body != want {
		t.Fatalf("got  %s\nwant %s", body, want)
	}
	select {
	case <-inner.stream.closed:
	default:
		t.Fatal("the inner stream was not closed")
	}
	cc.mu.Lock()
	events := cc.events
	cc.mu.Unlock()
	if !events {
		t.Error("Result.Events was lost")
	}
	waitFor(t, func() bool { return ts.cur.Load().refs.Load() == 0 })
}

func TestCapabilityInvokerRefusals(t *testing.T) {
	inner := newInnerTarget()
	cc := &capCaller{cap: capability.Capability{ID: "demo.inner", Method: "test.inner"}}
	ts := startCapCaller(t, baseConfig+goldenExtra, cc, inner)
	inv := *cc.inv.Load()
	if _, err := inv.Invoke(context.Background(), cc.cap, json.RawMessage(`{}`)); gateway.AsError(err).Code() != schemas.CodeInternal {
		t.Errorf("outside a call: %v, want INTERNAL_ERROR", err)
	}
	tests := []struct {
		name  string
		cap   capability.Capability
		input string
		code  schemas.Code
	}{
		{"duplicate member names", cc.cap, `{"a":1,"a":2}`, schemas.CodeInvalidRequest},
		{"not JSON", cc.cap, `{"a":`, schemas.CodeParseError},
		{"string over max_string_bytes", cc.cap, `{"a":"` + strings.Repeat("x", 65) + `"}`, schemas.CodeInvalidRequest},
		{"no method", capability.Capability{ID: "x"}, `{}`, schemas.CodeInternal},
		{"unrouted method", capability.Capability{ID: "x", Method: "nope"}, `{}`, schemas.CodeMethodNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc.set(tt.cap, tt.input)
			_, _, body := ts.post(`{"jsonrpc":"2.0","method":"test.cap","id":1}`)
			if r := decodeOne(t, body); r.Error == nil || r.Error.Code != int(tt.code) {
				t.Fatalf("got %s, want code %d", body, tt.code)
			}
		})
	}
	if calls, _, _ := inner.recorded(); len(calls) != 0 {
		t.Fatalf("a refused invocation reached the target: %+v", calls)
	}
}

// TestCapabilityInvokerThroughDirectZones calls a bridged MCP tool from the external zone:
// directly it is refused (routing.mcp.direct_zones default), as a capability run with the
// same caller's identity it is served — over HTTP and WebSocket.
func TestCapabilityInvokerThroughDirectZones(t *testing.T) {
	cc := &capCaller{cap: capability.Capability{ID: "test_simple_text", Method: "mcp.test_simple_text", Kind: capability.KindMCPTool},
		input: json.RawMessage(`{}`)}
	ts := startCapCaller(t, withDemoMCP(t, baseConfig, ""), cc, nil)
	_, _, body := ts.post(simpleText)
	checkZoneRefusal(t, "http", decodeOne(t, body), "external")

	const viaCap = `{"jsonrpc":"2.0","method":"test.cap","id":1}`
	status, _, body := ts.post(viaCap)
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	checkDirect(t, "http as a capability", decodeOne(t, body), true, "external")
	c := dialWS(t, ts, nil)
	wsSend(t, c, viaCap)
	checkDirect(t, "websocket as a capability", decodeOne(t, wsRead(t, c, 10*time.Second)), true, "external")
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.outer.Zone != gateway.ZoneExternal {
		t.Fatalf("the capability's caller was in zone %v", cc.outer.Zone)
	}
}

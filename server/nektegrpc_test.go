package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/prototest"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/schemas"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
	nektev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/nekte/v1"
)

// nekteGRPCConfig serves the demo methods, with the internal gRPC listener on and no
// NEKTE.
const nekteGRPCConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  internal: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth: {anonymous: {}}
routing:
  demo: {}
log: {level: debug}
`

// nekteOnConfig turns NEKTE on, its catalog paging discover results two at a time so that
// Discover has to follow cursors.
const nekteOnConfig = nekteGRPCConfig + `
nekte:
  catalog:
    discover: {page_size: 2}
`

// nekteWaitLimit bounds every wait of these tests.
const nekteWaitLimit = 10 * time.Second

// nekteWorld is a running server with NEKTE on, whose catalog holds the demo methods and
// the countdown capability (a slow one, for delegated tasks), and a client of its
// internal listener.
type nekteWorld struct {
	ts        *testServer
	client    nektev1.NekteClient
	countdown *countdownTarget
}

func startNekte(t *testing.T) *nekteWorld {
	t.Helper()
	cd := &countdownTarget{runs: make(chan *countdownRun, 8)}
	ts := start(t, nekteOnConfig, map[string]gateway.Target{countdownCapability.Method: cd})
	return &nekteWorld{ts: ts, client: nektev1.NewNekteClient(dialNekte(t, ts)), countdown: cd}
}

// catalog returns the catalog version and each capability's hash as the JSON-RPC face
// discovers them.
func (w *nekteWorld) catalog(t *testing.T) (version string, hashes map[string]string) {
	t.Helper()
	_, _, body := w.ts.post(`{"jsonrpc":"2.0","method":"nekte.discover","params":{"level":0,"limit":100},"id":1}`)
	var res struct {
		V    string `json:"v"`
		Caps []struct {
			ID string `json:"id"`
			H  string `json:"h"`
		} `json:"caps"`
	}
	if err := json.Unmarshal(decodeOne(t, body).Result, &res); err != nil || res.V == "" {
		t.Fatalf("discover over JSON-RPC: %s", body)
	}
	hashes = map[string]string{}
	for _, c := range res.Caps {
		hashes[c.ID] = c.H
	}
	return res.V, hashes
}

// dialNekte connects to the server's internal listener for the test's duration.
func dialNekte(t *testing.T, ts *testServer) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(ts.InternalAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// countdownCapability is a slow capability: its method reports progress 1/3 and waits to
// be released.
var countdownCapability = capability.Capability{
	ID: "countdown", Description: "Counts down slowly from three, reporting progress at every step.",
	Method: "test.countdown", Kind: capability.KindBuiltin, Source: "test",
	Input: json.RawMessage(`{"type":"object"}`), Output: json.RawMessage(`{"type":"object"}`),
}

// countdownTarget serves test.countdown: each call reports progress 1/3, hands its run to
// runs, and answers when the run is released, or ends with its context (reporting why on
// the run's ended).
type countdownTarget struct{ runs chan *countdownRun }

type countdownRun struct {
	release chan struct{}
	ended   chan error
}

func (*countdownTarget) Name() string { return "countdown" }

// Capabilities puts the countdown in the catalog (capability.Provider).
func (*countdownTarget) Capabilities() []capability.Capability {
	return []capability.Capability{countdownCapability}
}

func (c *countdownTarget) Invoke(ctx context.Context, _ *gateway.Call) (*gateway.Result, error) {
	if p := gateway.ProgressFrom(ctx); p != nil {
		total := 3.0
		p(gateway.Progress{Progress: 1, Total: &total, Message: "three"})
	}
	run := &countdownRun{release: make(chan struct{}), ended: make(chan error, 1)}
	c.runs <- run
	select {
	case <-run.release:
		return gateway.NewResult([]byte(`{"left":0,"said":["three","two","one"]}`)), nil
	case <-ctx.Done():
		run.ended <- ctx.Err()
		return nil, ctx.Err()
	}
}

// next returns the next run of the countdown.
func (c *countdownTarget) next(t *testing.T) *countdownRun {
	t.Helper()
	select {
	case r := <-c.runs:
		return r
	case <-time.After(nekteWaitLimit):
		t.Fatal("the countdown did not start")
		return nil
	}
}

func nekteContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nekteWaitLimit)
	t.Cleanup(cancel)
	return ctx
}

// wantNekteStatus checks that err is a status of code carrying the JSON-RPC code jsonrpc in
// its ErrorInfo, with data holding a trace id and, when field is set, that field.
func wantNekteStatus(t *testing.T, err error, code codes.Code, jsonrpc schemas.Code, field string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("status %v (%v), want %v", st.Code(), err, code)
	}
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			info = i
		}
	}
	if info == nil {
		t.Fatalf("no ErrorInfo in %v", st.Details())
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(info.GetMetadata()["data"]), &data); err != nil {
		t.Fatalf("ErrorInfo data %q: %v", info.GetMetadata()["data"], err)
	}
	if got := info.GetMetadata()["jsonrpc_code"]; got != codeString(jsonrpc) || data["trace_id"] == nil {
		t.Errorf("ErrorInfo %v, want jsonrpc_code %d and a trace_id", info.GetMetadata(), jsonrpc)
	}
	if field != "" && data["field"] != field {
		t.Errorf("error data %v, want field %q", data, field)
	}
}

func codeString(c schemas.Code) string {
	b, _ := json.Marshal(c)
	return string(b)
}

func TestNekteGRPCDiscover(t *testing.T) {
	w := startNekte(t)
	ctx := nekteContext(t)
	version, hashes := w.catalog(t)
	tests := []struct {
		name string
		req  *nektev1.DiscoverRequest
		want string
	}{
		{"L0 whole catalog over three pages", &nektev1.DiscoverRequest{},
			`{"agent":"gatehouse","version":"` + version + `","refs":[
			{"id":"countdown","cat":"test","h":"X"},{"id":"get_data","cat":"demo","h":"X"},{"id":"notify_hello","cat":"demo","h":"X"},
			{"id":"subtract","cat":"demo","h":"X"},{"id":"sum","cat":"demo","h":"X"},{"id":"update","cat":"demo","h":"X"}]}`},
		{"L1 by category", &nektev1.DiscoverRequest{Level: 1, Filter: &nektev1.DiscoverFilter{Category: "test"}},
			`{"agent":"gatehouse","version":"` + version + `","summaries":[
			{"id":"countdown","cat":"test","h":"X","desc":"Counts down slowly from three, reporting progress at every step."}]}`},
		{"L2 by id", &nektev1.DiscoverRequest{Level: 2, Filter: &nektev1.DiscoverFilter{Id: "sum"}},
			`{"agent":"gatehouse","version":"` + version + `","schemas":[
			{"id":"sum","cat":"demo","h":"X","desc":"Adds up a list of numbers and returns the sum (JSON-RPC 2.0 specification example).",
			 "input_schema":{"type":"array","items":{"type":"number"}},"output_schema":{"type":"number"},
			 "examples":[{"input":[1,2,4],"output":7}]}]}`},
		{"L0 by query, top_k and threshold", &nektev1.DiscoverRequest{Filter: &nektev1.DiscoverFilter{Query: "subtract minuend", TopK: 1, Threshold: 0.1}},
			`{"agent":"gatehouse","version":"` + version + `","refs":[{"id":"subtract","cat":"demo","h":"X"}]}`},
		{"nothing matches", &nektev1.DiscoverRequest{Filter: &nektev1.DiscoverFilter{Category: "none"}},
			`{"agent":"gatehouse","version":"` + version + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := w.client.Discover(ctx, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			prototest.Check(t, resp, tt.want)
		})
	}
	// The hashes are those JSON-RPC callers see.
	resp, err := w.client.Discover(ctx, &nektev1.DiscoverRequest{})
	if err != nil || len(resp.GetRefs()) != len(hashes) {
		t.Fatalf("L0: %v %v, want %d entries", resp, err, len(hashes))
	}
	for _, r := range resp.GetRefs() {
		if r.GetH() != hashes[r.GetId()] {
			t.Errorf("%s: h %s, want %s", r.GetId(), r.GetH(), hashes[r.GetId()])
		}
	}
}

func TestNekteGRPCInvoke(t *testing.T) {
	w := startNekte(t)
	ctx := nekteContext(t)
	_, hashes := w.catalog(t)
	subH := hashes["subtract"]
	tests := []struct {
		name string
		req  *nektev1.InvokeRequest
		want string
	}{
		{"with h, no budget", &nektev1.InvokeRequest{Cap: "subtract", H: subH, Input: []byte(`{"minuend":42,"subtrahend":23}`)},
			`{"output":19,"resolved_level":"compact","meta":{"tokens_used":"X"}}`},
		{"without h, full", &nektev1.InvokeRequest{Cap: "get_data", Budget: &nektev1.TokenBudget{MaxTokens: 100, DetailLevel: "full"}},
			`{"output":["hello",5],"resolved_level":"full","meta":{"tokens_used":"X"}}`},
		{"minimal is a JSON string", &nektev1.InvokeRequest{Cap: "sum", Input: []byte(`[1,2,4]`), Budget: &nektev1.TokenBudget{DetailLevel: "minimal"}},
			`{"output":"7","resolved_level":"minimal","meta":{"tokens_used":"X"}}`},
		{"stale h: VERSION_MISMATCH with the L2 entry", &nektev1.InvokeRequest{Cap: "subtract", H: "deadbeef", Input: []byte(`{"minuend":1,"subtrahend":1}`)},
			`{"error":{"code":-32001,"message":"VERSION_MISMATCH","current_hash":"X","schema":{"id":"subtract","cat":"demo","h":"X",
			 "desc":"Subtracts subtrahend from minuend and returns the difference (JSON-RPC 2.0 specification example).",
			 "input_schema":{"type":"object","properties":{"minuend":{"type":"number"},"subtrahend":{"type":"number"}},"required":["minuend","subtrahend"],"additionalProperties":false},
			 "output_schema":{"type":"number"},"examples":[{"input":{"minuend":42,"subtrahend":23},"output":19}]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := w.client.Invoke(ctx, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			prototest.Check(t, resp, tt.want)
		})
	}
	// The mismatch carries the current hash, and the retry without h (as the reference
	// client does) runs.
	resp, err := w.client.Invoke(ctx, &nektev1.InvokeRequest{Cap: "subtract", H: "deadbeef", Input: []byte(`{"minuend":5,"subtrahend":3}`)})
	if err != nil || resp.GetError().GetCurrentHash() != subH || resp.GetError().GetSchema().GetH() != subH {
		t.Fatalf("mismatch: %v %v, want current_hash %s", resp, err, subH)
	}
	resp, err = w.client.Invoke(ctx, &nektev1.InvokeRequest{Cap: "subtract", Input: []byte(`{"minuend":5,"subtrahend":3}`)})
	if err != nil || string(resp.GetOutput()) != "2" || resp.GetError() != nil {
		t.Fatalf("retry: %v %v", resp, err)
	}
}

func TestNekteGRPCErrors(t *testing.T) {
	w := startNekte(t)
	ctx := nekteContext(t)
	c := w.client
	tests := []struct {
		name    string
		call    func() error
		code    codes.Code
		jsonrpc schemas.Code
		field   string
	}{
		{"discover level out of range", func() error { _, err := c.Discover(ctx, &nektev1.DiscoverRequest{Level: 3}); return err },
			codes.InvalidArgument, schemas.CodeInvalidParams, "level"},
		{"discover threshold out of range", func() error {
			_, err := c.Discover(ctx, &nektev1.DiscoverRequest{Filter: &nektev1.DiscoverFilter{Query: "x", Threshold: 2}})
			return err
		}, codes.InvalidArgument, schemas.CodeInvalidParams, "filter.threshold"},
		{"invoke unknown capability", func() error { _, err := c.Invoke(ctx, &nektev1.InvokeRequest{Cap: "nope"}); return err },
			codes.NotFound, schemas.CodeCapabilityNotFound, ""},
		{"invoke without cap", func() error { _, err := c.Invoke(ctx, &nektev1.InvokeRequest{}); return err },
			codes.InvalidArgument, schemas.CodeInvalidParams, "cap"},
		{"invoke input not JSON", func() error {
			_, err := c.Invoke(ctx, &nektev1.InvokeRequest{Cap: "sum", Input: []byte(`[1,`)})
			return err
		}, codes.InvalidArgument, schemas.CodeInvalidParams, "in"},
		{"invoke input against the schema", func() error {
			_, err := c.Invoke(ctx, &nektev1.InvokeRequest{Cap: "subtract", Input: []byte(`{"minuend":1}`)})
			return err
		}, codes.InvalidArgument, schemas.CodeInvalidParams, ""},
		{"invoke duplicate member", func() error {
			_, err := c.Invoke(ctx, &nektev1.InvokeRequest{Cap: "subtract", Input: []byte(`{"minuend":1,"minuend":2,"subtrahend":1}`)})
			return err
		}, codes.InvalidArgument, schemas.CodeInvalidRequest, ""},
		{"invoke bad detail level", func() error {
			_, err := c.Invoke(ctx, &nektev1.InvokeRequest{Cap: "sum", Input: []byte(`[1]`), Budget: &nektev1.TokenBudget{DetailLevel: "huge"}})
			return err
		}, codes.InvalidArgument, schemas.CodeInvalidParams, "budget.detail_level"},
		{"task status unknown", func() error { _, err := c.TaskStatus(ctx, &nektev1.TaskStatusRequest{TaskId: "nope"}); return err },
			codes.NotFound, schemas.CodeTaskNotFound, ""},
		{"task cancel unknown", func() error { _, err := c.TaskCancel(ctx, &nektev1.TaskCancelRequest{TaskId: "nope"}); return err },
			codes.NotFound, schemas.CodeTaskNotFound, ""},
		{"task resume unknown", func() error { _, err := c.TaskResume(ctx, &nektev1.TaskResumeRequest{TaskId: "nope"}); return err },
			codes.NotFound, schemas.CodeTaskNotFound, ""},
		{"task status without id", func() error { _, err := c.TaskStatus(ctx, &nektev1.TaskStatusRequest{}); return err },
			codes.InvalidArgument, schemas.CodeInvalidParams, "task_id"},
		{"verify unknown", func() error {
			_, err := c.Verify(ctx, &nektev1.VerifyRequest{TaskId: "nope", Checks: []string{"hash"}})
			return err
		}, codes.NotFound, schemas.CodeTaskNotFound, ""},
		{"verify without checks", func() error { _, err := c.Verify(ctx, &nektev1.VerifyRequest{TaskId: "t"}); return err },
			codes.InvalidArgument, schemas.CodeInvalidParams, "checks"},
		{"context bad action", func() error {
			_, err := c.Context(ctx, &nektev1.ContextRequest{Action: "steal", Envelope: &nektev1.ContextEnvelope{Id: "e"}})
			return err
		}, codes.InvalidArgument, schemas.CodeInvalidParams, "action"},
		{"context without envelope", func() error { _, err := c.Context(ctx, &nektev1.ContextRequest{Action: "request"}); return err },
			codes.InvalidArgument, schemas.CodeInvalidParams, "envelope.id"},
		{"context data not JSON", func() error {
			_, err := c.Context(ctx, &nektev1.ContextRequest{Action: "share", Envelope: &nektev1.ContextEnvelope{Id: "e", Data: []byte("{")}})
			return err
		}, codes.InvalidArgument, schemas.CodeInvalidParams, "envelope.data"},
		{"delegate without task", func() error { return firstDelegateError(ctx, c, &nektev1.DelegateRequest{}) },
			codes.InvalidArgument, schemas.CodeInvalidParams, "task.id"},
		{"delegate with nothing matching", func() error {
			return firstDelegateError(ctx, c, &nektev1.DelegateRequest{Task: &nektev1.Task{Id: "t-none", Desc: "zzzz qqqq"}})
		}, codes.NotFound, schemas.CodeCapabilityNotFound, ""},
		{"delegate context data not JSON", func() error {
			return firstDelegateError(ctx, c, &nektev1.DelegateRequest{Task: &nektev1.Task{Id: "t-bad", Desc: "countdown"},
				Context: &nektev1.ContextEnvelope{Id: "e", Data: []byte("nope")}})
		}, codes.InvalidArgument, schemas.CodeInvalidParams, "context.data"},
		{"delegate context not to be forwarded", func() error {
			return firstDelegateError(ctx, c, &nektev1.DelegateRequest{Task: &nektev1.Task{Id: "t-fwd", Desc: "countdown"},
				Context: &nektev1.ContextEnvelope{Id: "e", Data: []byte(`{"k":1}`), Permissions: &nektev1.ContextPermissions{}}})
		}, codes.PermissionDenied, schemas.CodeContextPermissionDenied, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantNekteStatus(t, tt.call(), tt.code, tt.jsonrpc, tt.field)
		})
	}
}

// firstDelegateError opens a Delegate stream and returns the error its first receive
// gets.
func firstDelegateError(ctx context.Context, c nektev1.NekteClient, req *nektev1.DelegateRequest) error {
	s, err := c.Delegate(ctx, req)
	if err != nil {
		return err
	}
	ev, err := s.Recv()
	if err == nil {
		return errors.New("got an event: " + ev.String())
	}
	return err
}

// delegateEventName is the name of a DelegateEvent's member.
func delegateEventName(ev *nektev1.DelegateEvent) string {
	m := ev.ProtoReflect()
	fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("event"))
	if fd == nil {
		return "none"
	}
	return string(fd.Name())
}

// recvEventsUntil receives events until one named last (included) and returns them.
func recvEventsUntil(t *testing.T, s grpc.ServerStreamingClient[nektev1.DelegateEvent], last string) []*nektev1.DelegateEvent {
	t.Helper()
	var got []*nektev1.DelegateEvent
	for {
		ev, err := s.Recv()
		if err != nil {
			t.Fatalf("after %s: %v", eventNames(got), err)
		}
		got = append(got, ev)
		if delegateEventName(ev) == last {
			return got
		}
	}
}

func eventNames(evs []*nektev1.DelegateEvent) string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = delegateEventName(ev)
	}
	return strings.Join(out, " ")
}

// wantStreamEnd checks that the stream ends cleanly.
func wantStreamEnd(t *testing.T, s grpc.ServerStreamingClient[nektev1.DelegateEvent]) {
	t.Helper()
	if ev, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the final event: %v %v, want the end of the stream", ev, err)
	}
}

func TestNekteGRPCDelegate(t *testing.T) {
	w := startNekte(t)
	ctx := nekteContext(t)
	s, err := w.client.Delegate(ctx, &nektev1.DelegateRequest{Task: &nektev1.Task{Id: "t-1", Desc: "countdown", TimeoutMs: 60000,
		Budget: &nektev1.TokenBudget{MaxTokens: 500, DetailLevel: "compact"}}})
	if err != nil {
		t.Fatal(err)
	}
	first := recvEventsUntil(t, s, "progress")
	prototest.Check(t, first[len(first)-1], `{"progress":{"processed":1,"total":3,"message":"three"}}`)
	st, err := w.client.TaskStatus(ctx, &nektev1.TaskStatusRequest{TaskId: "t-1"})
	if err != nil {
		t.Fatal(err)
	}
	prototest.Check(t, st, `{"task_id":"t-1","status":"running","progress_processed":1,"progress_total":3,"created_at":"X","updated_at":"X"}`)
	if st.GetCreatedAt() < time.Now().Add(-time.Minute).UnixMilli() || st.GetUpdatedAt() < st.GetCreatedAt() {
		t.Errorf("timestamps %d %d are not epoch milliseconds", st.GetCreatedAt(), st.GetUpdatedAt())
	}
	close(w.countdown.next(t).release)
	rest := recvEventsUntil(t, s, "complete")
	wantStreamEnd(t, s)
	if got := eventNames(append(first, rest...)); got != "status_change status_change progress status_change complete" {
		t.Errorf("events %s", got)
	}
	prototest.Check(t, rest[len(rest)-1], `{"complete":{"task_id":"t-1","output":{
		"minimal":"left: 0, said: [3 items]","compact":{"left":0,"said":["three","two","one"]}},
		"meta":{"tokens_used":"X"}}}`)

	st, err = w.client.TaskStatus(ctx, &nektev1.TaskStatusRequest{TaskId: "t-1"})
	if err != nil || st.GetStatus() != "completed" {
		t.Fatalf("status after complete: %v %v", st, err)
	}
	v, err := w.client.Verify(ctx, &nektev1.VerifyRequest{TaskId: "t-1", Checks: []string{"hash", "source"}})
	if err != nil {
		t.Fatal(err)
	}
	prototest.Check(t, v, `{"task_id":"t-1","checks":["hash","source"],"status":"verified","data":{"task_id":"t-1","checks":["hash","source"],
		"status":"verified","hash":"X","hash_valid":true,"source":{"capability":"countdown","kind":"builtin","source":"test","h":"X",
		"input_sha256":"X","output_sha256":"X","created_at":"X","completed_at":"X","issuer":"gatehouse","alg":"EdDSA","kid":"X","receipt":"X"}}}`)
	_, err = w.client.Verify(ctx, &nektev1.VerifyRequest{TaskId: "t-1", Checks: []string{"sample"}})
	wantNekteStatus(t, err, codes.InvalidArgument, schemas.CodeInvalidParams, "checks") // countdown is not deterministic
	_, err = w.client.TaskCancel(ctx, &nektev1.TaskCancelRequest{TaskId: "t-1"})
	wantNekteStatus(t, err, codes.FailedPrecondition, schemas.CodeTaskNotCancellable, "")
	_, err = w.client.TaskResume(ctx, &nektev1.TaskResumeRequest{TaskId: "t-1"})
	wantNekteStatus(t, err, codes.FailedPrecondition, schemas.CodeTaskNotResumable, "")
}

func TestNekteGRPCVerifySample(t *testing.T) {
	w := startNekte(t)
	ctx := nekteContext(t)
	s, err := w.client.Delegate(ctx, &nektev1.DelegateRequest{Task: &nektev1.Task{Id: "t-data", Desc: "get_data: the fixed list"}})
	if err != nil {
		t.Fatal(err)
	}
	recvEventsUntil(t, s, "complete")
	wantStreamEnd(t, s)
	v, err := w.client.Verify(ctx, &nektev1.VerifyRequest{TaskId: "t-data", Checks: []string{"sample"},
		Budget: &nektev1.TokenBudget{DetailLevel: "full"}})
	if err != nil {
		t.Fatal(err)
	}
	prototest.Check(t, v, `{"task_id":"t-data","checks":["sample"],"status":"verified","data":{"task_id":"t-data","checks":["sample"],
		"status":"verified","sample":{"matched":true,"output_sha256":"X","out":["hello",5],"resolved_level":"full"}}}`)
}

func TestNekteGRPCTaskCancelMidStream(t *testing.T) {
	w := startNekte(t)
	ctx := nekteContext(t)
	s, err := w.client.Delegate(ctx, &nektev1.DelegateRequest{Task: &nektev1.Task{Id: "t-2", Desc: "countdown"}})
	if err != nil {
		t.Fatal(err)
	}
	recvEventsUntil(t, s, "progress")
	run := w.countdown.next(t)
	lc, err := w.client.TaskCancel(ctx, &nektev1.TaskCancelRequest{TaskId: "t-2", Reason: "changed my mind"})
	if err != nil {
		t.Fatal(err)
	}
	prototest.Check(t, lc, `{"task_id":"t-2","status":"cancelled","previous_status":"running"}`)
	evs := recvEventsUntil(t, s, "cancelled")
	wantStreamEnd(t, s)
	prototest.Check(t, evs[len(evs)-1], `{"cancelled":{"task_id":"t-2","reason":"changed my mind","previous_status":"running"}}`)
	select {
	case err := <-run.ended: // the backend call was cancelled for real
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the countdown ended with %v", err)
		}
	case <-time.After(nekteWaitLimit):
		t.Fatal("the countdown was not cancelled")
	}
}

func TestNekteGRPCDelegateOutlivesItsStream(t *testing.T) {
	w := startNekte(t)
	ctx := nekteContext(t)
	streamCtx, hangUp := context.WithCancel(ctx)
	s, err := w.client.Delegate(streamCtx, &nektev1.DelegateRequest{Task: &nektev1.Task{Id: "t-3", Desc: "countdown"}})
	if err != nil {
		t.Fatal(err)
	}
	recvEventsUntil(t, s, "progress")
	run := w.countdown.next(t)
	hangUp()
	if _, err := s.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("after hanging up: %v", err)
	}
	st, err := w.client.TaskStatus(ctx, &nektev1.TaskStatusRequest{TaskId: "t-3"})
	if err != nil || st.GetStatus() != "running" {
		t.Fatalf("status after hanging up: %v %v", st, err)
	}
	select {
	case err := <-run.ended:
		t.Fatalf("the countdown ended with the stream: %v", err)
	default:
	}
	close(run.release)
	waitFor(t, func() bool {
		st, err := w.client.TaskStatus(ctx, &nektev1.TaskStatusRequest{TaskId: "t-3"})
		return err == nil && st.GetStatus() == "completed"
	})
}

func TestNekteGRPCTaskResume(t *testing.T) {
	w := startNekte(t)
	ctx := nekteContext(t)
	s, err := w.client.Delegate(ctx, &nektev1.DelegateRequest{Task: &nektev1.Task{Id: "t-4", Desc: "countdown"}})
	if err != nil {
		t.Fatal(err)
	}
	recvEventsUntil(t, s, "progress")
	first := w.countdown.next(t)
	_, err = w.client.TaskResume(ctx, &nektev1.TaskResumeRequest{TaskId: "t-4"})
	wantNekteStatus(t, err, codes.FailedPrecondition, schemas.CodeTaskNotResumable, "")
	// nekte.task.suspend is the gateway's own method, with no RPC of the reference binding:
	// suspend over JSON-RPC as the same (anonymous) caller.
	if _, _, body := w.ts.post(`{"jsonrpc":"2.0","method":"nekte.task.suspend","params":{"task_id":"t-4"},"id":1}`); !strings.Contains(body, `"suspended"`) {
		t.Fatalf("suspend: %s", body)
	}
	select {
	case <-first.ended: // suspending stops the backend call
	case <-time.After(nekteWaitLimit):
		t.Fatal("suspending did not stop the countdown")
	}
	evs := recvEventsUntil(t, s, "suspended")
	prototest.Check(t, evs[len(evs)-1], `{"suspended":{"task_id":"t-4","checkpoint_available":true}}`)
	lc, err := w.client.TaskResume(ctx, &nektev1.TaskResumeRequest{TaskId: "t-4", Budget: &nektev1.TokenBudget{MaxTokens: 50, DetailLevel: "minimal"}})
	if err != nil {
		t.Fatal(err)
	}
	prototest.Check(t, lc, `{"task_id":"t-4","status":"running","previous_status":"suspended"}`)
	evs = recvEventsUntil(t, s, "resumed")
	prototest.Check(t, evs[len(evs)-1], `{"resumed":{"task_id":"t-4","from_checkpoint":true}}`)
	close(w.countdown.next(t).release)
	evs = recvEventsUntil(t, s, "complete")
	wantStreamEnd(t, s)
	if c := evs[len(evs)-1].GetComplete(); c.GetTaskId() != "t-4" || c.GetOutput().GetMinimal() == "" {
		t.Errorf("complete after resume: %v", c)
	}
}

// TestNekteThroughGatewayService: what the binding has no RPC for — a task naming its
// capability and input, re-attaching to a task's events — goes through
// gatehouse.v1.GatewayService/InvokeStream, each message an {"event", "data"} object.
func TestNekteThroughGatewayService(t *testing.T) {
	w := startNekte(t)
	ctx := nekteContext(t)
	gw := gatehousev1.NewGatewayServiceClient(dialNekte(t, w.ts))
	collect := func(method, params string) []string {
		t.Helper()
		s, err := gw.InvokeStream(ctx, &gatehousev1.InvokeStreamRequest{Method: method, Params: []byte(params)})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			m, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return got
			}
			if err != nil {
				t.Fatalf("%s after %v: %v", method, got, err)
			}
			var ev struct {
				Event string `json:"event"`
			}
			if err := json.Unmarshal(m.GetMessage(), &ev); err != nil || ev.Event == "" {
				t.Fatalf("message %s", m.GetMessage())
			}
			got = append(got, ev.Event)
		}
	}
	delegated := collect("nekte.delegate", `{"task":{"id":"t-gw","desc":"","cap":"sum","in":[1,2,3]}}`)
	if last := delegated[len(delegated)-1]; last != "complete" {
		t.Fatalf("delegate events %v", delegated)
	}
	if again := collect("nekte.task.stream", `{"task_id":"t-gw"}`); strings.Join(again, " ") != strings.Join(delegated, " ") {
		t.Fatalf("re-attached: %v, want %v", again, delegated)
	}
	st, err := w.client.TaskStatus(ctx, &nektev1.TaskStatusRequest{TaskId: "t-gw"})
	if err != nil || st.GetStatus() != "completed" {
		t.Fatalf("status: %v %v", st, err)
	}
}

func TestNekteGRPCContext(t *testing.T) {
	w := startNekte(t)
	ctx := nekteContext(t)
	steps := []struct {
		name string
		req  *nektev1.ContextRequest
		want string
	}{
		{"share", &nektev1.ContextRequest{Action: "share", Envelope: &nektev1.ContextEnvelope{Id: "notes", Data: []byte(`{"topic":"budgets"}`),
			Compression: "none", Permissions: &nektev1.ContextPermissions{Forward: true, Persist: true}, TtlS: 600, BudgetHint: 12}},
			`{"id":"notes","status":"stored","envelope":{"id":"notes","ttl_s":600}}`},
		{"request", &nektev1.ContextRequest{Action: "request", Envelope: &nektev1.ContextEnvelope{Id: "notes"}},
			`{"id":"notes","envelope":{"id":"notes","data":{"topic":"budgets"},"compression":"none",
			 "permissions":{"forward":true,"persist":true},"ttl_s":600,"budget_hint":12}}`},
		{"revoke", &nektev1.ContextRequest{Action: "revoke", Envelope: &nektev1.ContextEnvelope{Id: "notes"}},
			`{"id":"notes","status":"revoked"}`},
		{"request after revoke", &nektev1.ContextRequest{Action: "request", Envelope: &nektev1.ContextEnvelope{Id: "notes"}},
			`{"id":"notes","status":"not_found"}`},
		{"revoke again", &nektev1.ContextRequest{Action: "revoke", Envelope: &nektev1.ContextEnvelope{Id: "notes"}},
			`{"id":"notes","status":"not_found"}`},
	}
	for _, st := range steps {
		resp, err := w.client.Context(ctx, st.req)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		t.Run(st.name, func(t *testing.T) { prototest.Check(t, resp, st.want) })
	}
	// A delegate may refer to a shared envelope by id: once revoked, it is gone.
	err := firstDelegateError(ctx, w.client, &nektev1.DelegateRequest{Task: &nektev1.Task{Id: "t-ctx", Desc: "countdown"},
		Context: &nektev1.ContextEnvelope{Id: "notes"}})
	wantNekteStatus(t, err, codes.NotFound, schemas.CodeContextExpired, "")
}

// TestNekteGRPCDisabled: without a target serving nekte.*, every RPC answers
// UNIMPLEMENTED saying so.
func TestNekteGRPCDisabled(t *testing.T) {
	ts := start(t, nekteGRPCConfig, nil)
	c := nektev1.NewNekteClient(dialNekte(t, ts))
	ctx := nekteContext(t)
	calls := map[string]func() error{
		"Discover": func() error { _, err := c.Discover(ctx, &nektev1.DiscoverRequest{}); return err },
		"Invoke":   func() error { _, err := c.Invoke(ctx, &nektev1.InvokeRequest{Cap: "sum"}); return err },
		"Delegate": func() error {
			return firstDelegateError(ctx, c, &nektev1.DelegateRequest{Task: &nektev1.Task{Id: "t"}})
		},
		"Context":    func() error { _, err := c.Context(ctx, &nektev1.ContextRequest{Action: "request"}); return err },
		"Verify":     func() error { _, err := c.Verify(ctx, &nektev1.VerifyRequest{TaskId: "t"}); return err },
		"TaskCancel": func() error { _, err := c.TaskCancel(ctx, &nektev1.TaskCancelRequest{TaskId: "t"}); return err },
		"TaskResume": func() error { _, err := c.TaskResume(ctx, &nektev1.TaskResumeRequest{TaskId: "t"}); return err },
		"TaskStatus": func() error { _, err := c.TaskStatus(ctx, &nektev1.TaskStatusRequest{TaskId: "t"}); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call()
			wantNekteStatus(t, err, codes.Unimplemented, schemas.CodeMethodNotFound, "")
			if !strings.Contains(status.Convert(err).Message(), "NEKTE is not enabled") {
				t.Errorf("message %q", status.Convert(err).Message())
			}
		})
	}
}

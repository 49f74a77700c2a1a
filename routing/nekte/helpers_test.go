package nekte_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/codecs/sse"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	rn "github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// waitLimit bounds every wait in these tests.
const waitLimit = 10 * time.Second

// clock is a settable clock: frozen at its time until advanced.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 15, 10, 30, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// behaviour is what a fake capability does when invoked.
type behaviour func(ctx context.Context, input json.RawMessage) (*gateway.Result, error)

// fakeCatalog is a Catalog over a fixed set of capabilities. Match returns the
// capability whose id occurs in the query.
type fakeCatalog struct {
	mu       sync.Mutex
	caps     map[string]capability.Capability
	observed []observation
}

// observation is one Observe call.
type observation struct {
	id     string
	d      time.Duration
	tokens int
}

func (f *fakeCatalog) Observe(id string, d time.Duration, tokens int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observed = append(f.observed, observation{id, d, tokens})
}

func (f *fakeCatalog) observations() []observation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.observed)
}

func (f *fakeCatalog) add(c capability.Capability) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.caps == nil {
		f.caps = map[string]capability.Capability{}
	}
	f.caps[c.ID] = c
}

func (f *fakeCatalog) Lookup(id string) (capability.Capability, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.caps[id]
	return c, ok
}

func (f *fakeCatalog) Match(query string) (capability.Capability, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, c := range f.caps {
		if strings.Contains(query, id) {
			return c, true
		}
	}
	return capability.Capability{}, false
}

func (f *fakeCatalog) DiscoverWith(p nekte.DiscoverParams, o capability.DiscoverOptions) (json.RawMessage, error) {
	return json.RawMessage(fmt.Sprintf(`{"agent":"fake","caps":[],"level":%d,"shape":%q}`, p.Level, o.Shape)), nil
}

func (f *fakeCatalog) Invoke(_ context.Context, _ capability.Invoker, p nekte.InvokeParams) (*nekte.InvokeResult, error) {
	if _, ok := f.Lookup(p.Cap); !ok {
		return nil, gateway.NewError(schemas.CodeCapabilityNotFound)
	}
	return &nekte.InvokeResult{Out: json.RawMessage(`"ok"`), ResolvedLevel: nekte.Minimal}, nil
}

// fakeInvoker runs each capability's behaviour, counting calls.
type fakeInvoker struct {
	mu    sync.Mutex
	fns   map[string]behaviour
	calls map[string]int
}

func (f *fakeInvoker) set(id string, b behaviour) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fns == nil {
		f.fns = map[string]behaviour{}
	}
	f.fns[id] = b
}

func (f *fakeInvoker) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}

func (f *fakeInvoker) Invoke(ctx context.Context, c capability.Capability, input json.RawMessage) (*gateway.Result, error) {
	f.mu.Lock()
	b := f.fns[c.ID]
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[c.ID]++
	f.mu.Unlock()
	if b == nil {
		return nil, gateway.NewError(schemas.CodeCapabilityNotFound)
	}
	return b(ctx, input)
}

// returns is a behaviour answering value at once.
func returns(value string) behaviour {
	return func(context.Context, json.RawMessage) (*gateway.Result, error) {
		return gateway.NewResult([]byte(value)), nil
	}
}

// blocker is a behaviour that reports progress 1/3, then waits until released (and
// answers value) or until its context ends (which it records).
type blocker struct {
	value    string
	started  chan json.RawMessage
	release  chan struct{}
	stopped  chan error
	progress bool
}

func newBlocker(value string) *blocker {
	return &blocker{
		value: value, started: make(chan json.RawMessage, 8), release: make(chan struct{}),
		stopped: make(chan error, 8), progress: true,
	}
}

func (b *blocker) run(ctx context.Context, input json.RawMessage) (*gateway.Result, error) {
	if p := gateway.ProgressFrom(ctx); p != nil && b.progress {
		total := 3.0
		p(gateway.Progress{Progress: 1, Total: &total, Message: "step 1"})
	}
	b.started <- input
	select {
	case <-b.release:
		return gateway.NewResult([]byte(b.value)), nil
	case <-ctx.Done():
		b.stopped <- context.Cause(ctx)
		return nil, ctx.Err()
	}
}

// env is a test's world: a shared store, a catalog, an invoker, a clock.
type env struct {
	t       *testing.T
	kv      state.KV
	catalog *fakeCatalog
	invoker *fakeInvoker
	clock   *clock
}

func newEnv(t *testing.T) *env {
	t.Helper()
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = kv.Close() })
	e := &env{t: t, kv: kv, catalog: &fakeCatalog{}, invoker: &fakeInvoker{}, clock: newClock()}
	e.capability("echo", returns(`{"text":"hi"}`), func(c *capability.Capability) { c.Deterministic = true })
	return e
}

// capability adds a builtin capability with a behaviour.
func (e *env) capability(id string, b behaviour, opts ...func(*capability.Capability)) {
	c := capability.Capability{
		ID: id, Category: "test", Description: "test capability " + id, Kind: capability.KindBuiltin,
		Method: "test." + id, Source: "fake", Hash: "h-" + id,
		Input: json.RawMessage(`{"type":"object"}`), Output: json.RawMessage(`{}`),
	}
	for _, o := range opts {
		o(&c)
	}
	e.catalog.add(c)
	e.invoker.set(id, b)
}

// fastTasks is a configuration for tests: quick polling and draining.
func fastTasks() rn.Config {
	return rn.Config{Tasks: rn.TasksConfig{PollInterval: 20 * time.Millisecond, DrainTimeout: 3 * time.Second}}
}

// service starts a Service on the env; it is closed at cleanup.
func (e *env) service(cfg rn.Config) *rn.Service {
	e.t.Helper()
	s, err := rn.New(cfg, rn.Options{KV: e.kv, Catalog: e.catalog, Invoker: e.invoker, Now: e.clock.Now})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = s.Close() })
	return s
}

// call invokes method with params as subject.
func call(t *testing.T, s *rn.Service, subject, method, params string) (*gateway.Result, error) {
	t.Helper()
	return callAs(t, s, gateway.Principal{Subject: subject}, method, params)
}

// callAs invokes method with params as p.
func callAs(t *testing.T, s *rn.Service, p gateway.Principal, method, params string) (*gateway.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	return s.Invoke(ctx, &gateway.Call{Method: method, Params: []byte(params), Principal: p})
}

// mustCall is call that fails the test on error and returns the result's JSON value.
func mustCall(t *testing.T, s *rn.Service, subject, method, params string) string {
	t.Helper()
	res, err := call(t, s, subject, method, params)
	if err != nil {
		t.Fatalf("%s %s: %v", method, params, err)
	}
	if res.Stream != nil {
		t.Fatalf("%s: got a stream, want a value", method)
	}
	return string(res.Value)
}

// codeOf returns the JSON-RPC code of err (0 for nil).
func codeOf(err error) schemas.Code {
	if err == nil {
		return 0
	}
	if ge, ok := errors.AsType[*gateway.Error](err); ok {
		return ge.Code()
	}
	return -1
}

// wantCode fails the test unless err has code.
func wantCode(t *testing.T, err error, code schemas.Code) *gateway.Error {
	t.Helper()
	if got := codeOf(err); got != code {
		t.Fatalf("error %v: code %d, want %d", err, got, code)
	}
	var ge *gateway.Error
	errors.As(err, &ge)
	return ge
}

// event is one message of a task stream.
type event struct {
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// stream wraps a task stream result for reading.
type stream struct {
	t *testing.T
	s gateway.Stream
}

// openStream returns a function taking a call's outcome (a task stream) to a stream to
// read, closed at cleanup: openStream(t)(call(...)).
func openStream(t *testing.T) func(*gateway.Result, error) *stream {
	t.Helper()
	return func(res *gateway.Result, err error) *stream {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if res.Stream == nil || !res.Events {
			t.Fatalf("result %+v is not an event stream", res)
		}
		t.Cleanup(func() { _ = res.Stream.Close() })
		return &stream{t: t, s: res.Stream}
	}
}

// next returns the next event, failing the test at the end of the stream.
func (st *stream) next() event {
	st.t.Helper()
	ev, ok := st.recv()
	if !ok {
		st.t.Fatal("the stream ended early")
	}
	return ev
}

func (st *stream) recv() (event, bool) {
	st.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	msg, err := st.s.Recv(ctx)
	if errors.Is(err, io.EOF) {
		return event{}, false
	}
	if err != nil {
		st.t.Fatalf("Recv: %v", err)
	}
	var ev event
	if err := json.Unmarshal(msg, &ev); err != nil {
		st.t.Fatalf("message %s: %v", msg, err)
	}
	return ev, true
}

// until reads events up to and including the first named name.
func (st *stream) until(name string) []event {
	st.t.Helper()
	var out []event
	for {
		ev := st.next()
		out = append(out, ev)
		if ev.Event == name {
			return out
		}
	}
}

// rest reads every remaining event and checks the stream then ends.
func (st *stream) rest() []event {
	st.t.Helper()
	var out []event
	for {
		ev, ok := st.recv()
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

// frames writes events as the HTTP face does: one SSE frame each.
func frames(evs []event) string {
	var b []byte
	for _, ev := range evs {
		b = sse.AppendEvent(b, ev.Event, ev.Data)
	}
	return string(b)
}

// wire writes wire events with codecs/nekte's AppendEvent.
func wire(t *testing.T, evs ...nekte.Event) string {
	t.Helper()
	var b []byte
	for _, ev := range evs {
		var err error
		if b, err = nekte.AppendEvent(b, ev); err != nil {
			t.Fatal(err)
		}
	}
	return string(b)
}

func names(evs []event) string {
	n := make([]string, len(evs))
	for i, ev := range evs {
		n[i] = ev.Event
	}
	return strings.Join(n, ",")
}

// status returns the status of a task.
func status(t *testing.T, s *rn.Service, subject, id string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(mustCall(t, s, subject, nekte.MethodTaskStatus, `{"task_id":"`+id+`"}`)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// waitStatus waits until the task has status want.
func waitStatus(t *testing.T, s *rn.Service, subject, id string, want nekte.TaskStatus) map[string]any {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		m := status(t, s, subject, id)
		if m["status"] == string(want) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %v, want %s", id, m["status"], want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitFor waits for a value on ch.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

func delegate(id, capID, in string) string {
	return `{"task":{"id":"` + id + `","desc":"test","timeout_ms":30000,"cap":"` + capID + `","in":` + in + `}}`
}

// The capability registry is the Catalog the server gives the Service.
var _ rn.Catalog = (*capability.Registry)(nil)

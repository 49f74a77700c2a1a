package nekte_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	rn "github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// serviceWith starts a Service on the env's store and catalog with its own invoker, as
// another replica would be.
func (e *env) serviceWith(cfg rn.Config, inv *fakeInvoker) *rn.Service {
	e.t.Helper()
	s, err := rn.New(cfg, rn.Options{KV: e.kv, Catalog: e.catalog, Invoker: inv, Now: e.clock.Now})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestCancelMidway(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{}`)
	e.capability("wait", b.run)
	s := e.service(fastTasks())
	st := openStream(t)(call(t, s, "alice", nekte.MethodDelegate, delegate("t-1", "wait", `{}`)))
	st.until(nekte.EventProgress)

	got := mustCall(t, s, "alice", nekte.MethodTaskCancel, `{"task_id":"t-1","reason":"user requested"}`)
	if want := `{"task_id":"t-1","status":"cancelled","previous_status":"running"}`; got != want {
		t.Fatalf("cancel %s, want %s", got, want)
	}
	cause := waitFor(t, b.stopped, "the backend call to be cancelled")
	if cause == nil || !strings.Contains(cause.Error(), "cancelled") {
		t.Fatalf("backend context ended with cause %v", cause)
	}
	want := wire(t,
		nekte.StatusChangeEvent{TaskID: "t-1", From: nekte.TaskRunning, To: nekte.TaskCancelled, Reason: "user requested"},
		nekte.CancelledEvent{TaskID: "t-1", Reason: "user requested", PreviousStatus: nekte.TaskRunning},
	)
	if got := frames(st.rest()); got != want {
		t.Fatalf("stream ends\n%s\nwant\n%s", got, want)
	}
	tests := []struct {
		method, message string
		code            schemas.Code
	}{
		{nekte.MethodTaskCancel, "Task not cancellable: t-1 (status cancelled)", schemas.CodeTaskNotCancellable},
		{nekte.MethodTaskResume, "Task not resumable: t-1 (status cancelled)", schemas.CodeTaskNotResumable},
		{rn.MethodTaskSuspend, "Task not suspendable: t-1 (status cancelled); only a running task can be suspended", schemas.CodeTaskNotResumable},
	}
	for _, tt := range tests {
		_, err := call(t, s, "alice", tt.method, `{"task_id":"t-1"}`)
		if ge := wantCode(t, err, tt.code); ge.Message() != tt.message {
			t.Fatalf("%s: message %q, want %q", tt.method, ge.Message(), tt.message)
		}
	}
}

func TestLifecycleErrors(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{}`)
	e.capability("wait", b.run)
	s := e.service(fastTasks())
	mustDelegate(t, s, "alice", delegate("done", "echo", `{}`))
	openStream(t)(call(t, s, "alice", nekte.MethodDelegate, delegate("busy", "wait", `{}`)))
	waitFor(t, b.started, "the task to start")
	tests := []struct {
		method, id string
		code       schemas.Code
		message    string
	}{
		{nekte.MethodTaskResume, "busy", schemas.CodeTaskNotResumable, "Task not resumable: busy (status running)"},
		{nekte.MethodTaskResume, "done", schemas.CodeTaskNotResumable, "Task not resumable: done (status completed)"},
		{nekte.MethodTaskCancel, "done", schemas.CodeTaskNotCancellable, "Task not cancellable: done (status completed)"},
		{rn.MethodTaskSuspend, "done", schemas.CodeTaskNotResumable, "Task not suspendable: done (status completed); only a running task can be suspended"},
		{nekte.MethodTaskResume, "nope", schemas.CodeTaskNotFound, "Task not found: nope"},
		{nekte.MethodTaskCancel, "nope", schemas.CodeTaskNotFound, "Task not found: nope"},
		{nekte.MethodTaskStatus, "nope", schemas.CodeTaskNotFound, "Task not found: nope"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.id, func(t *testing.T) {
			_, err := call(t, s, "alice", tt.method, `{"task_id":"`+tt.id+`"}`)
			if ge := wantCode(t, err, tt.code); ge.Message() != tt.message {
				t.Fatalf("message %q, want %q", ge.Message(), tt.message)
			}
		})
	}
	close(b.release)
}

// resumer answers with what a resumed run was given: its input and its checkpoint.
func resumer(ctx context.Context, in json.RawMessage) (*gateway.Result, error) {
	cp, ok := rn.CheckpointFrom(ctx)
	out, _ := json.Marshal(map[string]any{"in": in, "checkpoint": ok, "processed": cp.Progress.Processed, "cp_input": cp.Input})
	return gateway.NewResult(out), nil
}

func TestSuspendThenResumeOnAnotherService(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{}`)
	e.capability("job", b.run)
	a := e.service(fastTasks())
	invB := &fakeInvoker{}
	invB.set("job", resumer)
	other := e.serviceWith(fastTasks(), invB)

	st := openStream(t)(call(t, a, "alice", nekte.MethodDelegate, delegate("t-1", "job", `{"job": 7}`)))
	st.until(nekte.EventProgress)
	got := mustCall(t, a, "alice", rn.MethodTaskSuspend, `{"task_id":"t-1"}`)
	if want := `{"task_id":"t-1","status":"suspended","previous_status":"running"}`; got != want {
		t.Fatalf("suspend %s, want %s", got, want)
	}
	waitFor(t, b.stopped, "the backend call to be cancelled")
	m := status(t, other, "alice", "t-1")
	if m["status"] != "suspended" || m["checkpoint_available"] != true {
		t.Fatalf("status on the other service %v", m)
	}
	got = mustCall(t, other, "alice", nekte.MethodTaskResume, `{"task_id":"t-1"}`)
	if want := `{"task_id":"t-1","status":"running","previous_status":"suspended"}`; got != want {
		t.Fatalf("resume %s, want %s", got, want)
	}
	// The first caller's stream follows the task to its end on the other service.
	rest := st.rest()
	if names(rest) != "status_change,suspended,status_change,resumed,status_change,complete" {
		t.Fatalf("events after progress: %s", names(rest))
	}
	want := wire(t,
		nekte.SuspendedEvent{TaskID: "t-1", CheckpointAvailable: true},
		nekte.StatusChangeEvent{TaskID: "t-1", From: nekte.TaskSuspended, To: nekte.TaskRunning, Reason: "resumed"},
		nekte.ResumedEvent{TaskID: "t-1", FromCheckpoint: true},
	)
	if got := frames(rest[1:4]); got != want {
		t.Fatalf("suspend and resume\n%s\nwant\n%s", got, want)
	}
	var out struct {
		Out struct {
			Compact struct {
				In         json.RawMessage `json:"in"`
				Checkpoint bool            `json:"checkpoint"`
				Processed  int             `json:"processed"`
				CPInput    json.RawMessage `json:"cp_input"`
			} `json:"compact"`
		} `json:"out"`
	}
	if err := json.Unmarshal(rest[len(rest)-1].Data, &out); err != nil {
		t.Fatal(err)
	}
	if c := out.Out.Compact; string(c.In) != `{"job":7}` || !c.Checkpoint || c.Processed != 1 || string(c.CPInput) != `{"job":7}` {
		t.Fatalf("the resumed run got %+v", c)
	}
	if n := invB.count("job"); n != 1 {
		t.Fatalf("the other service ran the capability %d times, want 1", n)
	}
}

func TestSuspendAllAndClose(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{}`)
	e.capability("job", b.run)
	a, err := rn.New(fastTasks(), rn.Options{KV: e.kv, Catalog: e.catalog, Invoker: e.invoker, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	invB := &fakeInvoker{}
	invB.set("job", resumer)
	other := e.serviceWith(fastTasks(), invB)

	st := openStream(t)(call(t, a, "alice", nekte.MethodDelegate, delegate("t-1", "job", `{}`)))
	openStream(t)(call(t, a, "alice", nekte.MethodDelegate, delegate("t-2", "job", `{}`)))
	waitFor(t, b.started, "t-1 to start")
	waitFor(t, b.started, "t-2 to start")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := a.SuspendAll(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t-1", "t-2"} {
		if m := status(t, other, "alice", id); m["status"] != "suspended" {
			t.Fatalf("%s after SuspendAll: %v", id, m)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got := names(st.rest()); !strings.HasSuffix(got, "status_change,suspended") {
		t.Fatalf("stream at shutdown: %s", got)
	}
	_, err = call(t, a, "alice", nekte.MethodDelegate, delegate("t-3", "job", `{}`))
	wantCode(t, err, schemas.CodeShuttingDown)
	mustCall(t, other, "alice", nekte.MethodTaskResume, `{"task_id":"t-1"}`)
	waitStatus(t, other, "alice", "t-1", nekte.TaskCompleted)
}

func TestCloseSuspendsRunningTasks(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{}`)
	e.capability("job", b.run)
	a, err := rn.New(fastTasks(), rn.Options{KV: e.kv, Catalog: e.catalog, Invoker: e.invoker, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	openStream(t)(call(t, a, "alice", nekte.MethodDelegate, delegate("t-1", "job", `{}`)))
	waitFor(t, b.started, "the task to start")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	other := e.service(fastTasks())
	if m := status(t, other, "alice", "t-1"); m["status"] != "suspended" || m["checkpoint_available"] != true {
		t.Fatalf("status after Close: %v", m)
	}
}

func TestCancelFromAnotherService(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{}`)
	e.capability("job", b.run)
	a := e.service(fastTasks())
	other := e.serviceWith(fastTasks(), &fakeInvoker{})
	st := openStream(t)(call(t, a, "alice", nekte.MethodDelegate, delegate("t-1", "job", `{}`)))
	st.until(nekte.EventProgress)
	mustCall(t, other, "alice", nekte.MethodTaskCancel, `{"task_id":"t-1","reason":"elsewhere"}`)
	waitFor(t, b.stopped, "the run on the first service to be cancelled")
	want := wire(t,
		nekte.StatusChangeEvent{TaskID: "t-1", From: nekte.TaskRunning, To: nekte.TaskCancelled, Reason: "elsewhere"},
		nekte.CancelledEvent{TaskID: "t-1", Reason: "elsewhere", PreviousStatus: nekte.TaskRunning},
	)
	if got := frames(st.rest()); got != want {
		t.Fatalf("stream ends\n%s\nwant\n%s", got, want)
	}
}

func TestConcurrentCancelsOneWins(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{}`)
	e.capability("job", b.run)
	services := []*rn.Service{e.service(fastTasks()), e.serviceWith(fastTasks(), &fakeInvoker{})}
	openStream(t)(call(t, services[0], "alice", nekte.MethodDelegate, delegate("t-1", "job", `{}`)))
	waitFor(t, b.started, "the task to start")
	errs := make(chan error, 2)
	for _, s := range services {
		go func() {
			_, err := s.Invoke(context.Background(), &gateway.Call{
				Method: nekte.MethodTaskCancel, Params: []byte(`{"task_id":"t-1"}`), Principal: gateway.Principal{Subject: "alice"},
			})
			errs <- err
		}()
	}
	first, second := waitFor(t, errs, "a cancel"), waitFor(t, errs, "a cancel")
	if (first == nil) == (second == nil) {
		t.Fatalf("cancels returned %v and %v, want exactly one to succeed", first, second)
	}
	if first == nil {
		first = second
	}
	wantCode(t, first, schemas.CodeTaskNotCancellable)
}

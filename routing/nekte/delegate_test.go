package nekte_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	rn "github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// steps reports progress 1/2 and 2/2, then answers {"text":"hi"}.
func steps(ctx context.Context, _ json.RawMessage) (*gateway.Result, error) {
	p := gateway.ProgressFrom(ctx)
	total := 2.0
	p(gateway.Progress{Progress: 1, Total: &total, Message: "step 1"})
	p(gateway.Progress{Progress: 2, Total: &total, Message: "step 2"})
	return gateway.NewResult([]byte(`{"text": "hi"}`)), nil
}

func TestDelegateHappyPathFrames(t *testing.T) {
	e := newEnv(t)
	e.capability("steps", steps)
	s := e.service(fastTasks())
	st := openStream(t)(call(t, s, "alice", nekte.MethodDelegate, delegate("t-1", "steps", `{"n":1}`)))
	got := frames(st.rest())

	out := nekte.Levels{Minimal: "text: hi", Compact: json.RawMessage(`{"text":"hi"}`)}
	tokens := nekte.Tokens([]byte(`{"minimal":"text: hi","compact":{"text":"hi"}}`))
	want := wire(t,
		nekte.StatusChangeEvent{TaskID: "t-1", From: nekte.TaskPending, To: nekte.TaskAccepted},
		nekte.StatusChangeEvent{TaskID: "t-1", From: nekte.TaskAccepted, To: nekte.TaskRunning},
		nekte.ProgressEvent{Processed: 1, Total: 2, Message: "step 1"},
		nekte.ProgressEvent{Processed: 2, Total: 2, Message: "step 2"},
		nekte.StatusChangeEvent{TaskID: "t-1", From: nekte.TaskRunning, To: nekte.TaskCompleted},
		nekte.CompleteEvent{TaskID: "t-1", Out: out, Meta: &nekte.Meta{TokensUsed: tokens}},
	)
	if got != want {
		t.Fatalf("stream\n%s\nwant\n%s", got, want)
	}
	created := e.clock.Now().UnixMilli()
	m := status(t, s, "alice", "t-1")
	if m["status"] != "completed" || m["checkpoint_available"] != false ||
		m["created_at"] != float64(created) || m["updated_at"] != float64(created) {
		t.Fatalf("status %v", m)
	}
	if p := m["progress"].(map[string]any); p["processed"] != 2.0 || p["total"] != 2.0 {
		t.Fatalf("progress %v", p)
	}
	// The completed task feeds the capability's cost hint, as nekte.invoke does (the runner
	// observes it right after recording the completion, so it may trail the stream's end).
	var seen []observation
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if seen = e.catalog.observations(); len(seen) > 0 {
			break
		}
	}
	if len(seen) != 1 || seen[0].id != "steps" || seen[0].tokens != tokens {
		t.Fatalf("observed %+v; want one observation of steps with %d tokens", seen, tokens)
	}
}

// sliceStream is a streamed result of fixed messages.
type sliceStream struct {
	mu     sync.Mutex
	msgs   []string
	closed bool
}

func (s *sliceStream) Recv(context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.msgs) == 0 || s.closed {
		return nil, io.EOF
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return []byte(m), nil
}

func (s *sliceStream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

func TestDelegateStreamingPartials(t *testing.T) {
	e := newEnv(t)
	e.capability("feed", func(context.Context, json.RawMessage) (*gateway.Result, error) {
		return &gateway.Result{Stream: &sliceStream{msgs: []string{`{"n":1}`, `{"n":2}`}}}, nil
	}, func(c *capability.Capability) { c.Kind, c.Streaming = capability.KindGRPCMethod, true })
	s := e.service(fastTasks())
	st := openStream(t)(call(t, s, "alice", nekte.MethodDelegate, delegate("t-1", "feed", `{}`)))
	got := frames(st.rest())
	out := nekte.Levels{Minimal: "2 items: {1 member}, {1 member}", Compact: json.RawMessage(`[{"n":1},{"n":2}]`)}
	want := wire(t,
		nekte.StatusChangeEvent{TaskID: "t-1", From: nekte.TaskPending, To: nekte.TaskAccepted},
		nekte.StatusChangeEvent{TaskID: "t-1", From: nekte.TaskAccepted, To: nekte.TaskRunning},
		nekte.PartialEvent{Out: json.RawMessage(`{"n":1}`), ResolvedLevel: nekte.Compact},
		nekte.PartialEvent{Out: json.RawMessage(`{"n":2}`), ResolvedLevel: nekte.Compact},
		nekte.StatusChangeEvent{TaskID: "t-1", From: nekte.TaskRunning, To: nekte.TaskCompleted},
		nekte.CompleteEvent{TaskID: "t-1", Out: out, Meta: &nekte.Meta{TokensUsed: nekte.Tokens(mustJSON(t, out))}},
	)
	if got != want {
		t.Fatalf("stream\n%s\nwant\n%s", got, want)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDelegateFailures(t *testing.T) {
	e := newEnv(t)
	e.capability("boom", func(context.Context, json.RawMessage) (*gateway.Result, error) {
		return nil, gateway.Errorf(schemas.CodeToolFailed, "boom")
	})
	e.capability("toolerr", returns(`{"content":[{"type":"text","text":"bad input"}],"isError":true}`),
		func(c *capability.Capability) { c.Kind = capability.KindMCPTool })
	e.capability("notjson", returns(`{"a":`))
	s := e.service(fastTasks())
	tests := []struct {
		id, capID, message string
	}{
		{"t-boom", "boom", "Task failed: t-boom: boom"},
		{"t-toolerr", "toolerr", "Task failed: t-toolerr: error: bad input"},
		{"t-notjson", "notjson", "Task failed: t-notjson: The capability's result could not be read"},
	}
	for _, tt := range tests {
		t.Run(tt.capID, func(t *testing.T) {
			st := openStream(t)(call(t, s, "alice", nekte.MethodDelegate, delegate(tt.id, tt.capID, `{}`)))
			evs := st.rest()
			want := wire(t,
				nekte.StatusChangeEvent{TaskID: tt.id, From: nekte.TaskRunning, To: nekte.TaskFailed, Reason: tt.message},
				nekte.ErrorEvent{TaskID: tt.id, Code: schemas.CodeTaskFailed, Message: tt.message},
			)
			if got := frames(evs[len(evs)-2:]); got != want {
				t.Fatalf("stream ends\n%s\nwant\n%s", got, want)
			}
			m := status(t, s, "alice", tt.id)
			if m["status"] != "failed" || m["error"].(map[string]any)["code"] != float64(schemas.CodeTaskFailed) {
				t.Fatalf("status %v", m)
			}
		})
	}
}

func TestDelegateRefused(t *testing.T) {
	e := newEnv(t)
	s := e.service(fastTasks())
	mustDelegate(t, s, "alice", delegate("dup", "echo", `{}`))
	tests := []struct {
		name, params string
		code         schemas.Code
		message      string
		field        string
	}{
		{"unknown capability", delegate("t-1", "nope", `{}`), schemas.CodeCapabilityNotFound, "Capability not found: nope", ""},
		{"no match", `{"task":{"id":"t-2","desc":"summarize the weather","timeout_ms":0}}`, schemas.CodeCapabilityNotFound,
			"No capability matches the task description; name one in task.cap (see nekte.discover)", ""},
		{"no desc, no cap", `{"task":{"id":"t-3","desc":"","timeout_ms":0}}`, schemas.CodeCapabilityNotFound,
			"No capability matches the task description; name one in task.cap (see nekte.discover)", ""},
		{"duplicate id", delegate("dup", "echo", `{}`), schemas.CodeInvalidParams,
			"Task already exists: dup; task ids are unique per caller while the task's record is kept", "task.id"},
		{"missing id", `{"task":{"desc":"x","timeout_ms":0,"cap":"echo"}}`, schemas.CodeInvalidParams, "Invalid params: task.id: is required", "task.id"},
		{"cap spelled in another case", `{"task":{"id":"t-4","desc":"x","timeout_ms":0,"Cap":"echo"}}`, schemas.CodeInvalidParams,
			"Invalid params: task.cap: member name must be spelled with this exact case", "task.cap"},
		{"negative timeout", `{"task":{"id":"t-5","desc":"x","timeout_ms":-1,"cap":"echo"}}`, schemas.CodeInvalidParams,
			"Invalid params: task.timeout_ms: must not be negative", "task.timeout_ms"},
		{"scope entry empty", `{"task":{"id":"t-6","desc":"x","timeout_ms":0,"cap":"echo"},"context":{"data":{},"permissions":{"forward":true,"persist":false,"derive":true},"ttl_s":5,"scope":[""]}}`,
			schemas.CodeInvalidParams, "Invalid params: context.scope[0]: must be a capability id of 1 to 64 characters", "context.scope[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := call(t, s, "alice", nekte.MethodDelegate, tt.params)
			ge := wantCode(t, err, tt.code)
			if ge.Message() != tt.message {
				t.Fatalf("message %q, want %q", ge.Message(), tt.message)
			}
			if f, _ := ge.Data()["field"].(string); f != tt.field {
				t.Fatalf("field %q, want %q", f, tt.field)
			}
		})
	}
}

// mustDelegate delegates a task and reads its stream to the end.
func mustDelegate(t *testing.T, s interface {
	Invoke(context.Context, *gateway.Call) (*gateway.Result, error)
}, subject, params string,
) []event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	res, err := s.Invoke(ctx, &gateway.Call{Method: nekte.MethodDelegate, Params: []byte(params), Principal: gateway.Principal{Subject: subject}})
	return openStream(t)(res, err).rest()
}

func TestDelegateMatchesDescription(t *testing.T) {
	e := newEnv(t)
	var got json.RawMessage
	e.capability("summarize", func(_ context.Context, in json.RawMessage) (*gateway.Result, error) {
		got = in
		return gateway.NewResult([]byte(`"ok"`)), nil
	})
	s := e.service(fastTasks())
	evs := mustDelegate(t, s, "alice", `{"task":{"id":"t-1","desc":"please summarize these reviews","timeout_ms":30000,"budget":{"max_tokens":500,"detail_level":"compact"}}}`)
	if last := evs[len(evs)-1]; last.Event != nekte.EventComplete || string(got) != `{}` {
		t.Fatalf("last event %s %s; input %s, want complete with input {}", last.Event, last.Data, got)
	}
}

func TestDelegateTimeout(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{}`)
	e.capability("wait", b.run)
	s := e.service(fastTasks())
	st := openStream(t)(call(t, s, "alice", nekte.MethodDelegate, `{"task":{"id":"t-1","desc":"x","timeout_ms":100,"cap":"wait"}}`))
	evs := st.rest()
	msg := "Task timed out: t-1 after 100 ms"
	want := wire(t,
		nekte.StatusChangeEvent{TaskID: "t-1", From: nekte.TaskRunning, To: nekte.TaskFailed, Reason: msg},
		nekte.ErrorEvent{TaskID: "t-1", Code: schemas.CodeTaskTimeout, Message: msg},
	)
	if got := frames(evs[len(evs)-2:]); got != want {
		t.Fatalf("stream ends\n%s\nwant\n%s", got, want)
	}
	if cause := waitFor(t, b.stopped, "the backend call to be cancelled"); cause == nil {
		t.Fatal("the backend call ended without a cause")
	}
	if m := status(t, s, "alice", "t-1"); m["error"].(map[string]any)["code"] != float64(schemas.CodeTaskTimeout) {
		t.Fatalf("status %v", m)
	}
}

func TestCallerGoingAwayDoesNotCancel(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{"done":true}`)
	e.capability("wait", b.run)
	s := e.service(fastTasks())
	res, err := call(t, s, "alice", nekte.MethodDelegate, delegate("t-1", "wait", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, b.started, "the task to start")
	if err := res.Stream.Close(); err != nil {
		t.Fatal(err)
	}
	close(b.release)
	waitStatus(t, s, "alice", "t-1", nekte.TaskCompleted)
	select {
	case err := <-b.stopped:
		t.Fatalf("the backend call was cancelled: %v", err)
	default:
	}
}

func TestReattachReplaysThenFollows(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{"done":true}`)
	e.capability("wait", b.run)
	s := e.service(fastTasks())
	first := openStream(t)(call(t, s, "alice", nekte.MethodDelegate, delegate("t-1", "wait", `{}`)))
	before := first.until(nekte.EventProgress)
	_ = first.s.Close()

	again := openStream(t)(call(t, s, "alice", rn.MethodTaskStream, `{"task_id":"t-1"}`))
	replayed := again.until(nekte.EventProgress)
	if frames(replayed) != frames(before) {
		t.Fatalf("replay\n%s\nwant\n%s", frames(replayed), frames(before))
	}
	close(b.release)
	rest := again.rest()
	if names(rest) != "status_change,complete" {
		t.Fatalf("live events after the replay: %s", names(rest))
	}
	late := openStream(t)(call(t, s, "alice", rn.MethodTaskStream, `{"task_id":"t-1"}`)).rest()
	if frames(late) != frames(append(replayed, rest...)) {
		t.Fatalf("late replay\n%s\nwant\n%s", frames(late), frames(append(replayed, rest...)))
	}
}

func TestOwnerIsolation(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{}`)
	e.capability("wait", b.run)
	s := e.service(fastTasks())
	alice := gateway.Principal{Subject: "alice", Claims: map[string]any{"iss": "https://idp-a.example/", "sub": "alice"}}
	openStream(t)(callAs(t, s, alice, nekte.MethodDelegate, delegate("t-1", "wait", `{}`)))
	waitFor(t, b.started, "the task to start")
	others := map[string]gateway.Principal{
		"another subject": {Subject: "bob"},
		// the same subject of another issuer, and an API key of that name: other callers
		"another issuer": {Subject: "alice", Claims: map[string]any{"iss": "https://idp-b.example/", "sub": "alice"}},
		"an API key":     {Subject: "alice"},
	}
	for _, m := range []struct{ method, params string }{
		{nekte.MethodTaskStatus, `{"task_id":"t-1"}`},
		{nekte.MethodTaskCancel, `{"task_id":"t-1"}`},
		{nekte.MethodTaskResume, `{"task_id":"t-1"}`},
		{rn.MethodTaskSuspend, `{"task_id":"t-1"}`},
		{rn.MethodTaskStream, `{"task_id":"t-1"}`},
		{nekte.MethodVerify, `{"task_id":"t-1","checks":["hash"]}`},
	} {
		for who, p := range others {
			t.Run(m.method+"/"+who, func(t *testing.T) {
				_, err := callAs(t, s, p, m.method, m.params)
				if ge := wantCode(t, err, schemas.CodeTaskNotFound); ge.Message() != "Task not found: t-1" {
					t.Fatalf("message %q", ge.Message())
				}
			})
		}
	}
	// bob's own t-1 is another task.
	if evs := mustDelegate(t, s, "bob", delegate("t-1", "echo", `{}`)); evs[len(evs)-1].Event != nekte.EventComplete {
		t.Fatalf("bob's task ended with %s", evs[len(evs)-1].Event)
	}
	res, err := callAs(t, s, alice, nekte.MethodTaskStatus, `{"task_id":"t-1"}`)
	if err != nil || !strings.Contains(string(res.Value), `"status":"running"`) {
		t.Fatalf("alice's task: %v %v", res, err)
	}
	close(b.release)
}

func TestIntrospect(t *testing.T) {
	e := newEnv(t)
	s := e.service(fastTasks())
	tests := []struct{ params, want, notWant string }{
		{`{"topic":"budget"}`, "BUDGET", "TASKS"},
		{`{"topic":"tasks"}`, "nekte.task.stream", "BUDGET"},
		{`{"topic":"errors"}`, "-32011 TASK_NOT_RESUMABLE", "DISCOVERY"},
		{`{"topic":"discovery"}`, "VERSION_MISMATCH", "ERRORS"},
		{`{}`, "ERRORS", ""},
		{`{"topic":"all"}`, "DISCOVERY", ""},
	}
	for _, tt := range tests {
		var r nekte.IntrospectResult
		if err := json.Unmarshal([]byte(mustCall(t, s, "a", nekte.MethodIntrospect, tt.params)), &r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Guide, tt.want) || (tt.notWant != "" && strings.Contains(r.Guide, tt.notWant)) {
			t.Fatalf("%s: guide %q", tt.params, r.Guide)
		}
	}
	_, err := call(t, s, "a", nekte.MethodIntrospect, `{"topic":"other"}`)
	wantCode(t, err, schemas.CodeInvalidParams)
}

func TestDiscoverAndInvokeGoToTheCatalog(t *testing.T) {
	e := newEnv(t)
	s := e.service(fastTasks())
	if got := mustCall(t, s, "a", nekte.MethodDiscover, `{"level":1,"shape":"compact"}`); got != `{"agent":"fake","caps":[],"level":1,"shape":"compact"}` {
		t.Fatalf("discover %s", got)
	}
	if got := mustCall(t, s, "a", nekte.MethodInvoke, `{"cap":"echo","in":{}}`); got != `{"out":"ok","resolved_level":"minimal","meta":{}}` {
		t.Fatalf("invoke %s", got)
	}
	_, err := call(t, s, "a", nekte.MethodDiscover, `{"level":3}`)
	wantCode(t, err, schemas.CodeInvalidParams)
	_, err = call(t, s, "a", nekte.MethodInvoke, `{"cap":"nope","in":{}}`)
	wantCode(t, err, schemas.CodeCapabilityNotFound)
	_, err = call(t, s, "a", "nekte.other", `{}`)
	wantCode(t, err, schemas.CodeMethodNotFound)
}

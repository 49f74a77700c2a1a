package agentlink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/routing/hoptrace"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// Task is one unit of work to dispatch.
type Task struct {
	// Operator is the operator's id.
	Operator string
	// Input is the input as JSON text (absent: {}); it is checked against the operator's
	// input schema before any agent sees it.
	Input json.RawMessage
	// Refs are inputs passed by reference.
	Refs []DataRef
	// JobID scopes the task's id: the caller's job id, or empty for a job of its own.
	JobID string
	// AffinityKey, when set, sends tasks with the same key to the same agent while it is
	// connected and has room.
	AffinityKey string
	// Timeout bounds the task (0: agents.dispatch_timeout); the context's deadline bounds
	// it too.
	Timeout time.Duration
	// CPUMillicores and MemoryBytes are the resources the task is expected to use.
	CPUMillicores uint32
	MemoryBytes   uint64
	// MaxOutputBytes bounds an uploaded output (DataURLs.Upload; 0: the store's limit).
	MaxOutputBytes int64
	// Progress, when set, receives the agent's progress reports; it must not block.
	Progress func(gateway.Progress)
}

// Outcome is a task's successful result.
type Outcome struct {
	TaskID      string             `json:"task_id"`
	JobID       string             `json:"job_id"`
	Agent       string             `json:"agent"`
	Output      json.RawMessage    `json:"output"`
	Refs        []DataRef          `json:"data_refs,omitempty"`
	Diagnostics string             `json:"diagnostics,omitempty"`
	Receipt     *ValidationReceipt `json:"receipt,omitempty"`
}

// ValidationReceipt records a validation of a task's output, as the agent reported it.
type ValidationReceipt struct {
	Validator string `json:"validator,omitempty"`
	Method    string `json:"method,omitempty"`
	Passed    bool   `json:"passed"`
	Signature []byte `json:"signature,omitempty"`
}

// task is one dispatched task while it is outstanding.
type task struct {
	id, job, op string
	agent       *agent
	spec        *operatorSpec
	progress    func(gateway.Progress)
	// timeout is the task's timeout and deadline when it ends (the wait's timer fires then):
	// a result handled later is late, and the task timed out.
	timeout  time.Duration
	deadline time.Time

	done    chan struct{}
	once    sync.Once
	outcome *Outcome
	err     error

	mu    sync.Mutex
	acked bool
}

// finish records the task's outcome; the first call wins, later ones are ignored.
func (t *task) finish(o *Outcome, err error) bool {
	won := false
	t.once.Do(func() {
		t.outcome, t.err, won = o, err, true
		close(t.done)
	})
	return won
}

// Dispatch runs t on an agent offering its operator and returns its outcome. Errors are
// *gateway.Error values: INVALID_PARAMS for an input the operator's schema refuses,
// NO_AGENT when no connected agent offers the operator, OVERLOADED when every one is at
// its concurrency limit, AGENT_TASK_REJECTED, AGENT_TASK_FAILED, AGENT_TASK_TIMEOUT and
// AGENT_GONE for the task's own failures, and the context's error (cancelled, deadline)
// when the caller gives up first (the agent is then sent TaskCancel). Dispatch never
// retries.
func (h *Hub) Dispatch(ctx context.Context, t Task) (*Outcome, error) {
	return h.dispatch(ctx, t, true)
}

// dispatchLocal is Dispatch on this replica's agents only (a task another replica
// forwarded).
func (h *Hub) dispatchLocal(ctx context.Context, t Task) (*Outcome, error) {
	return h.dispatch(ctx, t, false)
}

// dispatch is Dispatch; a task of an operator no local agent offers is forwarded to
// another replica's agents when remote is set and the hub has peers (peer.go).
func (h *Hub) dispatch(ctx context.Context, t Task, remote bool) (*Outcome, error) {
	in := t.Input
	if len(in) == 0 {
		in = json.RawMessage(`{}`)
	}
	a, spec := h.pick(t.Operator, t.AffinityKey)
	switch {
	case spec == nil:
		if pr := h.peering(); remote && pr != nil {
			return h.forward(ctx, pr, t, in)
		}
		return nil, errNoAgent(t.Operator)
	case a == nil:
		if err := spec.inSchema.Check(in, maxInputErrors); err != nil {
			return nil, errInvalidInput(t.Operator, err)
		}
		return nil, errBusy(t.Operator, h.cfg.HeartbeatInterval.Milliseconds())
	}
	defer a.release()
	if err := spec.inSchema.Check(in, maxInputErrors); err != nil {
		return nil, errInvalidInput(t.Operator, err)
	}
	if t.JobID == "" {
		t.JobID = newJobID()
	}
	return h.runTask(ctx, a, spec, t, in)
}

// runTask dispatches t, its input checked, on a (a slot reserved) and waits for its
// outcome. When the call is traced the task is a span under the call's ("agentlink.dispatch":
// operator, agent, task id, outcome); the observer counts its outcome.
func (h *Hub) runTask(ctx context.Context, a *agent, spec *operatorSpec, t Task, in json.RawMessage) (*Outcome, error) {
	id := t.JobID + "/" + strconv.FormatUint(h.seq.Add(1), 10)
	ctx, span := dispatchTracer.Start(ctx, "agentlink.dispatch", attribute.String("gatehouse.agent.operator", t.Operator),
		attribute.String("gatehouse.agent.id", a.id), attribute.String("gatehouse.agent.task_id", id))
	out, err := h.await(ctx, a, spec, t, in, id)
	outcome := outcomeOf(err)
	h.obs.AgentTaskDone(t.Operator, outcome)
	if span != nil {
		span.SetAttributes(attribute.String("gatehouse.agent.outcome", outcome))
		if err != nil {
			span.SetStatus(otelcodes.Error, gateway.AsError(err).Message())
		}
		span.End()
	}
	return out, err
}

// dispatchTracer starts the spans of dispatched and forwarded tasks.
var dispatchTracer = hoptrace.New("github.com/gatehouse-dev/gatehouse/routing/agentlink")

// await is runTask's dispatch and wait, for the task id.
func (h *Hub) await(ctx context.Context, a *agent, spec *operatorSpec, t Task, in json.RawMessage, id string) (*Outcome, error) {
	tk := &task{id: id, job: t.JobID, op: t.Operator, agent: a, spec: spec,
		progress: t.Progress, done: make(chan struct{})}
	timeout := h.timeout(ctx, t.Timeout)
	msg, err := h.dispatchMessage(ctx, tk, t, in, timeout)
	if err != nil {
		return nil, err
	}
	tk.timeout, tk.deadline = timeout, time.Now().Add(timeout)
	if !a.add(tk) {
		return nil, errGone(tk, "the agent disconnected before the task was sent")
	}
	defer a.remove(tk)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case a.out <- msg:
	case <-tk.done:
		return tk.outcome, tk.err
	case <-timer.C:
		return nil, errTimeout(tk, timeout.Milliseconds())
	case <-ctx.Done():
		return nil, ctxError(ctx)
	}
	select {
	case <-tk.done:
		return tk.outcome, tk.err
	case <-timer.C:
		if tk.finish(nil, errTimeout(tk, timeout.Milliseconds())) {
			a.cancel(tk.id, "timeout")
		}
	case <-ctx.Done():
		if tk.finish(nil, ctxError(ctx)) {
			a.cancel(tk.id, "the caller gave up")
		}
	}
	<-tk.done
	return tk.outcome, tk.err
}

// maxInputErrors bounds the failures an input refusal lists.
const maxInputErrors = 8

// timeout is the task's timeout: asked (or the default), and no later than ctx's deadline,
// in whole milliseconds — what the agent is sent (timeout_ms), so that the agent's deadline
// (its receipt plus timeout_ms) is never before the task's here: an agent stopping at its
// deadline then reports after the task timed out, which is a timeout, not a failure.
func (h *Hub) timeout(ctx context.Context, asked time.Duration) time.Duration {
	d := asked
	if d <= 0 {
		d = h.cfg.DispatchTimeout
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := dl.Sub(h.now()); left < d {
			d = left
		}
	}
	return max(d.Truncate(time.Millisecond), time.Millisecond)
}

// dispatchMessage builds the immutable TaskDispatch of tk, with its DataRefs resolved for
// the agent when the hub has DataURLs.
func (h *Hub) dispatchMessage(ctx context.Context, tk *task, t Task, in json.RawMessage, timeout time.Duration) (*agentlinkv1.ConnectResponse, error) {
	d := &agentlinkv1.TaskDispatch{TaskId: tk.id, JobId: tk.job, Operator: tk.op, InputJson: in,
		TimeoutMs: u32(timeout.Milliseconds()),
		Expected:  &agentlinkv1.Resources{CpuMillicores: t.CPUMillicores, MemoryBytes: t.MemoryBytes}}
	if scoped, ok := h.urls.(ScopedDataURLs); ok && tk.agent.trusted {
		if err := scopedRefs(ctx, scoped, d, tk, t, timeout); err != nil {
			return nil, err
		}
		return &agentlinkv1.ConnectResponse{Message: &agentlinkv1.ConnectResponse_Dispatch{Dispatch: d}}, nil
	}
	for _, r := range t.Refs {
		if h.urls != nil {
			url, err := h.urls.Fetch(ctx, r, tk.id, tk.agent.id)
			if e := gateway.AsError(err); e != nil && e.Code() == schemas.CodeInvalidParams {
				return nil, e.With("operator", tk.op)
			}
			if err != nil {
				return nil, gateway.NewError(schemas.CodeInvalidParams).With("operator", tk.op).With("data_ref", r.Name).
					With("reason", "the data ref cannot be resolved").Wrap(err)
			}
			r.URI, r.Headers = url, nil
		}
		d.InputRefs = append(d.InputRefs, r.toProto())
	}
	if h.urls != nil {
		url, ref, err := h.urls.Upload(ctx, tk.id, tk.agent.id, t.MaxOutputBytes)
		if err != nil {
			return nil, gateway.NewError(schemas.CodeInternal).Wrap(err)
		}
		d.OutputUpload = &agentlinkv1.DataRef{Uri: url, Name: ref}
	}
	return &agentlinkv1.ConnectResponse{Message: &agentlinkv1.ConnectResponse_Dispatch{Dispatch: d}}, nil
}

// scopedRefs resolves the DataRefs of a trusted agent's task into d: plain URLs, one upload
// and the task token (d.DataToken), which expires within the task's timeout.
func scopedRefs(ctx context.Context, urls ScopedDataURLs, d *agentlinkv1.TaskDispatch, tk *task, t Task, timeout time.Duration) error {
	sc, err := urls.Scope(ctx, t.Refs, tk.id, tk.agent.id, t.MaxOutputBytes, timeout)
	if e := gateway.AsError(err); e != nil {
		return e.With("operator", tk.op)
	}
	if err != nil {
		return gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	for _, r := range sc.Inputs {
		d.InputRefs = append(d.InputRefs, r.toProto())
	}
	d.OutputUpload, d.DataToken = sc.Upload.toProto(), sc.Token
	return nil
}

// cancel tells the agent a task is withdrawn, if its queue has room (a full queue means
// the agent is not reading; its late result is ignored either way).
func (a *agent) cancel(id, reason string) {
	msg := &agentlinkv1.ConnectResponse{Message: &agentlinkv1.ConnectResponse_Cancel{Cancel: &agentlinkv1.TaskCancel{TaskId: id, Reason: reason}}}
	select {
	case a.out <- msg:
	default:
	}
}

// ctxError is the error of a caller that gave up.
func ctxError(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return gateway.ErrDeadline("agent")
	}
	return gateway.NewError(schemas.CodeCancelled)
}

// newJobID returns a job id for a call that names none.
func newJobID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "job-" + hex.EncodeToString(b[:])
}

// onAck handles an acknowledgement: a refusal ends the task with AGENT_TASK_REJECTED.
func (a *agent) onAck(m *agentlinkv1.TaskAck) error {
	if err := checkAck(m); err != nil {
		return err
	}
	t, known := a.lookup(m.GetTaskId())
	switch {
	case t == nil && known:
		return nil // late or duplicate: ignored
	case t == nil:
		return breach("an acknowledgement for task %q, which it was never given", clipText(m.GetTaskId(), 64))
	}
	if !m.GetAccepted() {
		t.finish(nil, errRejected(t, clipText(m.GetReason(), maxReasonLen)))
		return nil
	}
	t.mu.Lock()
	t.acked = true
	t.mu.Unlock()
	return nil
}

// onProgress passes a progress report to the task's caller.
func (a *agent) onProgress(m *agentlinkv1.TaskProgress) error {
	if err := checkProgress(m); err != nil {
		return err
	}
	t, known := a.lookup(m.GetTaskId())
	switch {
	case t == nil && known:
		return nil
	case t == nil:
		return breach("progress for task %q, which it was never given", clipText(m.GetTaskId(), 64))
	}
	if t.progress != nil {
		p := gateway.Progress{Progress: m.GetProgress(), Message: m.GetMessage()}
		if tot := m.GetTotal(); tot > 0 {
			p.Total = &tot
		}
		t.progress(p)
	}
	return nil
}

// onResult ends a task with its result; the first result wins, duplicates and late ones
// (the task finished already) are ignored.
func (a *agent) onResult(m *agentlinkv1.TaskResult) error {
	if err := checkResult(m); err != nil {
		return err
	}
	t, known := a.lookup(m.GetTaskId())
	switch {
	case t == nil && known:
		return nil
	case t == nil:
		return breach("a result for task %q, which it was never given", clipText(m.GetTaskId(), 64))
	}
	if !t.deadline.IsZero() && time.Now().After(t.deadline) {
		// The task's timeout passed before its result came: it timed out, however late the
		// waiting goroutine runs on a loaded machine (an agent that stops at the deadline it
		// was sent reports a failure just after it).
		t.finish(nil, errTimeout(t, t.timeout.Milliseconds()))
		return nil
	}
	if m.GetStatus() == agentlinkv1.TaskStatus_TASK_STATUS_FAILED {
		t.finish(nil, errFailed(t, m.GetDiagnostics()))
		return nil
	}
	out := json.RawMessage(m.GetOutputJson())
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	if reason := outputBreach(t.spec, m.GetOutputJson()); reason != "" {
		t.finish(nil, errFailed(t, reason))
		return nil
	}
	o := &Outcome{TaskID: t.id, JobID: t.job, Agent: a.id, Output: out, Diagnostics: m.GetDiagnostics()}
	for _, r := range m.GetOutputRefs() {
		o.Refs = append(o.Refs, refFromProto(r))
	}
	if rc := m.GetReceipt(); rc != nil {
		o.Receipt = &ValidationReceipt{Validator: rc.GetValidator(), Method: rc.GetMethod(), Passed: rc.GetPassed(), Signature: rc.GetSignature()}
	}
	t.finish(o, nil)
	return nil
}

// outputBreach says how an output breaks its operator's output schema; "" when it does not
// (or the operator declares none, or the output is not inline).
func outputBreach(spec *operatorSpec, out []byte) string {
	if spec.outSchema == nil || len(out) == 0 {
		return ""
	}
	if err := spec.outSchema.Check(out, 1); err != nil {
		return "the output does not match the operator's output schema: " + err.Error()
	}
	return ""
}

// u32 is n clamped to the range of a uint32.
func u32(n int64) uint32 {
	return uint32(max(0, min(n, int64(^uint32(0)))))
}

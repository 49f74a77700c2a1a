package a2a

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	wire "github.com/gatehouse-dev/gatehouse/codecs/a2a"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/hoptrace"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// TimeoutHeader carries the time left of the call to the agent, in milliseconds: A2A has
// no deadline of its own, so the gateway bounds its request by the call's deadline and
// tells the agent how long that is.
const TimeoutHeader = "A2A-Request-Timeout-Ms"

// Input is the input of a skill's capability: text (required) becomes a text part of the
// message, data (optional) a data part (application/json). Text being the one required
// string, the gateway's A2A face fills it from a text message.
type Input struct {
	Text *string         `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// InputSchema is the JSON Schema of Input.
const InputSchema = `{"type":"object","properties":{"text":{"type":"string","description":"Sent to the agent as a text part"},` +
	`"data":{"description":"Sent to the agent as a data part (application/json)"}},` +
	`"required":["text"],"additionalProperties":false}`

// OutputSchema is the JSON Schema of a call's result (Output).
const OutputSchema = `{"type":"object","properties":{"task_id":{"type":"string"},"context_id":{"type":"string"},` +
	`"state":{"type":"string"},"text":{"type":"string"},"artifacts":{"type":"array"}},"required":["state"]}`

// Output is a call's result: the final task's state ("completed"; or the agent answered
// with a message: "message"), the text of its artifacts' (or the message's) text parts,
// joined by newlines, and the artifacts in their A2A 1.0 form.
type Output struct {
	TaskID    string          `json:"task_id,omitempty"`
	ContextID string          `json:"context_id,omitempty"`
	State     string          `json:"state"`
	Text      string          `json:"text"`
	Artifacts []wire.Artifact `json:"artifacts"`
}

var tracer = hoptrace.New("github.com/gatehouse-dev/gatehouse/routing/a2a")

// Invoke implements gateway.Target: call.Method names a skill; its params are an Input.
// A caller that takes progress (gateway.ProgressFrom: nekte.delegate, an MCP call with a
// progress token) is served by SendStreamingMessage when the card says the agent streams:
// status updates and artifact updates become progress reports, and cancelling ctx sends
// CancelTask for the task. Otherwise the call is a SendMessage, and a task it leaves
// running is polled with GetTask.
func (t *Target) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	c := t.card.Load()
	if c == nil {
		return nil, gateway.Errorf(schemas.CodeUnavailable, "a2a agent %s: the card is not loaded", t.cfg.Name).
			With("backend", t.Name()).NotSent()
	}
	sk, ok := c.byMethod[call.Method]
	if !ok {
		return nil, gateway.NewError(schemas.CodeMethodNotFound)
	}
	in, gerr := parseInput(call.Params)
	if gerr != nil {
		return nil, gerr
	}
	x := &exchange{t: t, c: c, sk: sk, bearer: t.bearer(ctx)}
	ctx, cancel, gerr := t.hopContext(ctx)
	if gerr != nil {
		return nil, gerr
	}
	defer cancel()
	ctx, span := tracer.Start(ctx, "a2a "+opName(c.version, wire.OpSendMessage)+" "+sk.ID,
		attribute.String("gatehouse.backend", t.Name()), attribute.String("a2a.skill", sk.ID))
	out, err := x.run(ctx, in)
	if span != nil {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
	if err != nil {
		return nil, err
	}
	b, merr := json.Marshal(out)
	if merr != nil {
		return nil, gateway.NewError(schemas.CodeInternal).Wrap(merr)
	}
	if int64(len(b)) > t.cfg.MaxResponseBytes {
		return nil, t.tooLarge()
	}
	return gateway.NewResult(b), nil
}

// bearer is the hop credential for ctx's call, "" for none.
func (t *Target) bearer(ctx context.Context) string {
	if t.hop.Mode == gateway.HopNone {
		return ""
	}
	return gateway.HopToken(ctx)
}

// hopContext bounds ctx by the call's deadline less the hop reserve, and by
// request_timeout.
func (t *Target) hopContext(ctx context.Context) (context.Context, context.CancelFunc, *gateway.Error) {
	dl := time.Now().Add(t.cfg.RequestTimeout)
	if cdl, ok := ctx.Deadline(); ok {
		hop, err := gateway.HopBudgetFrom(ctx).Deadline(time.Now(), cdl, gateway.LayerUpstream)
		if err != nil {
			return nil, nil, err.With("backend", t.Name())
		}
		if hop.Before(dl) {
			dl = hop
		}
	}
	ctx, cancel := context.WithDeadline(ctx, dl)
	return ctx, cancel, nil
}

func parseInput(params json.RawMessage) (Input, *gateway.Error) {
	var in Input
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if len(bytes.TrimSpace(params)) == 0 || dec.Decode(&in) != nil || in.Text == nil {
		return in, gateway.Errorf(schemas.CodeInvalidParams, "params must be an object with text (a string) and optionally data (any JSON value), and nothing else").
			With("path", "params")
	}
	return in, nil
}

// exchange is one call of a skill.
type exchange struct {
	t      *Target
	c      *card
	sk     *Skill
	bearer string
	taskID string // once the agent named its task
	state  wire.TaskState
}

func (x *exchange) message(in Input) wire.Message {
	m := wire.Message{MessageID: newID(), Role: wire.RoleUser, Metadata: json.RawMessage(`{"skillId":` + strconv.Quote(x.sk.ID) + `}`)}
	if in.Text != nil {
		m.Parts = append(m.Parts, wire.TextPart(*in.Text))
	}
	if len(in.Data) > 0 {
		m.Parts = append(m.Parts, wire.DataPart(in.Data))
	}
	return m.In(x.c.version)
}

func (x *exchange) run(ctx context.Context, in Input) (*Output, error) {
	msg := x.message(in)
	params, err := json.Marshal(struct {
		Message wire.Message `json:"message"`
	}{msg})
	if err != nil {
		return nil, gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	if progress := gateway.ProgressFrom(ctx); progress != nil && x.c.streaming {
		return x.stream(ctx, params, progress)
	}
	res, gerr := x.t.rpc(ctx, x.c, wire.OpSendMessage, params, x.bearer)
	if gerr != nil {
		return nil, gerr
	}
	ev, gerr := x.t.readEvent(res, x.c.version, true)
	if gerr != nil {
		return nil, gerr
	}
	if ev.message != nil {
		return messageOutput(ev.message), nil
	}
	task := ev.task
	if task == nil {
		return nil, x.t.badResponse("SendMessage answered with neither a task nor a message")
	}
	x.taskID = task.ID
	for !task.Status.State.Terminal() && task.Status.State != wire.StateInputRequired && task.Status.State != wire.StateAuthRequired {
		if task, gerr = x.poll(ctx); gerr != nil {
			x.cancelUpstream(ctx)
			return nil, gerr
		}
	}
	return x.final(task)
}

// poll waits a little, then reads the task with GetTask.
func (x *exchange) poll(ctx context.Context) (*wire.Task, *gateway.Error) {
	select {
	case <-ctx.Done():
		return nil, x.t.ctxError(ctx)
	case <-time.After(pollInterval):
	}
	params, _ := json.Marshal(map[string]string{"id": x.taskID})
	res, gerr := x.t.rpc(ctx, x.c, wire.OpGetTask, params, x.bearer)
	if gerr != nil {
		return nil, gerr
	}
	ev, gerr := x.t.readEvent(res, x.c.version, false)
	if gerr != nil {
		return nil, gerr
	}
	if ev.task == nil {
		return nil, x.t.badResponse("GetTask answered with no task")
	}
	return ev.task, nil
}

// pollInterval is the wait between two GetTasks of a task SendMessage left running.
const pollInterval = 200 * time.Millisecond

// stream runs the call as SendStreamingMessage: status and artifact updates become
// progress, the terminal status (or final task) ends it.
func (x *exchange) stream(ctx context.Context, params []byte, progress func(gateway.Progress)) (*Output, error) {
	body, gerr := x.t.post(ctx, x.c, wire.OpSendStreamingMessage, params, x.bearer, true)
	if gerr != nil {
		return nil, gerr
	}
	defer func() { _ = body.Close() }()
	var artifacts []wire.Artifact
	var last *wire.Task
	var status wire.TaskStatus // the last status update's
	var step float64
	r := newSSEReader(body, x.t.cfg.MaxResponseBytes)
	for {
		data, err := r.next()
		if err != nil {
			if ctx.Err() != nil {
				x.cancelUpstream(ctx)
				return nil, x.t.ctxError(ctx)
			}
			if errors.Is(err, io.EOF) && (last != nil || x.state.Terminal()) {
				break
			}
			if errors.Is(err, errEventTooLarge) {
				x.cancelUpstream(ctx)
				return nil, x.t.tooLarge()
			}
			return nil, x.t.badResponse("the stream ended before the task did")
		}
		res, gerr := x.t.result(data)
		if gerr != nil {
			return nil, gerr
		}
		ev, gerr := x.t.readEvent(res, x.c.version, true)
		if gerr != nil {
			return nil, gerr
		}
		switch {
		case ev.message != nil:
			return messageOutput(ev.message), nil
		case ev.task != nil:
			last, x.taskID, x.state = ev.task, ev.task.ID, ev.task.Status.State
		case ev.status != nil:
			x.taskID, x.state, status = ev.status.TaskID, ev.status.Status.State, ev.status.Status
			step++
			progress(gateway.Progress{Progress: step, Message: statusText(ev.status.Status)})
		case ev.artifact != nil:
			x.taskID = ev.artifact.TaskID
			artifacts = mergeArtifact(artifacts, ev.artifact)
			step++
			name := ev.artifact.Artifact.Name
			if name == "" {
				name = ev.artifact.Artifact.ArtifactID
			}
			progress(gateway.Progress{Progress: step, Message: "artifact " + name})
		}
		if x.state.Terminal() || ev.final || x.state == wire.StateInputRequired || x.state == wire.StateAuthRequired {
			break
		}
	}
	task := last
	if task == nil || !task.Status.State.Terminal() {
		status.State = x.state
		task = &wire.Task{ID: x.taskID, Status: status}
		if last != nil {
			task.ContextID = last.ContextID
		}
	}
	if len(task.Artifacts) == 0 {
		task.Artifacts = artifacts
	}
	return x.final(task)
}

// mergeArtifact adds an artifact update: a new artifact, or a chunk appended to one.
func mergeArtifact(arts []wire.Artifact, ev *wire.TaskArtifactUpdateEvent) []wire.Artifact {
	for i := range arts {
		if arts[i].ArtifactID == ev.Artifact.ArtifactID {
			if ev.Append {
				arts[i].Parts = append(arts[i].Parts, ev.Artifact.Parts...)
			} else {
				arts[i] = ev.Artifact
			}
			return arts
		}
	}
	return append(arts, ev.Artifact)
}

// final turns the task the call ended with into its output, or the typed error of a task
// that did not complete.
func (x *exchange) final(task *wire.Task) (*Output, error) {
	st := task.Status.State
	if st == wire.StateCompleted {
		out := &Output{TaskID: task.ID, ContextID: task.ContextID, State: st.In(wire.V03), Artifacts: task.Artifacts}
		if out.Artifacts == nil {
			out.Artifacts = []wire.Artifact{}
		}
		var texts []string
		for _, a := range task.Artifacts {
			texts = append(texts, partsText(a.Parts)...)
		}
		out.Text = strings.Join(texts, "\n")
		return out, nil
	}
	code := schemas.CodeAgentExecution
	switch st {
	case wire.StateFailed:
		code = schemas.CodeAgentTaskFailed
	case wire.StateRejected:
		code = schemas.CodeAgentRejected
	case wire.StateCanceled:
		code = schemas.CodeCancelled
	}
	msg := statusText(task.Status)
	e := gateway.Errorf(code, "a2a agent %s: skill %s ended %s", x.t.cfg.Name, x.sk.ID, st.In(wire.V03)).
		With("agent", x.t.cfg.Name).With("skill", x.sk.ID).With("task_id", task.ID).With("state", st.In(wire.V03))
	if msg != "" {
		e = e.With("message", clip(msg))
	}
	return nil, e
}

func messageOutput(m *wire.Message) *Output {
	return &Output{State: "message", ContextID: m.ContextID, TaskID: m.TaskID, Text: strings.Join(partsText(m.Parts), "\n"),
		Artifacts: []wire.Artifact{{ArtifactID: m.MessageID, Parts: m.Parts}}}
}

func partsText(parts []wire.Part) []string {
	var out []string
	for _, p := range parts {
		if p.Text != nil {
			out = append(out, *p.Text)
		}
	}
	return out
}

func statusText(s wire.TaskStatus) string {
	if s.Message == nil {
		return ""
	}
	return strings.Join(partsText(s.Message.Parts), "\n")
}

func clip(s string) string {
	if len(s) > 512 {
		return s[:512] + "…"
	}
	return s
}

// cancelUpstream sends CancelTask for the exchange's task when it is known and not over,
// in the background (bounded by cancel_timeout, with the call's hop token and trace
// context); Close waits for it.
func (x *exchange) cancelUpstream(ctx context.Context) {
	if x.taskID == "" || x.state.Terminal() {
		return
	}
	t, c, id, bearer := x.t, x.c, x.taskID, x.bearer
	sc := trace.SpanContextFromContext(ctx)
	t.wg.Go(func() { // the cancel outlives the call's context, which is done
		cctx, cancel := context.WithTimeout(trace.ContextWithSpanContext(context.Background(), sc), t.cfg.CancelTimeout)
		defer cancel()
		go func() {
			select {
			case <-t.stop:
				cancel()
			case <-cctx.Done():
			}
		}()
		params, _ := json.Marshal(map[string]string{"id": id})
		if _, err := t.rpc(cctx, c, wire.OpCancelTask, params, bearer); err != nil {
			t.log.Info("a2a CancelTask failed", "task_id", id, "error", err)
		}
	})
}

// opName is the method name of op in version v.
func opName(v wire.Version, op wire.Op) string {
	if v == wire.V10 {
		return map[wire.Op]string{wire.OpSendMessage: "SendMessage", wire.OpSendStreamingMessage: "SendStreamingMessage",
			wire.OpGetTask: "GetTask", wire.OpCancelTask: "CancelTask"}[op]
	}
	return map[wire.Op]string{wire.OpSendMessage: "message/send", wire.OpSendStreamingMessage: "message/stream",
		wire.OpGetTask: "tasks/get", wire.OpCancelTask: "tasks/cancel"}[op]
}

// post sends one JSON-RPC request of op to the agent and returns the response body (an
// SSE stream when stream is set), after checking the status.
func (t *Target) post(ctx context.Context, c *card, op wire.Op, params []byte, bearer string, stream bool) (io.ReadCloser, *gateway.Error) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":` + strconv.Quote(opName(c.version, op)) + `,"params":`)
	body = append(append(body, params...), '}')
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if c.version == wire.V10 {
		req.Header.Set("A2A-Version", "1.0")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if dl, ok := ctx.Deadline(); ok {
		req.Header.Set(TimeoutHeader, strconv.FormatInt(max(time.Until(dl).Milliseconds(), 1), 10))
	}
	if trace.SpanContextFromContext(ctx).IsValid() {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, t.ctxError(ctx)
		}
		e := gateway.Errorf(schemas.CodeUnavailable, "a2a agent %s: %v", t.cfg.Name, errors.Unwrap(err)).With("backend", t.Name())
		if isDialError(err) {
			e = e.NotSent()
		}
		return nil, e
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, gateway.Errorf(schemas.CodeUnavailable, "a2a agent %s answered HTTP status %d", t.cfg.Name, resp.StatusCode).
			With("backend", t.Name()).With("status", resp.StatusCode)
	}
	ct := resp.Header.Get("Content-Type")
	if stream && !strings.HasPrefix(ct, "text/event-stream") {
		// An agent may answer a stream request with one JSON-RPC response (an error).
		defer func() { _ = resp.Body.Close() }()
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, t.cfg.MaxResponseBytes+1))
		if rerr != nil {
			return nil, t.badResponse("the response could not be read")
		}
		if _, gerr := t.result(b); gerr != nil {
			return nil, gerr
		}
		return nil, t.badResponse("the stream request was answered with " + ct)
	}
	return resp.Body, nil
}

// rpc sends a request and returns its result member.
func (t *Target) rpc(ctx context.Context, c *card, op wire.Op, params []byte, bearer string) (json.RawMessage, *gateway.Error) {
	body, gerr := t.post(ctx, c, op, params, bearer, false)
	if gerr != nil {
		return nil, gerr
	}
	defer func() { _ = body.Close() }()
	b, err := io.ReadAll(io.LimitReader(body, t.cfg.MaxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, t.ctxError(ctx)
		}
		return nil, t.badResponse("the response could not be read")
	}
	if int64(len(b)) > t.cfg.MaxResponseBytes {
		return nil, t.tooLarge()
	}
	return t.result(b)
}

// result reads a JSON-RPC response: its result, or the agent's error as a typed one.
func (t *Target) result(b []byte) (json.RawMessage, *gateway.Error) {
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int32           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, t.badResponse("the response is not a JSON-RPC response")
	}
	if resp.Error != nil {
		code := schemas.CodeAgentExecution
		switch schemas.Code(resp.Error.Code) {
		case wire.CodeTaskNotFound:
			code = schemas.CodeTaskNotFound
		case wire.CodeInvalidParams:
			code = schemas.CodeInvalidParams
		case wire.CodeVersionNotSupported:
			code = schemas.CodeDependencyFailed
		}
		return nil, gateway.Errorf(code, "a2a agent %s: %s", t.cfg.Name, clip(resp.Error.Message)).
			With("agent", t.Name()).With("upstream_code", resp.Error.Code)
	}
	if len(resp.Result) == 0 {
		return nil, t.badResponse("the response has no result")
	}
	return resp.Result, nil
}

func (t *Target) badResponse(why string) *gateway.Error {
	return gateway.Errorf(schemas.CodeDependencyFailed, "a2a agent %s: %s", t.cfg.Name, why).With("backend", t.Name())
}

func (t *Target) tooLarge() *gateway.Error {
	return gateway.NewError(schemas.CodePayloadTooLarge).With("limit", "max_response_bytes").With("max", t.cfg.MaxResponseBytes).
		With("backend", t.Name())
}

func (t *Target) ctxError(ctx context.Context) *gateway.Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return gateway.NewError(schemas.CodeDeadlineExceeded).With("layer", gateway.LayerUpstream).With("backend", t.Name())
	}
	return gateway.NewError(schemas.CodeCancelled)
}

// isDialError reports an error of dialling the agent: the request never left.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// event is one result the agent sent, whatever its version's spelling: a task, a message,
// a status update or an artifact update (exactly one is set).
type event struct {
	task     *wire.Task
	message  *wire.Message
	status   *wire.TaskStatusUpdateEvent
	artifact *wire.TaskArtifactUpdateEvent
	final    bool // 0.3's end-of-stream flag
}

// readEvent reads a result: 1.0 wraps it in the member of its kind (a SendMessage result
// in task or message), 0.3 marks it with a kind member; GetTask answers a bare task in
// both (wrapped false).
func (t *Target) readEvent(res json.RawMessage, v wire.Version, wrapped bool) (event, *gateway.Error) {
	var ev event
	var probe struct {
		Kind           string          `json:"kind"`
		Task           json.RawMessage `json:"task"`
		Message        json.RawMessage `json:"message"`
		StatusUpdate   json.RawMessage `json:"statusUpdate"`
		ArtifactUpdate json.RawMessage `json:"artifactUpdate"`
		Status         json.RawMessage `json:"status"`
	}
	if err := json.Unmarshal(res, &probe); err != nil {
		return ev, t.badResponse("a result is not a JSON object")
	}
	var err error
	switch {
	case wrapped && probe.Task != nil:
		err = json.Unmarshal(probe.Task, &ev.task)
	case wrapped && probe.Message != nil && probe.Kind == "":
		err = json.Unmarshal(probe.Message, &ev.message)
	case probe.StatusUpdate != nil:
		err = json.Unmarshal(probe.StatusUpdate, &ev.status)
	case probe.ArtifactUpdate != nil:
		err = json.Unmarshal(probe.ArtifactUpdate, &ev.artifact)
	case probe.Kind == "task" || (probe.Kind == "" && probe.Status != nil && (!wrapped || v == wire.V03)):
		err = json.Unmarshal(res, &ev.task)
	case probe.Kind == "message":
		err = json.Unmarshal(res, &ev.message)
	case probe.Kind == "status-update":
		err = json.Unmarshal(res, &ev.status)
	case probe.Kind == "artifact-update":
		err = json.Unmarshal(res, &ev.artifact)
	default:
		return ev, t.badResponse("a result is neither a task, a message nor a task update")
	}
	if err != nil {
		return ev, t.badResponse("a result does not have the shape of its kind")
	}
	if ev.status != nil {
		ev.final = ev.status.Final
	}
	if !normalize(&ev) {
		return ev, t.badResponse("a result names an unknown task state")
	}
	return ev, nil
}

// normalize folds the 0.3 spellings of ev (states, parts) into 1.0's; false for a state
// neither version names.
func normalize(ev *event) bool {
	ok := true
	state := func(s *wire.TaskState) {
		if st, k := wire.ParseState(string(*s), wire.V10); k {
			*s = st
		} else if st, k := wire.ParseState(string(*s), wire.V03); k {
			*s = st
		} else {
			ok = false
		}
	}
	msg := func(m *wire.Message) {
		if m != nil {
			normalizeParts(m.Parts)
		}
	}
	if ev.task != nil {
		state(&ev.task.Status.State)
		msg(ev.task.Status.Message)
		for i := range ev.task.Artifacts {
			normalizeParts(ev.task.Artifacts[i].Parts)
		}
		ev.task.Kind, ev.task.History = "", nil
	}
	if ev.status != nil {
		state(&ev.status.Status.State)
		msg(ev.status.Status.Message)
	}
	if ev.artifact != nil {
		normalizeParts(ev.artifact.Artifact.Parts)
	}
	if ev.message != nil {
		normalizeParts(ev.message.Parts)
	}
	return ok
}

// normalizeParts rewrites 0.3 parts (kind, file) in the 1.0 form.
func normalizeParts(parts []wire.Part) {
	for i := range parts {
		p := &parts[i]
		if p.File != nil {
			p.URL, p.Filename, p.MediaType = p.File.URI, p.File.Name, p.File.MimeType
			if p.File.Bytes != "" {
				p.Raw = []byte(p.File.Bytes) // kept base64: the agent's bytes, not decoded here
			}
			p.File = nil
		}
		p.Kind = ""
	}
}

// errEventTooLarge is an SSE event larger than max_response_bytes.
var errEventTooLarge = errors.New("event too large")

// sseReader reads the data of Server-Sent Events, each at most max bytes.
type sseReader struct {
	r   *bufio.Reader
	max int64
}

func newSSEReader(r io.Reader, limit int64) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10), max: limit}
}

// next returns the data of the next event that has some (multi-line data joined by \n).
func (s *sseReader) next() ([]byte, error) {
	var data []byte
	has := false
	for {
		line, err := s.line()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			if has {
				return data, nil
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			if has {
				data = append(data, '\n')
			}
			data, has = append(data, v...), true
			if int64(len(data)) > s.max {
				return nil, errEventTooLarge
			}
		}
	}
}

// line reads one line without its end (\n, \r\n), bounded by max.
func (s *sseReader) line() ([]byte, error) {
	var out []byte
	for {
		frag, err := s.r.ReadSlice('\n')
		out = append(out, frag...)
		if int64(len(out)) > s.max+8 {
			return nil, errEventTooLarge
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(out) > 0 && errors.Is(err, io.EOF) {
			break
		}
		return nil, err
	}
	out = bytes.TrimSuffix(out, []byte("\n"))
	return bytes.TrimSuffix(out, []byte("\r")), nil
}

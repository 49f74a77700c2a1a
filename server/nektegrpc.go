package server

import (
	"context"
	"encoding/json"
	"math"
	"strconv"

	"google.golang.org/grpc"

	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
	nektev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/nekte/v1"
)

// nekteGRPC is nekte.v1.Nekte on the internal listener: the gRPC face of NEKTE. Each
// RPC turns its request into the JSON-RPC params of the primitive of the same name
// (nekte.discover, nekte.invoke, ...), runs that method through the pipeline of the
// current configuration as the caller its metadata authenticates (zone internal, protocol
// grpc, the gRPC deadline), and turns the JSON result into the response. So every stage —
// authorization, rate limits, admission, routing — applies as it does to the same call
// made over HTTP. docs/nekte.md ("gRPC") lists the mapping.
//
// Errors are gRPC statuses from the error table (toStatus), except VERSION_MISMATCH on
// Invoke, which is InvokeResponse.error carrying the current hash and level-2 entry so the
// caller can retry in one round trip. A Delegate stream's error event is an ErrorEvent,
// as it is an event of the task; a stream that breaks is a status.
type nekteGRPC struct {
	nektev1.UnimplementedNekteServer
	s *Server
}

var _ nektev1.NekteServer = (*nekteGRPC)(nil)

// errNekteDisabled answers every RPC when no target of the configuration serves nekte.*
// (it has no nekte section).
var errNekteDisabled = gateway.Errorf(schemas.CodeMethodNotFound, "NEKTE is not enabled on this gateway (its configuration has no nekte section)")

// errNekteResult reports a result of a nekte.* target that its response message cannot
// hold (not the JSON its primitive answers with).
var errNekteResult = gateway.NewError(schemas.CodeInternal).With("reason", "the NEKTE target answered with an unexpected result")

// Discover implements nekte.v1.Nekte/Discover. The whole listing comes back in one
// response: when the catalog pages its results (nekte.catalog.discover.page_size), the
// pages are fetched in turn, each a call through the pipeline under one trace.
func (n *nekteGRPC) Discover(ctx context.Context, req *nektev1.DiscoverRequest) (*nektev1.DiscoverResponse, error) {
	p := discoverParams{Level: req.GetLevel(), Filter: discoverFilter(req.GetFilter())}
	resp := &nektev1.DiscoverResponse{}
	traceID := observability.TraceIDOf(ctx) // the RPC's span's, with tracing on
	for {
		var page discoverPage
		if err := decodeOutcome(n.run(ctx, traceID, nk.MethodDiscover, p, nil), &page); err != nil {
			return nil, err
		}
		resp.Agent, resp.Version = page.Agent, page.V
		addCaps(resp, p.Level, page.Caps)
		if page.NextCursor == "" || page.NextCursor == p.Cursor {
			return resp, nil
		}
		p.Cursor = page.NextCursor
	}
}

// Invoke implements nekte.v1.Nekte/Invoke. At level minimal the output is the plain
// string as a JSON string, as in the JSON-RPC form's "out".
func (n *nekteGRPC) Invoke(ctx context.Context, req *nektev1.InvokeRequest) (*nektev1.InvokeResponse, error) {
	in, perr := jsonBytes("in", req.GetInput())
	if perr != nil {
		return nil, toStatus(perr, observability.TraceIDOf(ctx))
	}
	p := nk.InvokeParams{Cap: req.GetCap(), H: req.GetH(), In: in, Budget: budget(req.GetBudget())}
	out := n.run(ctx, "", nk.MethodInvoke, p, nil)
	if out.err != nil && out.err.Code() == schemas.CodeVersionMismatch {
		return versionMismatch(out)
	}
	var res nk.InvokeResult
	if err := decodeOutcome(out, &res); err != nil {
		return nil, err
	}
	return &nektev1.InvokeResponse{Output: res.Out, ResolvedLevel: string(res.ResolvedLevel), Meta: resultMeta(&res.Meta)}, nil
}

// Delegate implements nekte.v1.Nekte/Delegate: the task's events, each as the
// DelegateEvent member of its name, until complete, error or cancelled. The task runs on
// the gateway, not on the stream: a caller that goes away does not cancel it.
func (n *nekteGRPC) Delegate(req *nektev1.DelegateRequest, stream grpc.ServerStreamingServer[nektev1.DelegateEvent]) error {
	p, perr := delegateParams(req)
	if perr != nil {
		return toStatus(perr, observability.TraceIDOf(stream.Context()))
	}
	send := func(msg []byte) error {
		ev, err := delegateEvent(msg)
		if err != nil || ev == nil {
			return err
		}
		return stream.Send(ev)
	}
	out := n.run(stream.Context(), "", nk.MethodDelegate, p, send)
	switch {
	case out.err != nil:
		return toStatus(out.err, out.traceID)
	case !out.streamed:
		return toStatus(errNekteResult, out.traceID)
	default:
		return nil
	}
}

// Context implements nekte.v1.Nekte/Context. share answers status "stored" with an
// envelope holding only the id and the lifetime granted (ttl_s); request answers the
// stored envelope (status empty) or status "not_found"; revoke answers "revoked" or
// "not_found".
func (n *nekteGRPC) Context(ctx context.Context, req *nektev1.ContextRequest) (*nektev1.ContextResponse, error) {
	env, perr := envelopeParams("envelope", req.GetEnvelope())
	if perr != nil {
		return nil, toStatus(perr, observability.TraceIDOf(ctx))
	}
	if env == nil {
		env = &nk.Envelope{}
	}
	var res contextResult
	if err := n.unary(ctx, nk.MethodContext, nk.ContextParams{Action: nk.ContextAction(req.GetAction()), Envelope: *env}, &res); err != nil {
		return nil, err
	}
	return res.response(), nil
}

// Verify implements nekte.v1.Nekte/Verify; data is the JSON result of nekte.verify, whose
// members hash, hash_valid, sample and source are the per-check details.
func (n *nekteGRPC) Verify(ctx context.Context, req *nektev1.VerifyRequest) (*nektev1.VerifyResponse, error) {
	checks := make([]nk.Check, len(req.GetChecks()))
	for i, c := range req.GetChecks() {
		checks[i] = nk.Check(c)
	}
	p := nk.VerifyParams{TaskID: req.GetTaskId(), Checks: checks, Budget: budget(req.GetBudget())}
	out := n.run(ctx, "", nk.MethodVerify, p, nil)
	var res nk.VerifyResult
	if err := decodeOutcome(out, &res); err != nil {
		return nil, err
	}
	resp := &nektev1.VerifyResponse{TaskId: res.TaskID, Status: res.Status, Data: out.result}
	for _, c := range res.Checks {
		resp.Checks = append(resp.Checks, string(c))
	}
	return resp, nil
}

// TaskCancel implements nekte.v1.Nekte/TaskCancel.
func (n *nekteGRPC) TaskCancel(ctx context.Context, req *nektev1.TaskCancelRequest) (*nektev1.TaskLifecycleResponse, error) {
	p := nk.TaskCancelParams{TaskID: req.GetTaskId(), Reason: req.GetReason()}
	return n.lifecycle(ctx, nk.MethodTaskCancel, p)
}

// TaskResume implements nekte.v1.Nekte/TaskResume.
func (n *nekteGRPC) TaskResume(ctx context.Context, req *nektev1.TaskResumeRequest) (*nektev1.TaskLifecycleResponse, error) {
	p := nk.TaskResumeParams{TaskID: req.GetTaskId(), Budget: budget(req.GetBudget())}
	return n.lifecycle(ctx, nk.MethodTaskResume, p)
}

func (n *nekteGRPC) lifecycle(ctx context.Context, method string, params any) (*nektev1.TaskLifecycleResponse, error) {
	var res nk.TaskLifecycleResult
	if err := n.unary(ctx, method, params, &res); err != nil {
		return nil, err
	}
	return &nektev1.TaskLifecycleResponse{TaskId: res.TaskID, Status: string(res.Status), PreviousStatus: string(res.PreviousStatus)}, nil
}

// TaskStatus implements nekte.v1.Nekte/TaskStatus; progress {processed, total} becomes
// progress_processed and progress_total.
func (n *nekteGRPC) TaskStatus(ctx context.Context, req *nektev1.TaskStatusRequest) (*nektev1.TaskStatusResponse, error) {
	var res taskStatusResult
	if err := n.unary(ctx, nk.MethodTaskStatus, nk.TaskStatusParams{TaskID: req.GetTaskId()}, &res); err != nil {
		return nil, err
	}
	return &nektev1.TaskStatusResponse{
		TaskId: res.TaskID, Status: string(res.Status),
		ProgressProcessed: clamp32(res.Progress.Processed), ProgressTotal: clamp32(res.Progress.Total),
		CheckpointAvailable: res.CheckpointAvailable, CreatedAt: res.CreatedAt, UpdatedAt: res.UpdatedAt,
	}, nil
}

// unary runs method with params and decodes its result into result; the error is a gRPC
// status.
func (n *nekteGRPC) unary(ctx context.Context, method string, params, result any) error {
	return decodeOutcome(n.run(ctx, "", method, params, nil), result)
}

// run runs method with params (written as JSON) for the gRPC caller of ctx, through the
// pipeline of the current configuration, under traceID (empty starts a trace). A streamed
// result's messages go to send.
func (n *nekteGRPC) run(ctx context.Context, traceID, method string, params any, send func([]byte) error) invokeOutcome {
	if traceID == "" {
		traceID = observability.TraceIDOf(ctx)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return invokeOutcome{err: gateway.NewError(schemas.CodeInternal).Wrap(err), traceID: traceID}
	}
	rt := n.s.acquire()
	defer rt.release()
	principal, err := rt.auth.Authenticate(ctx, grpcCredentials(ctx))
	if err != nil {
		return invokeOutcome{err: gateway.AsError(err), traceID: traceID}
	}
	if _, ok := rt.table.Lookup(nk.MethodDiscover); !ok {
		return invokeOutcome{err: errNekteDisabled, traceID: traceID}
	}
	who := asCaller{principal: principal, zone: gateway.ZoneInternal, protocol: gateway.ProtocolGRPC, traceID: traceID}
	return rt.runAsCaller(ctx, who, method, raw, send)
}

// decodeOutcome decodes a call's JSON result into result, or returns its error as a gRPC
// status.
func decodeOutcome(out invokeOutcome, result any) error {
	if out.err != nil {
		return toStatus(out.err, out.traceID)
	}
	if err := json.Unmarshal(out.result, result); err != nil {
		return toStatus(errNekteResult.Wrap(err), out.traceID)
	}
	return nil
}

// versionMismatch answers a VERSION_MISMATCH error with InvokeResponse.error: the
// current hash and the capability's level-2 entry from error.data. An error without that
// data (a backend's own) stays a status.
func versionMismatch(out invokeOutcome) (*nektev1.InvokeResponse, error) {
	var d nk.VersionMismatchData
	raw, err := json.Marshal(out.err.Data())
	if err == nil {
		err = json.Unmarshal(raw, &d)
	}
	if err != nil || d.CurrentHash == "" {
		return nil, toStatus(out.err, out.traceID)
	}
	ie := &nektev1.InvokeError{Code: int32(out.err.Code()), Message: out.err.Message(), CurrentHash: d.CurrentHash}
	if d.Schema.ID != "" {
		ie.Schema = capabilityFull(&d.Schema)
	}
	return &nektev1.InvokeResponse{Error: ie}, nil
}

// discoverParams are nekte.discover's params with the additive cursor, which Discover
// follows page after page.
type discoverParams struct {
	Level  int32              `json:"level"`
	Filter *nk.DiscoverFilter `json:"filter,omitempty"`
	Cursor string             `json:"cursor,omitempty"`
}

// discoverPage is one page of nekte.discover's result, its entries read at any level.
type discoverPage struct {
	Agent      string         `json:"agent"`
	V          string         `json:"v"`
	Caps       []nk.CapSchema `json:"caps"`
	NextCursor string         `json:"next_cursor"`
}

// discoverFilter returns the filter's params, nil when it filters nothing. The float32
// threshold is written with the digits it was given (0.3, not 0.30000001192092896).
func discoverFilter(f *nektev1.DiscoverFilter) *nk.DiscoverFilter {
	out := nk.DiscoverFilter{Category: f.GetCategory(), Query: f.GetQuery(), ID: f.GetId(), TopK: int(f.GetTopK())}
	if t := f.GetThreshold(); t != 0 {
		out.Threshold, _ = strconv.ParseFloat(strconv.FormatFloat(float64(t), 'g', -1, 32), 64)
	}
	if out == (nk.DiscoverFilter{}) {
		return nil
	}
	return &out
}

// addCaps adds a page's entries to the list of the level asked for.
func addCaps(resp *nektev1.DiscoverResponse, level int32, caps []nk.CapSchema) {
	for i := range caps {
		c := &caps[i]
		switch level {
		case nk.LevelCatalog:
			resp.Refs = append(resp.Refs, &nektev1.CapabilityRef{Id: c.ID, Cat: c.Cat, H: c.H})
		case nk.LevelSummary:
			resp.Summaries = append(resp.Summaries, &nektev1.CapabilitySummary{Id: c.ID, Cat: c.Cat, H: c.H, Desc: c.Desc, Cost: costHint(c.Cost)})
		default:
			resp.Schemas = append(resp.Schemas, capabilityFull(c))
		}
	}
}

func capabilityFull(c *nk.CapSchema) *nektev1.CapabilityFull {
	full := &nektev1.CapabilityFull{Id: c.ID, Cat: c.Cat, H: c.H, Desc: c.Desc, Cost: costHint(c.Cost),
		InputSchema: c.Input, OutputSchema: c.Output}
	for _, ex := range c.Examples {
		full.Examples = append(full.Examples, &nektev1.Example{Input: ex.In, Output: ex.Out})
	}
	return full
}

func costHint(c *nk.Cost) *nektev1.CostHint {
	if c == nil {
		return nil
	}
	return &nektev1.CostHint{AvgMs: clamp32(c.AvgMs), AvgTokens: clamp32(c.AvgTokens)}
}

func resultMeta(m *nk.Meta) *nektev1.ResultMeta {
	if m == nil {
		return nil
	}
	return &nektev1.ResultMeta{Ms: clamp32(m.Ms), TokensUsed: clamp32(m.TokensUsed)}
}

// budget returns a token budget's params; unset is nil (the primitive's default).
func budget(b *nektev1.TokenBudget) *nk.Budget {
	if b == nil {
		return nil
	}
	return &nk.Budget{MaxTokens: int(b.GetMaxTokens()), DetailLevel: nk.DetailLevel(b.GetDetailLevel())}
}

// jsonBytes returns a bytes field as the JSON value of the params member field: nil when
// empty, INVALID_PARAMS when it is not UTF-8 JSON.
func jsonBytes(field string, b []byte) (json.RawMessage, *gateway.Error) {
	if len(b) == 0 {
		return nil, nil
	}
	if !json.Valid(b) {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "Invalid params: %s must be UTF-8 JSON", field).
			With("field", field).With("reason", "must be UTF-8 JSON")
	}
	return b, nil
}

// envelopeParams returns a context envelope's params (nil for nil), field naming it in
// errors.
func envelopeParams(field string, e *nektev1.ContextEnvelope) (*nk.Envelope, *gateway.Error) {
	if e == nil {
		return nil, nil
	}
	data, err := jsonBytes(field+".data", e.GetData())
	if err != nil {
		return nil, err
	}
	p := e.GetPermissions()
	return &nk.Envelope{
		ID: e.GetId(), Data: data, Compression: nk.Compression(e.GetCompression()),
		Permissions: nk.Permissions{Forward: p.GetForward(), Persist: p.GetPersist(), Derive: p.GetDerive()},
		TTLSeconds:  int64(e.GetTtlS()), BudgetHint: int(e.GetBudgetHint()),
	}, nil
}

// delegateParams returns nekte.delegate's params of a request.
func delegateParams(req *nektev1.DelegateRequest) (nk.DelegateParams, *gateway.Error) {
	t := req.GetTask()
	env, err := envelopeParams("context", req.GetContext())
	return nk.DelegateParams{
		Task:    nk.Task{ID: t.GetId(), Desc: t.GetDesc(), TimeoutMs: int64(t.GetTimeoutMs()), Budget: budget(t.GetBudget())},
		Context: env,
	}, err
}

// contextResult is nekte.context's result: {id, status, ttl_s?}, or the stored envelope.
type contextResult struct {
	ID          string          `json:"id"`
	Status      string          `json:"status"`
	TTLSeconds  int64           `json:"ttl_s"`
	Data        json.RawMessage `json:"data"`
	Compression string          `json:"compression"`
	Permissions nk.Permissions  `json:"permissions"`
	BudgetHint  int             `json:"budget_hint"`
}

func (r *contextResult) response() *nektev1.ContextResponse {
	resp := &nektev1.ContextResponse{Id: r.ID, Status: r.Status}
	switch nk.ContextStatus(r.Status) {
	case "":
		resp.Envelope = &nektev1.ContextEnvelope{
			Id: r.ID, Data: r.Data, Compression: r.Compression, TtlS: clamp32(r.TTLSeconds), BudgetHint: clamp32(r.BudgetHint),
			Permissions: &nektev1.ContextPermissions{Forward: r.Permissions.Forward, Persist: r.Permissions.Persist, Derive: r.Permissions.Derive},
		}
	case nk.ContextStored:
		resp.Envelope = &nektev1.ContextEnvelope{Id: r.ID, TtlS: clamp32(r.TTLSeconds)}
	}
	return resp
}

// taskStatusResult is nekte.task.status's result with the gateway's progress member.
type taskStatusResult struct {
	nk.TaskStatusResult

	Progress struct {
		Processed int `json:"processed"`
		Total     int `json:"total"`
	} `json:"progress"`
}

// delegateEvent returns the DelegateEvent of one message of a delegate stream
// ({"event": name, "data": payload}); nil for an event this contract has no member for.
func delegateEvent(msg []byte) (*nektev1.DelegateEvent, error) {
	name, data, err := faces.ParseEvent(msg)
	if err != nil {
		return nil, err
	}
	ev, err := resultEvent(name, data)
	if ev == nil && err == nil {
		ev, err = lifecycleEvent(name, data)
	}
	if err != nil {
		return nil, faces.ErrMalformedEvent.Wrap(err)
	}
	return ev, nil
}

// resultEvent maps the events that carry a task's work: progress, partial, complete and
// error. Other names give nil.
func resultEvent(name string, data []byte) (*nektev1.DelegateEvent, error) {
	switch name {
	case nk.EventProgress:
		e, err := decodeAs[nk.ProgressEvent](data)
		p := &nektev1.ProgressEvent{Processed: clamp32(e.Processed), Total: clamp32(e.Total), Message: e.Message}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_Progress{Progress: p}}, err
	case nk.EventPartial:
		e, err := decodeAs[nk.PartialEvent](data)
		p := &nektev1.PartialEvent{Output: e.Out, ResolvedLevel: string(e.ResolvedLevel)}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_Partial{Partial: p}}, err
	case nk.EventComplete:
		e, err := decodeAs[nk.CompleteEvent](data)
		c := &nektev1.CompleteEvent{TaskId: e.TaskID, Meta: resultMeta(e.Meta),
			Output: &nektev1.MultiLevelResult{Minimal: e.Out.Minimal, Compact: e.Out.Compact, Full: e.Out.Full}}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_Complete{Complete: c}}, err
	case nk.EventError:
		e, err := decodeAs[nk.ErrorEvent](data)
		x := &nektev1.ErrorEvent{TaskId: e.TaskID, Code: int32(e.Code), Message: e.Message}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_Error{Error: x}}, err
	default:
		return nil, nil
	}
}

// lifecycleEvent maps the events of the task's state machine: cancelled, suspended,
// resumed and status_change. Other names give nil.
func lifecycleEvent(name string, data []byte) (*nektev1.DelegateEvent, error) {
	switch name {
	case nk.EventCancelled:
		e, err := decodeAs[nk.CancelledEvent](data)
		c := &nektev1.CancelledEvent{TaskId: e.TaskID, Reason: e.Reason, PreviousStatus: string(e.PreviousStatus)}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_Cancelled{Cancelled: c}}, err
	case nk.EventSuspended:
		e, err := decodeAs[nk.SuspendedEvent](data)
		s := &nektev1.SuspendedEvent{TaskId: e.TaskID, CheckpointAvailable: e.CheckpointAvailable}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_Suspended{Suspended: s}}, err
	case nk.EventResumed:
		e, err := decodeAs[nk.ResumedEvent](data)
		r := &nektev1.ResumedEvent{TaskId: e.TaskID, FromCheckpoint: e.FromCheckpoint}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_Resumed{Resumed: r}}, err
	case nk.EventStatusChange:
		e, err := decodeAs[nk.StatusChangeEvent](data)
		s := &nektev1.StatusChangeEvent{TaskId: e.TaskID, FromStatus: string(e.From), ToStatus: string(e.To), Reason: e.Reason}
		return &nektev1.DelegateEvent{Event: &nektev1.DelegateEvent_StatusChange{StatusChange: s}}, err
	default:
		return nil, nil
	}
}

func decodeAs[T any](data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// clamp32 converts an integer of the JSON form to a proto int32, saturating.
func clamp32[T int | int64](v T) int32 {
	return int32(max(min(int64(v), math.MaxInt32), math.MinInt32))
}

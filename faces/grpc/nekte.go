package grpcface

import (
	"context"
	"encoding/json"

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
	gw Gateway
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
	if out.Err != nil && out.Err.Code() == schemas.CodeVersionMismatch {
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
	case out.Err != nil:
		return toStatus(out.Err, out.TraceID)
	case !out.Streamed:
		return toStatus(errNekteResult, out.TraceID)
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
	resp := &nektev1.VerifyResponse{TaskId: res.TaskID, Status: res.Status, Data: out.Result}
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
func (n *nekteGRPC) run(ctx context.Context, traceID, method string, params any, send func([]byte) error) faces.Invoked {
	if traceID == "" {
		traceID = observability.TraceIDOf(ctx)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return faces.Invoked{Err: gateway.NewError(schemas.CodeInternal).Wrap(err), TraceID: traceID}
	}
	rt := n.gw.Acquire()
	defer rt.Release()
	principal, err := rt.Authenticator().Authenticate(ctx, credentials(ctx))
	if err != nil {
		return faces.Invoked{Err: gateway.AsError(err), TraceID: traceID}
	}
	if _, ok := rt.Table().Lookup(nk.MethodDiscover); !ok {
		return faces.Invoked{Err: errNekteDisabled, TraceID: traceID}
	}
	who := faces.Caller{Principal: principal, Zone: gateway.ZoneInternal, Protocol: gateway.ProtocolGRPC, TraceID: traceID}
	return rt.Pipeline().RunAs(ctx, who, method, raw, send)
}

// decodeOutcome decodes a call's JSON result into result, or returns its error as a gRPC
// status.
func decodeOutcome(out faces.Invoked, result any) error {
	if out.Err != nil {
		return toStatus(out.Err, out.TraceID)
	}
	if err := json.Unmarshal(out.Result, result); err != nil {
		return toStatus(errNekteResult.Wrap(err), out.TraceID)
	}
	return nil
}

// versionMismatch answers a VERSION_MISMATCH error with InvokeResponse.error: the
// current hash and the capability's level-2 entry from error.data. An error without that
// data (a backend's own) stays a status.
func versionMismatch(out faces.Invoked) (*nektev1.InvokeResponse, error) {
	var d nk.VersionMismatchData
	raw, err := json.Marshal(out.Err.Data())
	if err == nil {
		err = json.Unmarshal(raw, &d)
	}
	if err != nil || d.CurrentHash == "" {
		return nil, toStatus(out.Err, out.TraceID)
	}
	ie := &nektev1.InvokeError{Code: int32(out.Err.Code()), Message: out.Err.Message(), CurrentHash: d.CurrentHash}
	if d.Schema.ID != "" {
		ie.Schema = capabilityFull(&d.Schema)
	}
	return &nektev1.InvokeResponse{Error: ie}, nil
}

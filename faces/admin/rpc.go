package admin

import (
	"context"
	"net/http"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/auth/approval"
	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// adminCall is one admin JSON-RPC request being served.
type adminCall struct {
	approvals *approval.Admin       // admin.approvals.* (auth/approval)
	revoke    *auth.RevocationAdmin // admin.revocations.* (auth)
	keys      *auth.KeyRingAdmin    // admin.keys.* (auth)
	ops       operatorCall          // admin.status, admin.backends, ... (ops_rpc.go)
}

// serveRPC serves POST /rpc: the caller is authenticated with the configuration's
// authenticator (zone operator) before the body is read, then each request of the body
// (single or batch) runs an admin method, which requires approvals.admin_scope
// (admin.revocations.*: auth.revocation.admin_scope; admin.keys.*: auth.keyring.admin_scope).
func (f *Face) serveRPC(w http.ResponseWriter, r *http.Request) {
	rt := f.gw.Acquire()
	defer rt.Release()
	traceID := observability.NewTraceID()
	w.Header().Set("X-Trace-Id", traceID)
	if !faces.IsJSON(r.Header.Get("Content-Type")) {
		faces.WriteHTTPError(w, http.StatusUnsupportedMediaType,
			gateway.Errorf(schemas.CodeUnsupportedMedia, "Content-Type must be application/json"), traceID, faces.EncodingJSON)
		return
	}
	principal, err := rt.Authenticator().Authenticate(r.Context(), faces.HTTPCredentials(r, gateway.ZoneOperator))
	if err != nil {
		faces.WriteChallenge(w, gateway.AsError(err), traceID, faces.EncodingJSON, "")
		return
	}
	pipe := rt.Pipeline()
	body, err := faces.ReadBody(r, pipe.MaxBodyBytes, nil)
	if err != nil {
		faces.WriteBodyError(w, f.log, err, pipe.MaxBodyBytes, traceID, faces.EncodingJSON)
		return
	}
	ac := &adminCall{
		approvals: approval.NewAdmin(rt.ApprovalStore(), principal, rt.ApprovalScope()),
		revoke:    auth.NewRevocationAdmin(f.gw.Revocations(), principal),
		keys:      auth.NewKeyRingAdmin(f.gw.KeyRing(), principal, f.log),
		ops:       operatorCall{ops: f.ops, principal: principal},
	}
	faces.WriteResponse(w, f.log, ac.serve(r.Context(), body, pipe.Limits, traceID), faces.EncodingJSON, traceID)
}

// serve decodes body and answers each of its requests.
func (ac *adminCall) serve(ctx context.Context, body []byte, lim jsonrpc.Limits, traceID string) []byte {
	payload, derr := jsonrpc.Decode(body, lim)
	if derr != nil {
		return faces.AppendError(nil, derr.ID, faces.FromDecodeError(derr), traceID)
	}
	var out []byte
	if payload.Batch {
		out = append(out, '[')
	}
	for _, m := range payload.Members {
		if m.Err == nil && m.Request.IsNotification() {
			_, _ = ac.run(ctx, &m.Request) // a notification runs; it is not answered
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		if m.Err != nil {
			out = faces.AppendError(out, m.Err.ID, faces.FromDecodeError(m.Err), traceID)
			continue
		}
		res, err := ac.run(ctx, &m.Request)
		if err != nil {
			out = faces.AppendError(out, m.Request.ID, gateway.AsError(err), traceID)
			continue
		}
		out = jsonrpc.AppendResult(out, m.Request.ID, res)
	}
	switch {
	case payload.Batch && len(out) == 1:
		return nil // only notifications: nothing to answer (HTTP 204)
	case payload.Batch:
		out = append(out, ']')
	}
	return out
}

// run answers one admin request with its result's JSON.
func (ac *adminCall) run(ctx context.Context, req *jsonrpc.Request) ([]byte, error) {
	switch {
	case auth.IsRevocationMethod(req.Method):
		return ac.revoke.Run(ctx, req.Method, req.Params) // its own scope, auth.revocation.admin_scope
	case auth.IsKeyMethod(req.Method):
		return ac.keys.Run(ctx, req.Method, req.Params) // its own scope, auth.keyring.admin_scope
	case approval.IsAdminMethod(req.Method):
		return ac.approvals.Run(ctx, req.Method, req.Params)
	case IsOperatorMethod(req.Method):
		return ac.ops.run(ctx, req.Method, req.Params) // server.admin.operator_scope
	default:
		return nil, gateway.Errorf(schemas.CodeMethodNotFound, "Method not found")
	}
}

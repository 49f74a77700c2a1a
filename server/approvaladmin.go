package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Methods of the admin JSON-RPC API (POST /rpc on the admin listener). The boundary never
// routes them: they exist on the admin listener only.
const (
	methodApprovalsList    = "admin.approvals.list"
	methodApprovalsApprove = "admin.approvals.approve"
	methodApprovalsDeny    = "admin.approvals.deny"
)

// adminCall is one admin JSON-RPC request being served.
type adminCall struct {
	store     approvalStore
	principal gateway.Principal
	scope     string
	revoke    *revocationAdmin // admin.revocations.* (revokeadmin.go)
}

// handleAdminRPC serves POST /rpc on the admin listener: the caller is authenticated with
// the boundary's authenticator (zone operator) before the body is read, then each request
// of the body (single or batch) runs an admin method, which requires approvals.admin_scope
// (admin.revocations.*: auth.revocation.admin_scope).
func (s *Server) handleAdminRPC(w http.ResponseWriter, r *http.Request) {
	rt := s.acquire()
	defer rt.release()
	traceID := observability.NewTraceID()
	w.Header().Set("X-Trace-Id", traceID)
	if !faces.IsJSON(r.Header.Get("Content-Type")) {
		faces.WriteHTTPError(w, http.StatusUnsupportedMediaType,
			gateway.Errorf(schemas.CodeUnsupportedMedia, "Content-Type must be application/json"), traceID, faces.EncodingJSON)
		return
	}
	principal, err := rt.auth.Authenticate(r.Context(), faces.HTTPCredentials(r, gateway.ZoneOperator))
	if err != nil {
		faces.WriteChallenge(w, gateway.AsError(err), traceID, faces.EncodingJSON, "")
		return
	}
	body, err := faces.ReadBody(r, rt.cfg.JSONRPC.MaxBodyBytes, nil)
	if err != nil {
		faces.WriteBodyError(w, s.log, err, rt.cfg.JSONRPC.MaxBodyBytes, traceID, faces.EncodingJSON)
		return
	}
	ac := &adminCall{
		store:     newApprovalStore(s.kv, rt.cfg.Approvals, rt.now, rt.log),
		principal: principal,
		scope:     rt.cfg.Approvals.AdminScope,
		revoke:    &revocationAdmin{list: s.revocations, principal: principal},
	}
	faces.WriteResponse(w, s.log, ac.serve(r.Context(), body, rt.limits, traceID), faces.EncodingJSON, traceID)
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
	if payload.Batch {
		out = append(out, ']')
	}
	return out
}

// run answers one admin request with its result's JSON.
func (ac *adminCall) run(ctx context.Context, req *jsonrpc.Request) ([]byte, error) {
	if isRevocationMethod(req.Method) {
		return ac.revoke.run(ctx, req) // its own scope, auth.revocation.admin_scope
	}
	switch req.Method {
	case methodApprovalsList, methodApprovalsApprove, methodApprovalsDeny:
	default:
		return nil, gateway.Errorf(schemas.CodeMethodNotFound, "Method not found")
	}
	if !slices.Contains(ac.principal.Scopes, ac.scope) {
		return nil, gateway.NewError(schemas.CodeInsufficientScope).With("missing_scopes", []string{ac.scope})
	}
	var v any
	var err error
	switch req.Method {
	case methodApprovalsList:
		v, err = ac.list(ctx, req.Params)
	case methodApprovalsApprove:
		v, err = ac.decide(ctx, req.Params, approvalApproved, "note")
	default:
		v, err = ac.decide(ctx, req.Params, approvalDenied, "reason")
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// approvalList is the result of admin.approvals.list.
type approvalList struct {
	Pending []approvalRecord `json:"pending"`
	// Decided holds the recent decisions, newest first, when include_decided was true.
	Decided []approvalRecord `json:"decided,omitempty"`
}

// list serves admin.approvals.list {include_decided?}.
func (ac *adminCall) list(ctx context.Context, params []byte) (*approvalList, error) {
	p, err := adminParams(params, "include_decided")
	if err != nil {
		return nil, err
	}
	var include bool
	if raw, ok := p["include_decided"]; ok {
		if err := json.Unmarshal(raw, &include); err != nil {
			return nil, invalidAdminParam("include_decided", "must be a boolean")
		}
	}
	out := &approvalList{}
	if out.Pending, err = ac.store.pending(ctx); err != nil {
		return nil, gateway.AsError(err)
	}
	if include {
		if out.Decided, err = ac.store.decided(ctx); err != nil {
			return nil, gateway.AsError(err)
		}
	}
	return out, nil
}

// decide serves admin.approvals.approve {id, note?} and admin.approvals.deny {id, reason?}.
func (ac *adminCall) decide(ctx context.Context, params []byte, status approvalStatus, noteKey string) (*approvalRecord, error) {
	p, err := adminParams(params, "id", noteKey)
	if err != nil {
		return nil, err
	}
	var id, note string
	if json.Unmarshal(p["id"], &id) != nil || id == "" {
		return nil, invalidAdminParam("id", "must be a non-empty string")
	}
	if raw, ok := p[noteKey]; ok && json.Unmarshal(raw, &note) != nil {
		return nil, invalidAdminParam(noteKey, "must be a string")
	}
	rec, err := ac.store.decide(ctx, id, status, ac.principal.Subject, note)
	if de, ok := errors.AsType[*approvalDecidedError](err); ok {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "Approval already %s", de.Status).
			With("reason", "already_decided").With("status", string(de.Status)).With("approval_id", id)
	}
	switch {
	case errors.Is(err, errApprovalUnknown):
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "Unknown approval id").With("reason", "unknown_id").With("approval_id", id)
	case err != nil:
		return nil, gateway.AsError(err)
	case rec.Status != status: // its time ran out before the decision
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "Approval already %s", rec.Status).
			With("reason", "already_decided").With("status", string(rec.Status)).With("approval_id", id)
	}
	return &rec, nil
}

// adminParams decodes params as an object whose member names are exactly among allowed
// (case-sensitive; jsonrpc.Decode has already refused duplicate names).
func adminParams(params []byte, allowed ...string) (map[string]json.RawMessage, error) {
	p := map[string]json.RawMessage{}
	if len(params) > 0 && json.Unmarshal(params, &p) != nil {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "params must be an object")
	}
	for k := range p {
		if !slices.Contains(allowed, k) {
			return nil, gateway.Errorf(schemas.CodeInvalidParams, "Invalid params").
				With("problem", "unknown member").With("allowed", allowed)
		}
	}
	return p, nil
}

func invalidAdminParam(name, problem string) *gateway.Error {
	return gateway.Errorf(schemas.CodeInvalidParams, "Invalid params").With("param", name).With("problem", problem)
}

package approval

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/gatehouse-dev/gatehouse/gateway/adminparams"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Methods of the admin JSON-RPC API (POST /rpc on the admin listener) that decide
// approvals. The boundary never routes them: they exist on the admin listener only.
const (
	MethodList    = "admin.approvals.list"
	MethodApprove = "admin.approvals.approve"
	MethodDeny    = "admin.approvals.deny"
)

// IsAdminMethod reports whether method is one of the admin.approvals.* methods.
func IsAdminMethod(method string) bool {
	switch method {
	case MethodList, MethodApprove, MethodDeny:
		return true
	}
	return false
}

// Admin serves admin.approvals.* for one admin caller, whose subject is recorded as who
// decided. Every method requires approvals.admin_scope.
type Admin struct {
	store     Store
	principal gateway.Principal
	scope     string
}

// NewAdmin returns the admin.approvals.* methods over store, for the admin caller
// principal, who must hold scope (approvals.admin_scope).
func NewAdmin(store Store, principal gateway.Principal, scope string) *Admin {
	return &Admin{store: store, principal: principal, scope: scope}
}

// Run answers one admin.approvals.* request — method with its raw params — with its
// result's JSON; on failure the error is a *gateway.Error for the caller (INVALID_PARAMS
// naming the param or why the approval cannot be decided, INSUFFICIENT_SCOPE,
// METHOD_NOT_FOUND for a method IsAdminMethod does not know).
func (ac *Admin) Run(ctx context.Context, method string, params []byte) ([]byte, error) {
	if !IsAdminMethod(method) {
		return nil, gateway.Errorf(schemas.CodeMethodNotFound, "Method not found")
	}
	if !slices.Contains(ac.principal.Scopes, ac.scope) {
		return nil, gateway.NewError(schemas.CodeInsufficientScope).With("missing_scopes", []string{ac.scope})
	}
	var v any
	var err error
	switch method {
	case MethodList:
		v, err = ac.list(ctx, params)
	case MethodApprove:
		v, err = ac.decide(ctx, params, Approved, "note")
	default:
		v, err = ac.decide(ctx, params, Denied, "reason")
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// List is the result of admin.approvals.list.
type List struct {
	Pending []Record `json:"pending"`
	// Decided holds the recent decisions, newest first, when include_decided was true.
	Decided []Record `json:"decided,omitempty"`
}

// list serves admin.approvals.list {include_decided?}.
func (ac *Admin) list(ctx context.Context, params []byte) (*List, error) {
	p, err := adminparams.Object(params, "include_decided")
	if err != nil {
		return nil, err
	}
	var include bool
	if raw, ok := p["include_decided"]; ok {
		if err := json.Unmarshal(raw, &include); err != nil {
			return nil, adminparams.Invalid("include_decided", "must be a boolean")
		}
	}
	out := &List{}
	if out.Pending, err = ac.store.Pending(ctx); err != nil {
		return nil, gateway.AsError(err)
	}
	if include {
		if out.Decided, err = ac.store.Decided(ctx); err != nil {
			return nil, gateway.AsError(err)
		}
	}
	return out, nil
}

// decide serves admin.approvals.approve {id, note?} and admin.approvals.deny {id, reason?}.
func (ac *Admin) decide(ctx context.Context, params []byte, status Status, noteKey string) (*Record, error) {
	p, err := adminparams.Object(params, "id", noteKey)
	if err != nil {
		return nil, err
	}
	var id, note string
	if json.Unmarshal(p["id"], &id) != nil || id == "" {
		return nil, adminparams.Invalid("id", "must be a non-empty string")
	}
	if raw, ok := p[noteKey]; ok && json.Unmarshal(raw, &note) != nil {
		return nil, adminparams.Invalid(noteKey, "must be a string")
	}
	rec, err := ac.store.Decide(ctx, id, status, ac.principal.Subject, note)
	if de, ok := errors.AsType[*DecidedError](err); ok {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "Approval already %s", de.Status).
			With("reason", "already_decided").With("status", string(de.Status)).With("approval_id", id)
	}
	switch {
	case errors.Is(err, ErrUnknown):
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "Unknown approval id").With("reason", "unknown_id").With("approval_id", id)
	case err != nil:
		return nil, gateway.AsError(err)
	case rec.Status != status: // its time ran out before the decision
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "Approval already %s", rec.Status).
			With("reason", "already_decided").With("status", string(rec.Status)).With("approval_id", id)
	}
	return &rec, nil
}

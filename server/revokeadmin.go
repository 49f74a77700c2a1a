package server

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Methods of the admin JSON-RPC API that manage the revocation list.
const (
	methodRevocationsAdd    = "admin.revocations.add"
	methodRevocationsList   = "admin.revocations.list"
	methodRevocationsRemove = "admin.revocations.remove"
)

func isRevocationMethod(method string) bool {
	switch method {
	case methodRevocationsAdd, methodRevocationsList, methodRevocationsRemove:
		return true
	}
	return false
}

// revocationAdmin serves admin.revocations.* for one admin caller, whose subject is
// recorded as who revoked. Every method requires auth.revocation.admin_scope.
type revocationAdmin struct {
	list      *auth.Revocations
	principal gateway.Principal
}

// revocationList is the result of admin.revocations.list.
type revocationList struct {
	// Revocations are the live entries, newest first.
	Revocations []auth.Revocation `json:"revocations"`
	MaxEntries  int               `json:"max_entries"`
}

// run answers one admin.revocations.* request with its result's JSON.
func (ra *revocationAdmin) run(ctx context.Context, req *jsonrpc.Request) ([]byte, error) {
	if scope := ra.list.Config().AdminScope; !slices.Contains(ra.principal.Scopes, scope) {
		return nil, gateway.NewError(schemas.CodeInsufficientScope).With("missing_scopes", []string{scope})
	}
	var v any
	var err error
	switch req.Method {
	case methodRevocationsAdd:
		v, err = ra.add(ctx, req.Params)
	case methodRevocationsList:
		v, err = ra.listAll(ctx, req.Params)
	default:
		v, err = ra.remove(ctx, req.Params)
	}
	if err != nil {
		return nil, revocationError(err, ra.list.Config().MaxEntries)
	}
	return json.Marshal(v)
}

// add serves admin.revocations.add {jti | sub, expires_at? | ttl?, reason?}.
func (ra *revocationAdmin) add(ctx context.Context, params []byte) (*auth.Revocation, error) {
	p, err := adminParams(params, "jti", "sub", "expires_at", "ttl", "reason")
	if err != nil {
		return nil, err
	}
	req := auth.RevokeRequest{By: ra.principal.Subject}
	if req.JTI, req.Subject, err = revocationTarget(p); err != nil {
		return nil, err
	}
	if raw, ok := p["expires_at"]; ok {
		if req.ExpiresAt, err = parseExpiresAt(raw); err != nil {
			return nil, err
		}
	}
	if raw, ok := p["ttl"]; ok {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, invalidAdminParam("ttl", `must be a duration string such as "90m" or "24h"`)
		}
		if req.TTL, err = time.ParseDuration(s); err != nil || req.TTL <= 0 {
			return nil, invalidAdminParam("ttl", `must be a positive duration such as "90m" or "24h"`)
		}
	}
	if raw, ok := p["reason"]; ok && json.Unmarshal(raw, &req.Reason) != nil {
		return nil, invalidAdminParam("reason", "must be a string")
	}
	rec, err := ra.list.Revoke(ctx, req)
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// listAll serves admin.revocations.list {}.
func (ra *revocationAdmin) listAll(ctx context.Context, params []byte) (*revocationList, error) {
	if _, err := adminParams(params); err != nil {
		return nil, err
	}
	recs, err := ra.list.List(ctx)
	if err != nil {
		return nil, err
	}
	return &revocationList{Revocations: recs, MaxEntries: ra.list.Config().MaxEntries}, nil
}

// remove serves admin.revocations.remove {jti | sub}.
func (ra *revocationAdmin) remove(ctx context.Context, params []byte) (*auth.Revocation, error) {
	p, err := adminParams(params, "jti", "sub")
	if err != nil {
		return nil, err
	}
	jti, sub, err := revocationTarget(p)
	if err != nil {
		return nil, err
	}
	rec, err := ra.list.Remove(ctx, jti, sub, ra.principal.Subject)
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// revocationTarget reads the jti and sub params: exactly one, a non-empty string.
func revocationTarget(p map[string]json.RawMessage) (jti, sub string, err error) {
	rawJTI, hasJTI := p["jti"]
	rawSub, hasSub := p["sub"]
	switch {
	case hasJTI == hasSub:
		return "", "", invalidAdminParam("jti", "exactly one of jti and sub is required")
	case hasJTI && (json.Unmarshal(rawJTI, &jti) != nil || jti == ""):
		return "", "", invalidAdminParam("jti", "must be a non-empty string")
	case hasSub && (json.Unmarshal(rawSub, &sub) != nil || sub == ""):
		return "", "", invalidAdminParam("sub", "must be a non-empty string")
	}
	return jti, sub, nil
}

// maxNumericDate is 9999-12-31T23:59:59Z, the last second RFC 3339 can write.
const maxNumericDate = 253402300799

// parseExpiresAt reads expires_at: an RFC 3339 time, or a NumericDate (seconds since the
// epoch, as a token's exp claim gives it).
func parseExpiresAt(raw json.RawMessage) (time.Time, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return time.Time{}, invalidAdminParam("expires_at", "must be an RFC 3339 time or seconds since the epoch (a token's exp)")
		}
		return t, nil
	}
	var secs float64
	if json.Unmarshal(raw, &secs) != nil || secs <= 0 || secs > maxNumericDate {
		return time.Time{}, invalidAdminParam("expires_at", "must be an RFC 3339 time or seconds since the epoch (a token's exp)")
	}
	whole, frac := math.Modf(secs)
	return time.Unix(int64(whole), int64(frac*1e9)), nil
}

// revocationError maps an error of the revocation list to the admin API's error.
func revocationError(err error, maxEntries int) *gateway.Error {
	if pe, ok := errors.AsType[*auth.RevocationParamError](err); ok {
		return invalidAdminParam(pe.Param, pe.Problem)
	}
	switch {
	case errors.Is(err, auth.ErrRevocationsFull):
		return gateway.Errorf(schemas.CodeOverloaded, "Revocation list full").
			With("reason", "revocations_full").With("max_entries", maxEntries)
	case errors.Is(err, auth.ErrNotRevoked):
		return gateway.Errorf(schemas.CodeInvalidParams, "Not revoked").With("reason", "not_revoked")
	default:
		return gateway.AsError(err)
	}
}

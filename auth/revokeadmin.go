package auth

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway/adminparams"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Methods of the admin JSON-RPC API that manage the revocation list (RevocationAdmin).
const (
	MethodRevocationsAdd    = "admin.revocations.add"
	MethodRevocationsList   = "admin.revocations.list"
	MethodRevocationsRemove = "admin.revocations.remove"
)

// IsRevocationMethod reports whether method is one of the admin.revocations.* methods.
func IsRevocationMethod(method string) bool {
	switch method {
	case MethodRevocationsAdd, MethodRevocationsList, MethodRevocationsRemove:
		return true
	}
	return false
}

// RevocationAdmin serves admin.revocations.* for one admin caller, whose subject is
// recorded as who revoked. Every method requires auth.revocation.admin_scope.
type RevocationAdmin struct {
	list      *Revocations
	principal gateway.Principal
}

// NewRevocationAdmin returns the admin.revocations.* methods over list, for the admin
// caller principal.
func NewRevocationAdmin(list *Revocations, principal gateway.Principal) *RevocationAdmin {
	return &RevocationAdmin{list: list, principal: principal}
}

// RevocationList is the result of admin.revocations.list.
type RevocationList struct {
	// Revocations are the live entries, newest first.
	Revocations []Revocation `json:"revocations"`
	MaxEntries  int          `json:"max_entries"`
}

// Run answers one admin.revocations.* request — method with its raw params — with its
// result's JSON; on failure the error is a *gateway.Error for the caller (INVALID_PARAMS
// naming the param, INSUFFICIENT_SCOPE, OVERLOADED for a full list, METHOD_NOT_FOUND for
// a method IsRevocationMethod does not know).
func (ra *RevocationAdmin) Run(ctx context.Context, method string, params []byte) ([]byte, error) {
	if !IsRevocationMethod(method) {
		return nil, gateway.Errorf(schemas.CodeMethodNotFound, "Method not found")
	}
	if scope := ra.list.Config().AdminScope; !slices.Contains(ra.principal.Scopes, scope) {
		return nil, gateway.NewError(schemas.CodeInsufficientScope).With("missing_scopes", []string{scope})
	}
	var v any
	var err error
	switch method {
	case MethodRevocationsAdd:
		v, err = ra.add(ctx, params)
	case MethodRevocationsList:
		v, err = ra.listAll(ctx, params)
	default:
		v, err = ra.remove(ctx, params)
	}
	if err != nil {
		return nil, revocationError(err, ra.list.Config().MaxEntries)
	}
	return json.Marshal(v)
}

// add serves admin.revocations.add {jti | sub, expires_at? | ttl?, reason?}.
func (ra *RevocationAdmin) add(ctx context.Context, params []byte) (*Revocation, error) {
	p, err := adminparams.Object(params, "jti", "sub", "expires_at", "ttl", "reason")
	if err != nil {
		return nil, err
	}
	req := RevokeRequest{By: ra.principal.Subject}
	if req.JTI, req.Subject, err = adminTarget(p); err != nil {
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
			return nil, adminparams.Invalid("ttl", `must be a duration string such as "90m" or "24h"`)
		}
		if req.TTL, err = time.ParseDuration(s); err != nil || req.TTL <= 0 {
			return nil, adminparams.Invalid("ttl", `must be a positive duration such as "90m" or "24h"`)
		}
	}
	if err := adminparams.Optional(p, "reason", &req.Reason, "must be a string"); err != nil {
		return nil, err
	}
	rec, err := ra.list.Revoke(ctx, req)
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// listAll serves admin.revocations.list {}.
func (ra *RevocationAdmin) listAll(ctx context.Context, params []byte) (*RevocationList, error) {
	if _, err := adminparams.Object(params); err != nil {
		return nil, err
	}
	recs, err := ra.list.List(ctx)
	if err != nil {
		return nil, err
	}
	return &RevocationList{Revocations: recs, MaxEntries: ra.list.Config().MaxEntries}, nil
}

// remove serves admin.revocations.remove {jti | sub}.
func (ra *RevocationAdmin) remove(ctx context.Context, params []byte) (*Revocation, error) {
	p, err := adminparams.Object(params, "jti", "sub")
	if err != nil {
		return nil, err
	}
	jti, sub, err := adminTarget(p)
	if err != nil {
		return nil, err
	}
	rec, err := ra.list.Remove(ctx, jti, sub, ra.principal.Subject)
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// adminTarget reads the jti and sub params: exactly one, a non-empty string.
func adminTarget(p map[string]json.RawMessage) (jti, sub string, err error) {
	rawJTI, hasJTI := p["jti"]
	rawSub, hasSub := p["sub"]
	switch {
	case hasJTI == hasSub:
		return "", "", adminparams.Invalid("jti", "exactly one of jti and sub is required")
	case hasJTI && (json.Unmarshal(rawJTI, &jti) != nil || jti == ""):
		return "", "", adminparams.Invalid("jti", "must be a non-empty string")
	case hasSub && (json.Unmarshal(rawSub, &sub) != nil || sub == ""):
		return "", "", adminparams.Invalid("sub", "must be a non-empty string")
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
			return time.Time{}, adminparams.Invalid("expires_at", "must be an RFC 3339 time or seconds since the epoch (a token's exp)")
		}
		return t, nil
	}
	var secs float64
	if json.Unmarshal(raw, &secs) != nil || secs <= 0 || secs > maxNumericDate {
		return time.Time{}, adminparams.Invalid("expires_at", "must be an RFC 3339 time or seconds since the epoch (a token's exp)")
	}
	whole, frac := math.Modf(secs)
	return time.Unix(int64(whole), int64(frac*1e9)), nil
}

// revocationError maps an error of the revocation list to the admin API's error.
func revocationError(err error, maxEntries int) *gateway.Error {
	if pe, ok := errors.AsType[*RevocationParamError](err); ok {
		return adminparams.Invalid(pe.Param, pe.Problem)
	}
	switch {
	case errors.Is(err, ErrRevocationsFull):
		return gateway.Errorf(schemas.CodeOverloaded, "Revocation list full").
			With("reason", "revocations_full").With("max_entries", maxEntries)
	case errors.Is(err, ErrNotRevoked):
		return gateway.Errorf(schemas.CodeInvalidParams, "Not revoked").With("reason", "not_revoked")
	default:
		return gateway.AsError(err)
	}
}

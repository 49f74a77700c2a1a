package auth

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"

	"github.com/gatehouse-dev/gatehouse/gateway/adminparams"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Methods of the admin JSON-RPC API that manage the gateway's signing keys (KeyRingAdmin).
const (
	MethodKeysList   = "admin.keys.list"
	MethodKeysRotate = "admin.keys.rotate"
)

// IsKeyMethod reports whether method is one of the admin.keys.* methods.
func IsKeyMethod(method string) bool {
	return method == MethodKeysList || method == MethodKeysRotate
}

// KeyRingAdmin serves admin.keys.* for one admin caller, who is logged as who rotated.
// Every method requires auth.keyring.admin_scope.
type KeyRingAdmin struct {
	ring      *KeyRing
	principal gateway.Principal
	log       *slog.Logger
}

// NewKeyRingAdmin returns the admin.keys.* methods over ring (nil: auth.keyring is not
// configured), for the admin caller principal; log receives each rotation.
func NewKeyRingAdmin(ring *KeyRing, principal gateway.Principal, log *slog.Logger) *KeyRingAdmin {
	return &KeyRingAdmin{ring: ring, principal: principal, log: log}
}

// KeyList is the result of admin.keys.list.
type KeyList struct {
	Issuer string    `json:"issuer"`
	Keys   []KeyInfo `json:"keys"`
}

// KeyRotation is the result of admin.keys.rotate.
type KeyRotation struct {
	// KID is the new signing key's.
	KID string `json:"kid"`
	// Withdrawn are the keys taken out of the ring at once (all the previous ones with
	// revoke; else only a key published ahead that never signed).
	Withdrawn []string `json:"withdrawn,omitempty"`
	// Keys is the ring after the rotation.
	Keys []KeyInfo `json:"keys"`
}

// Run answers one admin.keys.* request — method with its raw params — with its result's
// JSON; on failure the error is a *gateway.Error for the caller (INVALID_PARAMS naming the
// param, or with reason key_files for a ring of key files, or no_keyring without one;
// INSUFFICIENT_SCOPE; METHOD_NOT_FOUND for a method IsKeyMethod does not know).
func (ka *KeyRingAdmin) Run(ctx context.Context, method string, params []byte) ([]byte, error) {
	if !IsKeyMethod(method) {
		return nil, gateway.Errorf(schemas.CodeMethodNotFound, "Method not found")
	}
	scope := DefaultKeyAdminScope
	if ka.ring != nil {
		scope = ka.ring.AdminScope()
	}
	if !slices.Contains(ka.principal.Scopes, scope) {
		return nil, gateway.NewError(schemas.CodeInsufficientScope).With("missing_scopes", []string{scope})
	}
	if ka.ring == nil {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "The gateway has no key ring (auth.keyring)").With("reason", "no_keyring")
	}
	var v any
	var err error
	if method == MethodKeysList {
		v, err = ka.list(params)
	} else {
		v, err = ka.rotate(ctx, params)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// list serves admin.keys.list {}.
func (ka *KeyRingAdmin) list(params []byte) (*KeyList, error) {
	if _, err := adminparams.Object(params); err != nil {
		return nil, err
	}
	return &KeyList{Issuer: ka.ring.Issuer(), Keys: ka.ring.Keys()}, nil
}

// rotate serves admin.keys.rotate {revoke?, reason?}.
func (ka *KeyRingAdmin) rotate(ctx context.Context, params []byte) (*KeyRotation, error) {
	p, err := adminparams.Object(params, "revoke", "reason")
	if err != nil {
		return nil, err
	}
	var revoke bool
	var reason string
	if err := adminparams.Optional(p, "revoke", &revoke, "must be a boolean"); err != nil {
		return nil, err
	}
	if err := adminparams.Optional(p, "reason", &reason, "must be a string"); err != nil {
		return nil, err
	}
	kid, withdrawn, err := ka.ring.RotateNow(ctx, revoke)
	switch {
	case errors.Is(err, ErrKeyFiles):
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "The key ring's keys are files: rotate them by changing the files and reloading").
			With("reason", "key_files")
	case err != nil:
		return nil, gateway.AsError(err)
	}
	ka.log.WarnContext(ctx, "signing key rotated", "kid", kid, "revoke", revoke, "withdrawn", withdrawn,
		"by", ka.principal.Subject, "reason", reason)
	return &KeyRotation{KID: kid, Withdrawn: withdrawn, Keys: ka.ring.Keys()}, nil
}

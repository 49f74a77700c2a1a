// Package adminparams reads the params of the admin JSON-RPC methods served on the admin
// listener (auth's, auth/approval's and the operator methods of faces/admin): an object
// whose members are named, each refused with the gateway's INVALID_PARAMS error saying
// which and why. It imports only gateway and schemas.
package adminparams

import (
	"encoding/json"
	"slices"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Object returns params as an object's members, refusing any member not in allowed; no
// params is an empty object.
func Object(params []byte, allowed ...string) (map[string]json.RawMessage, error) {
	p := map[string]json.RawMessage{}
	if len(params) > 0 && json.Unmarshal(params, &p) != nil {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "params must be an object")
	}
	for k := range p {
		if !slices.Contains(allowed, k) {
			return nil, gateway.Errorf(schemas.CodeInvalidParams, "Invalid params").
				With("problem", "unknown member").With("param", k).With("allowed", allowed)
		}
	}
	return p, nil
}

// Invalid is the INVALID_PARAMS error of the member name, with the problem found.
func Invalid(name, problem string) *gateway.Error {
	return gateway.Errorf(schemas.CodeInvalidParams, "Invalid params").With("param", name).With("problem", problem)
}

// Optional decodes the member name of p into v when present, refusing a value v cannot
// hold with Invalid(name, problem).
func Optional(p map[string]json.RawMessage, name string, v any, problem string) error {
	if raw, ok := p[name]; ok && json.Unmarshal(raw, v) != nil {
		return Invalid(name, problem)
	}
	return nil
}

package capability

import (
	"encoding/json"
	"errors"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend/inputschema"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Reasons a schema is refused when a snapshot is built.
var (
	errNotJSON   = errors.New("not valid JSON")
	errNotSchema = errors.New("not a JSON Schema (an object or a boolean)")
)

// notFound is CAPABILITY_NOT_FOUND for id.
func notFound(id string) *gateway.Error {
	return gateway.NewError(schemas.CodeCapabilityNotFound).With("cap", id)
}

// versionMismatch is VERSION_MISMATCH with the data the reference client reads: the
// current hash and the capability's L2 entry.
func versionMismatch(e *entry) *gateway.Error {
	return gateway.NewError(schemas.CodeVersionMismatch).With("current_hash", e.Hash).With("schema", e.schema())
}

// schema returns the entry's L2 form.
func (e *entry) schema() nekte.CapSchema {
	s := nekte.CapSchema{ID: e.ID, Cat: e.Category, H: e.Hash, Desc: e.desc, Cost: e.costHint(), Input: e.Input, Output: e.Output}
	for _, ex := range e.Examples {
		s.Examples = append(s.Examples, nekte.Example{In: ex.In, Out: ex.Out})
	}
	return s
}

// costHint is the entry's cost as the wire carries it: nil while nothing was observed.
func (e *entry) costHint() *nekte.Cost {
	c := e.cost.hint()
	if c == (Cost{}) {
		return nil
	}
	return &nekte.Cost{AvgMs: c.AvgMs, AvgTokens: c.AvgTokens}
}

// paramError turns a *nekte.ParamError into INVALID_PARAMS naming the field.
func paramError(err error) *gateway.Error {
	if pe, ok := errors.AsType[*nekte.ParamError](err); ok {
		return invalidParams(pe.Field, pe.Reason)
	}
	return gateway.NewError(schemas.CodeInvalidParams).Wrap(err)
}

// invalidParams is INVALID_PARAMS with data {field, reason}.
func invalidParams(field, reason string) *gateway.Error {
	e := gateway.NewError(schemas.CodeInvalidParams).With("reason", reason)
	if field != "" {
		e = e.With("field", field)
	}
	return e
}

// inputInvalid is INVALID_PARAMS for an input its schema refuses, with data {path, reason}
// and the failing keyword when there is one.
func inputInvalid(err error) *gateway.Error {
	if ie, ok := errors.AsType[*inputError](err); ok {
		e := gateway.NewError(schemas.CodeInvalidParams).With("path", ie.Path).With("reason", ie.Reason)
		if ie.Keyword != "" {
			e = e.With("keyword", ie.Keyword)
		}
		return e
	}
	return gateway.NewError(schemas.CodeInvalidParams).Wrap(err)
}

// methodError is the error of a capability's method as Invoke returns it: a refusal of the
// input by the method's own check (Capability.InputChecked) is described like Invoke's
// own, by its first failure in NEKTE's notation ("in.items[2]"), with every failure the
// method reported kept in data.errors; anything else is returned as it is.
func methodError(err error) *gateway.Error {
	ge := gateway.AsError(err)
	ie, ok := errors.AsType[*inputschema.Error](err)
	if !ok || ge.Code() != schemas.CodeInvalidParams {
		return ge
	}
	out := inputInvalid(nekteInputError(ie))
	if errs, ok := ge.Data()["errors"]; ok {
		out = out.With("errors", errs)
	}
	return out.Wrap(ie)
}

// toolFailed is TOOL_FAILED for an MCP result with isError set, shaped as the MCP target
// shapes it for JSON-RPC callers.
func toolFailed(c *Capability, result json.RawMessage) *gateway.Error {
	kind := schemas.KindOf(schemas.CodeToolFailed)
	return gateway.WireError(kind.Code, kind.Message, map[string]any{"upstream": c.Source, "tool": c.ID, "result": result})
}

// badResult is an internal error for a result that is not what its capability returns.
func badResult(c *Capability, err error) *gateway.Error {
	return gateway.Errorf(schemas.CodeInternal, "The capability's result could not be read").With("cap", c.ID).Wrap(err)
}

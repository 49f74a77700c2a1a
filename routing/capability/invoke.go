package capability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Invoke runs nekte.invoke: it finds the capability p.Cap (CAPABILITY_NOT_FOUND when
// there is none), checks p.H against the current hash when given (VERSION_MISMATCH with
// the current hash and the L2 entry when stale), validates p.In against the input schema
// (INVALID_PARAMS naming the failing path; an absent in is {}) unless its method checks
// the input itself (Capability.InputChecked: its refusal is reported the same way), runs the capability
// through inv, collects a streamed result into an array (at most
// invoke.max_collected_bytes), builds the result's levels (MCP tool results by the MCP
// rules, anything else by the JSON rules of codecs/nekte), resolves them against p.Budget,
// and records the call's latency and tokens in the cost hint.
//
// Errors are *gateway.Error values. Errors of the Invoker are returned as they are (an MCP
// tool that reports isError fails with TOOL_FAILED, data {upstream, tool, result}, as the
// MCP target makes it; a CallToolResult with isError set that reaches Invoke as a value is
// turned into the same error).
func (r *Registry) Invoke(ctx context.Context, inv Invoker, p nekte.InvokeParams) (*nekte.InvokeResult, error) {
	if err := p.Validate(); err != nil {
		return nil, paramError(err)
	}
	e, ok := r.current().byID[p.Cap]
	if !ok {
		return nil, notFound(p.Cap)
	}
	if nekte.HashMismatch(p.H, e.Hash) {
		return nil, versionMismatch(e)
	}
	in := bytes.TrimSpace(p.In)
	if len(in) == 0 {
		in = emptyObject
	}
	if !e.InputChecked {
		if err := r.validator(e).check(in); err != nil {
			return nil, inputInvalid(err)
		}
	}
	start := time.Now()
	res, err := inv.Invoke(ctx, e.capability(), in)
	if err != nil {
		return nil, methodError(err)
	}
	value, err := collect(ctx, res, r.cfg.Invoke.MaxCollectedBytes)
	if err != nil {
		return nil, err
	}
	levels, err := e.levels(value)
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	out, level, tokens := nekte.Resolve(levels, p.Budget)
	e.cost.observe(elapsed, tokens)
	return &nekte.InvokeResult{Out: out, ResolvedLevel: level, Meta: nekte.Meta{Ms: elapsed.Milliseconds(), TokensUsed: tokens}}, nil
}

var emptyObject = json.RawMessage(`{}`)

// validator returns the entry's compiled input schema, compiling (or finding) it once.
func (r *Registry) validator(e *entry) *validator {
	if v := e.validator.Load(); v != nil {
		return v
	}
	v := r.validators.get(e.schemaKey, e.Input)
	e.validator.Store(v)
	return v
}

// Levels returns the levels of a capability's result value (the JSON-RPC result of its
// method, a streamed result collected into an array): for an MCP tool, the MCP rules of
// codecs/nekte (a CallToolResult with isError set is the error TOOL_FAILED); for anything
// else, the JSON rules. nekte.delegate uses it to build a complete event's out.
func (c *Capability) Levels(value json.RawMessage) (nekte.Levels, error) {
	if len(bytes.TrimSpace(value)) == 0 {
		value = json.RawMessage("null")
	}
	if c.Kind == KindMCPTool {
		lv, err := nekte.MCPLevels(value)
		switch {
		case err == nil && isToolError(value):
			return nekte.Levels{}, toolFailed(c, value)
		case err == nil:
			return lv, nil
		case !errors.Is(err, nekte.ErrNotCallToolResult):
			return nekte.Levels{}, badResult(c, err)
		}
	}
	lv, err := nekte.JSONLevels(value)
	if err != nil {
		return nekte.Levels{}, badResult(c, err)
	}
	return lv, nil
}

func (e *entry) levels(value json.RawMessage) (nekte.Levels, error) {
	return e.Levels(value)
}

// isToolError reports whether a CallToolResult has isError set.
func isToolError(res json.RawMessage) bool {
	if !bytes.Contains(res, []byte(`"isError"`)) {
		return false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(res, &r) == nil && r.IsError
}

// collect returns a result's value; a stream's messages are gathered into a JSON array of
// at most limit bytes, and the stream is closed.
func collect(ctx context.Context, res *gateway.Result, limit int64) (json.RawMessage, error) {
	if res.Stream == nil {
		return res.Value, nil
	}
	s := res.Stream
	defer func() { _ = s.Close() }()
	arr := []byte{'['}
	for n := 0; ; n++ {
		msg, err := s.Recv(ctx)
		if errors.Is(err, io.EOF) {
			return append(arr, ']'), nil
		}
		if err != nil {
			return nil, gateway.AsError(err)
		}
		if n > 0 {
			arr = append(arr, ',')
		}
		if arr = append(arr, msg...); int64(len(arr))+1 > limit {
			return nil, gateway.NewError(schemas.CodePayloadTooLarge).With("limit", "invoke.max_collected_bytes").
				With("max", limit).With("recovery_hint", "DELEGATE_FOR_STREAMS")
		}
	}
}

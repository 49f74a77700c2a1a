package mcpface

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// The requests of 2026-07-28 callers that can carry multi round trips (mrtr.go):
// tools/call and prompts/get, whose results mcp-go lets a handler return whole.
// resources/read cannot: mcp-go's resource handlers return contents only, so an upstream
// request during a read is refused with that reason (peer.go).

// callToolMRTR serves a tools/call of a 2026-07-28 caller as a multi round-trip call.
func (f *Face) callToolMRTR(ctx context.Context, method string, req mcp.CallToolRequest, p mrtrParams) (*mcp.CallToolResult, error) {
	st := postCallStream(ctx) // this request's response, for the progress and logs while it waits (poststream.go)
	defer st.finish()         // before mcp-go writes the result
	ctx = withCallStream(ctx, st)
	out := f.mrtr.run(ctx, p, func(rctx context.Context, live func() context.Context) mrtrOutcome {
		if meta := req.Params.Meta; meta != nil && meta.ProgressToken != nil {
			rctx = f.relayProgressTo(rctx, meta.ProgressToken, live)
		}
		inv := f.invokeTool(rctx, method, req)
		return mrtrOutcome{Result: inv.Result, Err: inv.Err, TraceID: inv.TraceID}
	})
	if out.needsInput() {
		res, mr, err := out.inputRequired()
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Result: res, MultiRoundTripResult: mr, Content: []mcp.Content{}}, nil
	}
	return toolResult(ctx, out.Result, out.Err, out.TraceID)
}

// getPromptMRTR serves a prompts/get of a 2026-07-28 caller as a multi round-trip call.
func (f *Face) getPromptMRTR(ctx context.Context, target *mcpbackend.Target, params getParams, meta *mcp.Meta, p mrtrParams) (*mcp.GetPromptResult, error) {
	out := f.mrtr.run(ctx, p, func(rctx context.Context, _ func() context.Context) mrtrOutcome {
		inv := f.invokeRead(rctx, target, mcpbackend.MethodPromptsGet, params, meta)
		return mrtrOutcome{Result: inv.Result, Err: inv.Err, TraceID: inv.TraceID}
	})
	if out.needsInput() {
		res, mr, err := out.inputRequired()
		if err != nil {
			return nil, err
		}
		return &mcp.GetPromptResult{Result: res, MultiRoundTripResult: mr, Messages: []mcp.PromptMessage{}}, nil
	}
	raw, err := readResult(ctx, out.Result, out.Err, out.TraceID)
	if err != nil {
		return nil, err
	}
	res, err := mcp.ParseGetPromptResult(&raw)
	if err != nil {
		return nil, gateway.Errorf(schemas.CodeInternal, "The upstream's prompts/get result is malformed").Wrap(err)
	}
	return res, nil
}

// relayProgressTo forwards the upstream's progress notifications for a multi round-trip
// call to the caller's request now waiting on it (live), under the caller's progress
// token; while none waits (the call is parked) they are dropped.
func (f *Face) relayProgressTo(ctx context.Context, token mcp.ProgressToken, live func() context.Context) context.Context {
	return mcpbackend.WithProgress(ctx, func(p mcpbackend.Progress) {
		lctx := live()
		if lctx == nil {
			return
		}
		f.sendProgress(lctx, callStreamOf(lctx), progressParams(token, p.Progress, p.Total, p.Message))
	})
}

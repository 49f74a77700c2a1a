package mcpface

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// callTool runs a tool call through the pipeline as the MCP caller; a tool that failed is
// returned as its CallToolResult (isError), as MCP clients expect.
func (f *Face) callTool(method string) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if p, ok := f.mrtrRequest(ctx, string(mcp.MethodToolsCall), req.Params.Name, req.Params.MultiRoundTripParams); ok {
			return f.callToolMRTR(ctx, method, req, p) // mrtrface.go
		}
		// Upstream logs and requests during the call reach this session; its progress and
		// log messages go on the call's own POST response over streamable HTTP (st,
		// poststream.go), through mcp-go's session on the other transports (st nil).
		st := postCallStream(ctx)
		ctx = f.peerWith(ctx, st)
		if meta := req.Params.Meta; meta != nil && meta.ProgressToken != nil {
			ctx = f.relayProgress(ctx, meta.ProgressToken, st)
		}
		out := f.invokeTool(ctx, method, req)
		st.finish() // what was relayed before the result precedes it; what comes later is dropped
		return toolResult(ctx, out.Result, out.Err, out.TraceID)
	}
}

// invokeTool runs the tool call req through the pipeline as the MCP caller of ctx.
func (f *Face) invokeTool(ctx context.Context, method string, req mcp.CallToolRequest) faces.Invoked {
	args, err := json.Marshal(req.GetRawArguments())
	if err != nil || string(args) == "null" {
		args = []byte("{}")
	}
	principal, _ := ctx.Value(principalKey{}).(gateway.Principal)
	rt := f.gw.Acquire()
	defer rt.Release()
	if meta := req.Params.Meta; meta != nil && rt.Pipeline().Tracer != nil {
		ctx = observability.ExtractMeta(ctx, meta.AdditionalFields) // params._meta.traceparent
	}
	return rt.Pipeline().RunAs(ctx, faces.Caller{Principal: principal, Zone: callerZone(ctx), Protocol: gateway.ProtocolMCP}, method, args, nil)
}

// toolResult is the answer to a tools/call of the request of ctx whose pipeline run gave
// result or failed with e: a tool that failed is its CallToolResult (isError); any
// other error is recorded on the request for refusalWriter.
func toolResult(ctx context.Context, result []byte, e *gateway.Error, traceID string) (*mcp.CallToolResult, error) {
	raw := json.RawMessage(result)
	if e != nil {
		if e.Code() != schemas.CodeToolFailed {
			if fr := faceRequestOf(ctx); fr != nil {
				fr.refusal.Store(&mcpRefusal{err: e, traceID: traceID})
			}
			return nil, e
		}
		raw, _ = json.Marshal(e.Data()["result"])
	}
	return mcp.ParseCallToolResult(&raw)
}

// relayProgress forwards the upstream's progress notifications for this call to the
// calling session, under the caller's own progress token: onto st, the call's response
// (fastcall.go, poststream.go), or, with st nil, through mcp-go's session.
func (f *Face) relayProgress(ctx context.Context, token mcp.ProgressToken, st *callStream) context.Context {
	return mcpbackend.WithProgress(ctx, func(p mcpbackend.Progress) {
		f.sendProgress(ctx, st, progressParams(token, p.Progress, p.Total, p.Message))
	})
}

// progressParams are the params of a notifications/progress under token; total and
// message only when there are some.
func progressParams[N int | float64](token any, progress N, total *N, message string) map[string]any {
	params := map[string]any{"progressToken": token, "progress": progress}
	if total != nil {
		params["total"] = *total
	}
	if message != "" {
		params["message"] = message
	}
	return params
}

// sendProgress sends a progress notification onto st, a call's response, or with st nil
// through mcp-go's session of ctx.
func (f *Face) sendProgress(ctx context.Context, st *callStream, params map[string]any) {
	if st != nil {
		st.send(progressNotification(params))
		return
	}
	if err := f.srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), params); err != nil {
		f.log.Debug("relaying MCP progress", "err", err)
	}
}

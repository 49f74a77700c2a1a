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
		args, err := json.Marshal(req.GetRawArguments())
		if err != nil || string(args) == "null" {
			args = []byte("{}")
		}
		principal, _ := ctx.Value(principalKey{}).(gateway.Principal)
		ctx = f.withPeer(ctx) // upstream logs and requests during the call reach this session
		if meta := req.Params.Meta; meta != nil && meta.ProgressToken != nil {
			ctx = f.relayProgress(ctx, meta.ProgressToken, nil)
		}
		rt := f.gw.Acquire()
		if meta := req.Params.Meta; meta != nil && rt.Pipeline().Tracer != nil {
			ctx = observability.ExtractMeta(ctx, meta.AdditionalFields) // params._meta.traceparent
		}
		out := rt.Pipeline().RunAs(ctx, faces.Caller{Principal: principal, Zone: callerZone(ctx), Protocol: gateway.ProtocolMCP}, method, args, nil)
		rt.Release()
		raw := json.RawMessage(out.Result)
		if out.Err != nil {
			if out.Err.Code() != schemas.CodeToolFailed {
				if fr := faceRequestOf(ctx); fr != nil {
					fr.refusal = &mcpRefusal{err: out.Err, traceID: out.TraceID}
				}
				return nil, out.Err
			}
			raw, _ = json.Marshal(out.Err.Data()["result"])
		}
		return mcp.ParseCallToolResult(&raw)
	}
}

// relayProgress forwards the upstream's progress notifications for this call to the
// calling session, under the caller's own progress token: onto st, a fast-path call's
// response (fastcall.go), or, with st nil, through mcp-go's session.
func (f *Face) relayProgress(ctx context.Context, token mcp.ProgressToken, st *callStream) context.Context {
	return mcpbackend.WithProgress(ctx, func(p mcpbackend.Progress) {
		params := map[string]any{"progressToken": token, "progress": p.Progress}
		if p.Total != nil {
			params["total"] = *p.Total
		}
		if p.Message != "" {
			params["message"] = p.Message
		}
		if st != nil {
			st.send(progressNotification(params))
			return
		}
		if err := f.srv.SendNotificationToClient(ctx, "notifications/progress", params); err != nil {
			f.log.Debug("relaying MCP progress", "err", err)
		}
	})
}

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

// resources/read, prompts/get and completion/complete on the MCP face run through the
// pipeline as tools/call does: each is the bridge target's read method
// ("<namespace>resources/read", "<namespace>prompts/get", "<namespace>completion/complete";
// mcpbackend.MethodResourcesRead …), run as the MCP caller (its principal and zone,
// protocol MCP), so it is metered, traced, rate-limited, decided by the policy (as the
// resource or prompt it reaches: mcp_resource, mcp_prompt), admitted, broken and given a
// hop token like any call. A refusal reaches the client as the gateway's JSON-RPC error
// (refusal.go).

// readParams are the params of the bridge's resources/read.
type readParams struct {
	URI string `json:"uri"`
}

// getParams are the params of the bridge's prompts/get.
type getParams struct {
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
}

// runRead runs one read method of target with params as the MCP caller of ctx and
// returns its result; an error is the gateway's, recorded on the request for
// refusalWriter.
func (f *Face) runRead(ctx context.Context, target *mcpbackend.Target, op string, params any, meta *mcp.Meta) (json.RawMessage, error) {
	out := f.invokeRead(f.withPeer(ctx), target, op, params, meta) // upstream log messages during the read reach this session
	return readResult(ctx, out.Result, out.Err, out.TraceID)
}

// invokeRead runs one read method of target with params through the pipeline as the MCP
// caller of ctx.
func (f *Face) invokeRead(ctx context.Context, target *mcpbackend.Target, op string, params any, meta *mcp.Meta) faces.Invoked {
	raw, err := json.Marshal(params)
	if err != nil {
		return faces.Invoked{Err: gateway.NewError(schemas.CodeInternal).Wrap(err)}
	}
	principal, _ := ctx.Value(principalKey{}).(gateway.Principal)
	rt := f.gw.Acquire()
	defer rt.Release()
	if meta != nil && rt.Pipeline().Tracer != nil {
		ctx = observability.ExtractMeta(ctx, meta.AdditionalFields) // params._meta.traceparent
	}
	who := faces.Caller{Principal: principal, Zone: callerZone(ctx), Protocol: gateway.ProtocolMCP}
	return rt.Pipeline().RunAs(ctx, who, target.Namespace()+op, raw, nil)
}

// readResult is a read's result, or its error recorded on the request of ctx for
// refusalWriter.
func readResult(ctx context.Context, result []byte, e *gateway.Error, traceID string) (json.RawMessage, error) {
	if e != nil {
		if fr := faceRequestOf(ctx); fr != nil {
			fr.refusal.Store(&mcpRefusal{err: e, traceID: traceID})
		}
		return nil, e
	}
	return result, nil
}

// readResource answers resources/read for a resource or resource template of target.
func (f *Face) readResource(target *mcpbackend.Target) mcpserver.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		raw, err := f.runRead(ctx, target, mcpbackend.MethodResourcesRead, readParams{URI: req.Params.URI}, req.Params.Meta)
		if err != nil {
			return nil, err
		}
		res, err := mcp.ParseReadResourceResult(&raw)
		if err != nil {
			return nil, gateway.Errorf(schemas.CodeInternal, "The upstream's resources/read result is malformed").Wrap(err)
		}
		if fr := faceRequestOf(ctx); fr != nil && mcpserver.IsModernRequest(ctx) {
			fr.read = &res.CacheableResult // its hints, for readHints
		}
		return res.Contents, nil
	}
}

// getPrompt answers prompts/get for a prompt of target.
func (f *Face) getPrompt(target *mcpbackend.Target) mcpserver.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		params := getParams{Name: req.Params.Name, Arguments: req.Params.Arguments}
		if p, ok := f.mrtrRequest(ctx, string(mcp.MethodPromptsGet), req.Params.Name, req.Params.MultiRoundTripParams); ok {
			return f.getPromptMRTR(ctx, target, params, req.Params.Meta, p) // mrtrface.go
		}
		raw, err := f.runRead(ctx, target, mcpbackend.MethodPromptsGet, params, req.Params.Meta)
		if err != nil {
			return nil, err
		}
		res, err := mcp.ParseGetPromptResult(&raw)
		if err != nil {
			return nil, gateway.Errorf(schemas.CodeInternal, "The upstream's prompts/get result is malformed").Wrap(err)
		}
		return res, nil
	}
}

// readHints sets ttlMs and cacheScope on the result of a 2026-07-28 resources/read (a hook
// after it; mcp-go sets 0 and private otherwise): the upstream's ttl — what is left of it
// when the bridge served the result from its read cache —, private unless the upstream
// said public and the answer is the same for every caller the gateway admits (nothing is
// hidden from anyone and the caller came without credentials), as for lists
// (listcache.go). Without an upstream ttl the result is stale at once.
func (f *Face) readHints(ctx context.Context, _ any, _ *mcp.ReadResourceRequest, res *mcp.ReadResourceResult) {
	fr := faceRequestOf(ctx)
	if fr == nil || fr.read == nil || res == nil {
		return
	}
	up := fr.read
	fr.read = nil
	ttl, ok := up.TTL()
	if !ok {
		return
	}
	public := false
	if up.CacheScope == mcp.CacheScopePublic {
		principal, _ := ctx.Value(principalKey{}).(gateway.Principal)
		rt := f.gw.Acquire()
		public = principal.Anonymous && !rt.Visibility().Filters()
		rt.Release()
	}
	scope := mcp.CacheScopePrivate
	if public {
		scope = mcp.CacheScopePublic
	}
	res.SetCacheHints(max(ttl, 0), scope)
}

package server

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

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
// (mcprefusal.go).

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
func (f *mcpFace) runRead(ctx context.Context, target *mcpbackend.Target, op string, params any, meta *mcp.Meta) (json.RawMessage, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	principal, _ := ctx.Value(principalKey{}).(gateway.Principal)
	ctx = f.withPeer(ctx) // upstream log messages during the read reach this session
	rt := f.s.acquire()
	if meta != nil && rt.trace != nil {
		ctx = observability.ExtractMeta(ctx, meta.AdditionalFields) // params._meta.traceparent
	}
	out := rt.runAs(ctx, principal, callerZone(ctx), gateway.ProtocolMCP, target.Namespace()+op, raw, nil)
	rt.release()
	if out.err != nil {
		if fr := faceRequestOf(ctx); fr != nil {
			fr.refusal = &mcpRefusal{err: out.err, traceID: out.traceID}
		}
		return nil, out.err
	}
	return out.result, nil
}

// readResource answers resources/read for a resource or resource template of target.
func (f *mcpFace) readResource(target *mcpbackend.Target) mcpserver.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		raw, err := f.runRead(ctx, target, mcpbackend.MethodResourcesRead, readParams{URI: req.Params.URI}, req.Params.Meta)
		if err != nil {
			return nil, err
		}
		res, err := mcp.ParseReadResourceResult(&raw)
		if err != nil {
			return nil, gateway.Errorf(schemas.CodeInternal, "The upstream's resources/read result is malformed").Wrap(err)
		}
		return res.Contents, nil
	}
}

// getPrompt answers prompts/get for a prompt of target.
func (f *mcpFace) getPrompt(target *mcpbackend.Target) mcpserver.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		params := getParams{Name: req.Params.Name, Arguments: req.Params.Arguments}
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

// visibleResources is the face's resources/list filter: it keeps the resources the caller
// of ctx may read (mcp_resource rules), as visibleTools does for tools.
func (f *mcpFace) visibleResources(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, result *mcp.ListResourcesResult) {
	if result == nil {
		return
	}
	f.filterFor(ctx, func(c faceCaller) {
		result.Resources = keep(result.Resources, func(r mcp.Resource) bool {
			return c.showsRead(mcpbackend.MethodResourcesRead, readParams{URI: r.URI})
		})
	})
}

// visibleTemplates is the face's resources/templates/list filter: it keeps the templates
// whose arguments the caller may complete (mcp_resource rules on the URI template), which
// are those a rule lets it read as their URI template.
func (f *mcpFace) visibleTemplates(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, result *mcp.ListResourceTemplatesResult) {
	if result == nil {
		return
	}
	f.filterFor(ctx, func(c faceCaller) {
		result.ResourceTemplates = keep(result.ResourceTemplates, func(t mcp.ResourceTemplate) bool {
			var uri string
			if t.URITemplate != nil {
				uri = t.URITemplate.Raw()
			}
			ref := mcp.CompleteParams{Ref: mcp.ResourceReference{Type: "ref/resource", URI: uri}}
			return c.showsRead(mcpbackend.MethodCompletionComplete, ref)
		})
	})
}

// visiblePrompts is the face's prompts/list filter: it keeps the prompts the caller of ctx
// may get (mcp_prompt rules).
func (f *mcpFace) visiblePrompts(ctx context.Context, _ any, _ *mcp.ListPromptsRequest, result *mcp.ListPromptsResult) {
	if result == nil {
		return
	}
	f.filterFor(ctx, func(c faceCaller) {
		result.Prompts = keep(result.Prompts, func(p mcp.Prompt) bool {
			return c.showsRead(mcpbackend.MethodPromptsGet, getParams{Name: p.Name})
		})
	})
}

// faceCaller is the caller of a face request as the list filters see it.
type faceCaller struct {
	v         *visibility
	principal gateway.Principal
	zone      gateway.TrustZone
	namespace string // the bridge's method namespace
}

// filterFor calls filter with the caller of ctx, unless nothing is hidden (no policy
// section, no bridge).
func (f *mcpFace) filterFor(ctx context.Context, filter func(c faceCaller)) {
	target := f.target()
	rt := f.s.acquire()
	defer rt.release()
	v := newVisibility(rt.policy, rt.table)
	if !v.filters() || target == nil {
		return
	}
	principal, _ := ctx.Value(principalKey{}).(gateway.Principal)
	filter(faceCaller{v: v, principal: principal, zone: callerZone(ctx), namespace: target.Namespace()})
}

// showsTool reports whether the caller would see a call of the bridged tool.
func (c faceCaller) showsTool(tool string) bool {
	return c.v.shows(c.principal, c.zone, gateway.ProtocolMCP, c.namespace+tool, "")
}

// showsRead reports whether the caller would see the read method op called with params.
func (c faceCaller) showsRead(op string, params any) bool {
	raw, err := json.Marshal(params)
	if err != nil {
		return false
	}
	return c.v.showsCall(c.principal, c.zone, gateway.ProtocolMCP, &gateway.Call{Method: c.namespace + op, Params: raw})
}

// keep returns the items shows keeps, in order, in a new slice.
func keep[T any](items []T, shows func(T) bool) []T {
	kept := make([]T, 0, len(items))
	for _, it := range items {
		if shows(it) {
			kept = append(kept, it)
		}
	}
	return kept
}

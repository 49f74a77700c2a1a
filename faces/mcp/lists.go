package mcpface

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// tools/list, resources/list, resources/templates/list and prompts/list show the caller
// what the policy would let it reach (Visibility): an entry is described as the call that
// runs it — the bridge's namespaced tool or read method, over MCP, as the caller — and
// kept when the policy's filter lets that call through. Listing decides nothing: a call of
// a hidden entry still reaches the policy stage, which refuses it with its own error.

// visibleTools is the face's tools/list filter (an after-list hook, which runs before
// the result is written): it keeps the tools the caller of ctx may see, each run as the
// method namespace+name over MCP. Only the listing is filtered — unlike mcp-go's
// WithToolFilter, which would also answer a hidden tool's tools/call with "tool not
// found": tools/call still reaches the policy stage, which decides and says why. The
// narrowed list is kept for callers of the same view (listcache.go).
func (f *Face) visibleTools(ctx context.Context, _ any, req *mcp.ListToolsRequest, result *mcp.ListToolsResult) {
	if result == nil {
		return
	}
	narrow(f, ctx, string(mcp.MethodToolsList), req, req.Params.Cursor, &result.Tools, &result.NextCursor, &result.CacheableResult,
		func(c faceCaller, t mcp.Tool) bool { return c.showsTool(t.Name) })
}

// visibleResources is the face's resources/list filter: it keeps the resources the caller
// of ctx may read (mcp_resource rules), as visibleTools does for tools.
func (f *Face) visibleResources(ctx context.Context, _ any, req *mcp.ListResourcesRequest, result *mcp.ListResourcesResult) {
	if result == nil {
		return
	}
	narrow(f, ctx, string(mcp.MethodResourcesList), req, req.Params.Cursor, &result.Resources, &result.NextCursor, &result.CacheableResult,
		func(c faceCaller, r mcp.Resource) bool {
			return c.showsRead(mcpbackend.MethodResourcesRead, readParams{URI: r.URI})
		})
}

// visibleTemplates is the face's resources/templates/list filter: it keeps the templates
// whose arguments the caller may complete (mcp_resource rules on the URI template), which
// are those a rule lets it read as their URI template.
func (f *Face) visibleTemplates(ctx context.Context, _ any, req *mcp.ListResourceTemplatesRequest, result *mcp.ListResourceTemplatesResult) {
	if result == nil {
		return
	}
	narrow(f, ctx, string(mcp.MethodResourcesTemplatesList), req, req.Params.Cursor, &result.ResourceTemplates, &result.NextCursor, &result.CacheableResult,
		func(c faceCaller, t mcp.ResourceTemplate) bool {
			var uri string
			if t.URITemplate != nil {
				uri = t.URITemplate.Raw()
			}
			ref := mcp.CompleteParams{Ref: mcp.ResourceReference{Type: "ref/resource", URI: uri}}
			return c.showsRead(mcpbackend.MethodCompletionComplete, ref)
		})
}

// visiblePrompts is the face's prompts/list filter: it keeps the prompts the caller of ctx
// may get (mcp_prompt rules).
func (f *Face) visiblePrompts(ctx context.Context, _ any, req *mcp.ListPromptsRequest, result *mcp.ListPromptsResult) {
	if result == nil {
		return
	}
	narrow(f, ctx, string(mcp.MethodPromptsList), req, req.Params.Cursor, &result.Prompts, &result.NextCursor, &result.CacheableResult,
		func(c faceCaller, p mcp.Prompt) bool {
			return c.showsRead(mcpbackend.MethodPromptsGet, getParams{Name: p.Name})
		})
}

// faceCaller is the caller of a face request as the list filters see it.
type faceCaller struct {
	v         Visibility
	principal gateway.Principal
	zone      gateway.TrustZone
	namespace string // the bridge's method namespace
	// isAgentTool reports whether a tool is an agent operator's (its method is its name).
	isAgentTool func(name string) bool
}

// showsTool reports whether the caller would see a call of the tool: a bridged tool's
// method is namespace + its name, an agent operator's its name.
func (c faceCaller) showsTool(tool string) bool {
	method := c.namespace + tool
	if c.isAgentTool(tool) {
		method = tool
	}
	return c.v.ShowsCall(c.principal, c.zone, gateway.ProtocolMCP, &gateway.Call{Method: method})
}

// showsRead reports whether the caller would see the read method op called with params.
func (c faceCaller) showsRead(op string, params any) bool {
	raw, err := json.Marshal(params)
	if err != nil {
		return false
	}
	return c.v.ShowsCall(c.principal, c.zone, gateway.ProtocolMCP, &gateway.Call{Method: c.namespace + op, Params: raw})
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

package mcpbackend

import "github.com/gatehouse-dev/gatehouse/gateway"

// BackendPrefix names an MCP server as a backend of the breaker, retry and admission
// stages: BackendPrefix + the server's name in routing.mcp.servers ("mcp/files").
const BackendPrefix = "mcp/"

var (
	_ gateway.Describer = (*Target)(nil)
	_ gateway.Backended = (*Target)(nil)
)

// Reaches implements gateway.Describer: the tool, resource or prompt of the catalog call
// reaches (CatalogItem), with the upstream offering it, or the bridge itself (ReachMCP)
// when the catalog does not list it. Without detail the catalog is not looked up and the
// kind is always ReachMCP.
func (t *Target) Reaches(call *gateway.Call, detail bool) gateway.Reach {
	if !detail {
		return gateway.Reach{Kind: gateway.ReachMCP}
	}
	item := t.CatalogItem(call)
	r := gateway.Reach{Kind: gateway.ReachMCP, Server: item.Upstream, Name: item.Name}
	switch item.Kind {
	case ReachTool:
		r.Kind = gateway.ReachMCPTool
	case ReachResource:
		r.Kind = gateway.ReachMCPResource
	case ReachPrompt:
		r.Kind = gateway.ReachMCPPrompt
	case ReachNone:
	}
	return r
}

// Backend implements gateway.Backended: the upstream server offering the tool, resource or
// prompt call reaches, as BackendPrefix + its name, since each server is its own process or
// endpoint; "" when the catalog does not list it (the call fails without reaching one).
func (t *Target) Backend(call *gateway.Call) string {
	upstream := t.CatalogItem(call).Upstream
	if upstream == "" {
		return ""
	}
	return BackendPrefix + upstream
}

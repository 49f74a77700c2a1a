package mcpbackend

import "github.com/gatehouse-dev/gatehouse/gateway"

// BackendPrefix names an MCP server as a backend of the breaker, retry and admission
// stages: BackendPrefix + the server's name in routing.mcp.servers ("mcp/files").
const BackendPrefix = "mcp/"

var (
	_ gateway.Describer = (*Target)(nil)
	_ gateway.Backended = (*Target)(nil)
)

// Backend implements gateway.Backended: the upstream server offering the tool, resource or
// prompt call reaches, as BackendPrefix + its name, since each server is its own process or
// endpoint; "" when the catalog does not list it (the call fails without reaching one).
func (t *Target) Backend(call *gateway.Call) string {
	upstream := t.Reaches(call, true).Server
	if upstream == "" {
		return ""
	}
	return BackendPrefix + upstream
}

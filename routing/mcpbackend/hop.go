package mcpbackend

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

var _ gateway.HopAuthenticated = (*Target)(nil)

// HopAuth implements gateway.HopAuthenticated. The bridge fronts many upstreams; the one a
// call reaches decides, found by the bridge's own routing in its current catalog:
//
//   - MethodToolsCall ({name, arguments}) and "<namespace><tool>": the tool's upstream;
//   - resources/read ({uri}): the resource's upstream, by ReadResource's rule;
//   - prompts/get ({name}): the prompt's upstream;
//   - completion/complete ({ref, …}): the upstream owning the reference, by Complete's
//     rule.
//
// The last three are recognised both as the read methods Invoke serves under the
// namespace (reads.go) and by their bare MCP names, for a face that calls ReadResource,
// GetPrompt or Complete itself and asks for their credential the same way. A call whose upstream cannot be determined (an unknown or colliding name, params of
// the wrong shape) gets HopNone: it reaches no upstream. So do resource subscriptions:
// they are the bridge's, shared by every subscriber and renewed on reconnection, and are
// sent with no caller's credential.
func (t *Target) HopAuth(call *gateway.Call) gateway.HopAuth {
	if u := t.hopUpstream(call); u != nil {
		return u.hop
	}
	return gateway.HopAuth{Mode: gateway.HopNone}
}

// hopUpstream returns the upstream call reaches, or nil. Tools are tried first, as Invoke
// parses a call, so that the two agree even under an empty namespace.
func (t *Target) hopUpstream(call *gateway.Call) *upstream {
	if name, _, _, err := t.parse(call); err == nil && t.readOp(call.Method) == "" {
		if r, err := lookup(t.b.routes.Load().tools, name, "tool"); err == nil {
			return r.up
		}
	}
	var u *upstream
	var err error
	method := call.Method
	if op := t.readOp(method); op != "" {
		method = op
	}
	switch mcp.MCPMethod(method) {
	case mcp.MethodResourcesRead:
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(call.Params, &p) != nil || p.URI == "" {
			return nil
		}
		u, err = t.b.resourceUpstream(p.URI)
	case mcp.MethodPromptsGet:
		var p struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(call.Params, &p) != nil || p.Name == "" {
			return nil
		}
		var r *route
		if r, err = lookup(t.b.routes.Load().prompts, p.Name, "prompt"); err == nil {
			u = r.up
		}
	case mcp.MethodCompletionComplete:
		var req mcp.CompleteParams
		if req, err = parseComplete(call.Params); err == nil {
			u, err = t.b.completeUpstream(&req)
		}
	}
	if err != nil {
		return nil
	}
	return u
}

// hopBearer returns the credential the call whose context is ctx carries on its hop to u:
// the token the dispatch put there (gateway.HopToken), and none at all when u's mode is
// none, whatever ctx carries. The bridge's own requests (initialize, list refreshes,
// pings, subscriptions) run in contexts of its own and carry none.
func (u *upstream) hopBearer(ctx context.Context) string {
	if u.hop.Mode == gateway.HopNone {
		return ""
	}
	return gateway.HopToken(ctx)
}

// hopHeaders is the header function of u's HTTP transports: on the requests carrying a
// call with a hop credential, "Authorization: Bearer <token>", and on those of a traced
// call the traceparent and tracestate of its client span (trace.go). The transports apply
// it after the configured static headers, so it replaces a static Authorization header on
// those requests; every other request keeps the static one.
func (u *upstream) hopHeaders(ctx context.Context) map[string]string {
	h := traceHeaders(ctx)
	if tok := u.hopBearer(ctx); tok != "" {
		if h == nil {
			h = make(map[string]string, 1)
		}
		h["Authorization"] = "Bearer " + tok
	}
	return h
}

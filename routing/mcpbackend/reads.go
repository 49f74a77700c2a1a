package mcpbackend

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// The MCP requests other than tools/call that a face runs through the pipeline are methods
// of the Target too, under its namespace: "<namespace>resources/read" ({uri}),
// "<namespace>prompts/get" ({name, arguments}) and "<namespace>completion/complete" ({ref,
// argument, context}), each answering the upstream's result as it sent it. The suffixes
// contain "/", which no MCP tool name may (tool names are [A-Za-z0-9_.-]), so they
// cannot collide with a tool's method; should an upstream still list a tool of that name,
// the method reaches the read, and the tool stays reachable through tools/call.
const (
	MethodResourcesRead      = "resources/read"
	MethodPromptsGet         = "prompts/get"
	MethodCompletionComplete = "completion/complete"
)

// ReadMethods returns the three methods, under the target's namespace, in the order
// resources/read, prompts/get, completion/complete.
func (t *Target) ReadMethods() []string {
	return []string{t.ns + MethodResourcesRead, t.ns + MethodPromptsGet, t.ns + MethodCompletionComplete}
}

// ReadMethod reports whether method is one of the target's read methods.
func (t *Target) ReadMethod(method string) bool { return t.readOp(method) != "" }

// readOp returns which of the read methods method is ("" for none).
func (t *Target) readOp(method string) string {
	op, ok := strings.CutPrefix(method, t.ns)
	if !ok {
		return ""
	}
	switch op {
	case MethodResourcesRead, MethodPromptsGet, MethodCompletionComplete:
		return op
	}
	return ""
}

// invokeRead serves a read method; errors are those of ReadResource, GetPrompt and
// Complete, and INVALID_PARAMS for params of the wrong shape.
func (t *Target) invokeRead(ctx context.Context, op string, call *gateway.Call) (*gateway.Result, error) {
	params := call.Params
	var raw json.RawMessage
	var err error
	switch op {
	case MethodResourcesRead:
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(params, &p) != nil || p.URI == "" {
			return nil, gateway.NewError(schemas.CodeInvalidParams).With("reason", "resources/read takes {uri}")
		}
		raw, err = t.b.readCached(ctx, p.URI, &call.Principal)
	case MethodPromptsGet:
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(params, &p) != nil || p.Name == "" {
			return nil, gateway.NewError(schemas.CodeInvalidParams).With("reason", "prompts/get takes {name, arguments}")
		}
		raw, err = t.b.GetPrompt(ctx, p.Name, p.Arguments)
	default:
		raw, err = t.b.Complete(ctx, params)
	}
	if err != nil {
		return nil, err
	}
	return gateway.NewResult(raw), nil
}

var _ gateway.Describer = (*Target)(nil)

// reachNone is what a call of the bridge reaches when it names no tool, resource or prompt
// the catalog lists (or when it is not looked up).
var reachNone = gateway.Reach{Kind: gateway.ReachMCP}

// Reaches implements gateway.Describer: the tool, resource or prompt call reaches, by the
// bridge's routing in its current catalog — a tool by "<namespace><tool>" or tools/call
// ({name}), a resource by "<namespace>resources/read" ({uri}: the resource listed with that
// URI, else the upstream of the template whose literal prefix matches it longest, else the
// only upstream offering resources), a prompt by "<namespace>prompts/get" ({name}), and
// the prompt or resource (template) a "<namespace>completion/complete" refers to. Server is
// the upstream offering the item, Name the item's name there (a tool's or prompt's own
// name, a resource's URI or, for a completion of a template's argument, the URI template).
// An item whose upstream is down or whose name collides is still named by the catalog;
// the kind is gateway.ReachMCP, with no server or name, when nothing is reached (unknown
// names, params of the wrong shape).
//
// Without detail the catalog is looked up for the read methods only (an unmatched
// resource or prompt is read-only, which a policy needs to know); any other call is
// gateway.ReachMCP.
func (t *Target) Reaches(call *gateway.Call, detail bool) gateway.Reach {
	if !detail && t.readOp(call.Method) == "" {
		return reachNone
	}
	return t.reached(call)
}

// reached looks up the catalog item call reaches (Reaches).
func (t *Target) reached(call *gateway.Call) gateway.Reach {
	op := t.readOp(call.Method)
	if op == "" {
		name, _, _, err := t.parse(call)
		if err != nil {
			return reachNone
		}
		return t.entry(gateway.ReachMCPTool, t.b.Catalog().Tools, name)
	}
	switch op {
	case MethodResourcesRead:
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(call.Params, &p) != nil || p.URI == "" {
			return reachNone
		}
		return t.resource(p.URI)
	case MethodPromptsGet:
		var p struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(call.Params, &p) != nil || p.Name == "" {
			return reachNone
		}
		return t.entry(gateway.ReachMCPPrompt, t.b.Catalog().Prompts, p.Name)
	default:
		req, err := parseComplete(call.Params)
		if err != nil {
			return reachNone
		}
		switch ref := req.Ref.(type) {
		case mcp.PromptReference:
			return t.entry(gateway.ReachMCPPrompt, t.b.Catalog().Prompts, ref.Name)
		case mcp.ResourceReference:
			if r := t.entry(gateway.ReachMCPResource, t.b.Catalog().ResourceTemplates, ref.URI); r != reachNone {
				return r
			}
			return t.resource(ref.URI)
		}
		return reachNone
	}
}

// entry finds the exposed name in a sorted catalog list.
func (t *Target) entry(kind gateway.ReachKind, list []Entry, name string) gateway.Reach {
	i := sort.Search(len(list), func(i int) bool { return list[i].Name >= name })
	if i == len(list) || list[i].Name != name {
		return reachNone
	}
	return gateway.Reach{Kind: kind, Server: list[i].Upstream, Name: list[i].UpstreamName}
}

// resource names the upstream a resource URI belongs to (ReadResource's rule).
func (t *Target) resource(uri string) gateway.Reach {
	if r := t.entry(gateway.ReachMCPResource, t.b.Catalog().Resources, uri); r != reachNone {
		return r
	}
	u, err := t.b.resourceUpstream(uri)
	if err != nil {
		return reachNone
	}
	return gateway.Reach{Kind: gateway.ReachMCPResource, Server: u.cfg.Name, Name: uri}
}

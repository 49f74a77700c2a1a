package gateway

// ReachKind is the kind of backend a call reaches, as policies and metrics name it.
type ReachKind uint8

// Kinds of backend a call reaches.
const (
	// ReachBuiltin is a method the gateway serves itself (the demo, rpc.*, embedders' targets).
	ReachBuiltin ReachKind = iota
	// ReachGRPC is a method of a gRPC backend.
	ReachGRPC
	// ReachMCPTool is a tool of an MCP upstream.
	ReachMCPTool
	// ReachMCPResource is a resource (or resource template) of an MCP upstream.
	ReachMCPResource
	// ReachMCPPrompt is a prompt of an MCP upstream.
	ReachMCPPrompt
	// ReachMCP is the MCP bridge when the call names no tool, resource or prompt it lists.
	ReachMCP
	// ReachNekte is the NEKTE service: discovery, capabilities, tasks.
	ReachNekte
)

// Reach describes what one call reaches: the kind of backend, and within it the item.
// A target that cannot tell an item leaves it empty.
type Reach struct {
	// Kind is the kind of backend.
	Kind ReachKind
	// Server is the backend's configured name: a gRPC backend's, or the MCP upstream
	// offering the item; empty when the call reaches no known item.
	Server string
	// Name is the item on that backend: the full gRPC method ("pkg.Service/Method"), an MCP
	// tool's or prompt's own name, a resource's URI (or a template's URI template).
	Name string
}

// IsMCP reports whether r is a kind of the MCP bridge.
func (r Reach) IsMCP() bool {
	switch r.Kind {
	case ReachMCP, ReachMCPTool, ReachMCPResource, ReachMCPPrompt:
		return true
	default:
		return false
	}
}

// Describer is implemented by targets that can say what a call reaches (policy subjects,
// metric labels). A target without it reaches a built-in method.
type Describer interface {
	// Reaches describes what call reaches. It must be cheap when detail is false: then only
	// the kind is wanted and a target may skip lookups (a catalog, loaded descriptors).
	Reaches(call *Call, detail bool) Reach
}

// ReachOf returns what call reaches on its routed target: the target's description, or a
// built-in method for a target without one (or none).
func ReachOf(call *Call, detail bool) Reach {
	if d, ok := call.Target.(Describer); ok {
		return d.Reaches(call, detail)
	}
	return Reach{Kind: ReachBuiltin}
}

// Backended is implemented by targets that name the backend a call reaches, whose circuit
// breaker, retry budget and admission queue it belongs to. Targets that run in the process
// (the NEKTE service, built-in methods) implement it to return "": they have none.
type Backended interface {
	// Backend names the backend call reaches ("" for none: the call fails before reaching
	// one, or is served in the process).
	Backend(call *Call) string
}

// BackendOf returns the backend call reaches on its routed target, "" for none. A target
// that does not implement Backended (an embedder's) is its own backend, by its name.
func BackendOf(call *Call) string {
	switch t := call.Target.(type) {
	case nil:
		return ""
	case Backended:
		return t.Backend(call)
	default:
		return t.Name()
	}
}

// Unretryable is implemented by targets some of whose calls must never be retried by the
// gateway even when they did not reach a backend (a call that starts a long-running task,
// or is made on a task's behalf).
type Unretryable interface {
	// NotRetryable reports whether call must not be retried.
	NotRetryable(call *Call) bool
}

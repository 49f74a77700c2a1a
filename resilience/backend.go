package resilience

import "github.com/gatehouse-dev/gatehouse/gateway"

// BackendOf names the backend a routed call reaches: the key of its circuit breaker, its
// retry budget and its admission queue. The stages default to gateway.BackendOf, where the
// target names it (gateway.Backended: a gRPC backend by its name, an MCP tool by the
// upstream server that offers it); tests pass their own. It returns "" for a call that
// reaches no backend outside the process (a built-in method, the NEKTE service itself):
// the breaker and retry stages pass such calls straight through.
//
// The names must come from the configuration and the targets, never from what a caller
// sent, so the number of breakers and budgets stays bounded.
type BackendOf func(call *gateway.Call) string

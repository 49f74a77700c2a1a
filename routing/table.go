package routing

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/a2a"
	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Table maps method names to targets. Build it with Add, then only read it.
type Table struct {
	methods  map[string]gateway.Target
	prefixes []prefixRoute // longest prefix first
}

// prefixRoute sends every method name under prefix to target (a backend exposing a whole
// service resolves the rest of the name itself).
type prefixRoute struct {
	prefix string
	target gateway.Target
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{methods: make(map[string]gateway.Target)} }

// AddPrefix routes every method name starting with prefix, that no exact route claims, to
// t. Among prefixes the longest match wins; adding the same prefix twice is an error.
func (tb *Table) AddPrefix(prefix string, t gateway.Target) error {
	for _, p := range tb.prefixes {
		if p.prefix == prefix {
			return fmt.Errorf("method prefix %q is served by both %q and %q", prefix, p.target.Name(), t.Name())
		}
	}
	tb.prefixes = append(tb.prefixes, prefixRoute{prefix, t})
	sort.SliceStable(tb.prefixes, func(i, j int) bool { return len(tb.prefixes[i].prefix) > len(tb.prefixes[j].prefix) })
	return nil
}

// Add routes method to t. Adding a method twice is an error naming both targets.
func (tb *Table) Add(method string, t gateway.Target) error {
	if prev, ok := tb.methods[method]; ok {
		return fmt.Errorf("method %q is served by both %q and %q", method, prev.Name(), t.Name())
	}
	tb.methods[method] = t
	return nil
}

// Lookup returns the target for method: its exact route, else the longest prefix route.
func (tb *Table) Lookup(method string) (gateway.Target, bool) {
	if t, ok := tb.methods[method]; ok {
		return t, true
	}
	for _, p := range tb.prefixes {
		if strings.HasPrefix(method, p.prefix) {
			return p.target, true
		}
	}
	return nil, false
}

// Names reports whether method has a route of its own (Add), not only a prefix route: the
// names it holds are a bounded set, fit to be a metric's label.
func (tb *Table) Names(method string) bool {
	_, ok := tb.methods[method]
	return ok
}

// Methods returns the routed method names, sorted.
func (tb *Table) Methods() []string {
	out := make([]string, 0, len(tb.methods))
	for m := range tb.methods {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Targets returns each distinct target once, ordered by name.
func (tb *Table) Targets() []gateway.Target {
	seen := make(map[gateway.Target]bool)
	var out []gateway.Target
	add := func(t gateway.Target) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, t := range tb.methods {
		add(t)
	}
	for _, p := range tb.prefixes {
		add(p.target)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// MCP returns the MCP bridge's target the table routes (the faces publish its catalog, the
// metrics count its upstreams); nil when there is none.
func (tb *Table) MCP() *mcpbackend.Target {
	for _, t := range tb.Targets() {
		if mt, ok := t.(*mcpbackend.Target); ok {
			return mt
		}
	}
	return nil
}

// Agents returns the agent link's target the table routes (the MCP face lists its
// operators as tools); nil when there is none.
func (tb *Table) Agents() *agentlink.Target {
	for _, t := range tb.Targets() {
		if at, ok := t.(*agentlink.Target); ok {
			return at
		}
	}
	return nil
}

// A2A returns the upstream A2A agents' targets the table routes, ordered by name (the MCP
// face lists their skills as tools); nil when there are none, or tb is nil.
func (tb *Table) A2A() []*a2a.Target {
	if tb == nil {
		return nil
	}
	var out []*a2a.Target
	for _, t := range tb.Targets() {
		if at, ok := t.(*a2a.Target); ok {
			out = append(out, at)
		}
	}
	return out
}

// Route is the routing stage: it sets call.Target from the table, or fails the call with
// METHOD_NOT_FOUND.
func (tb *Table) Route(next gateway.Handler) gateway.Handler {
	return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
		t, ok := tb.Lookup(call.Method)
		if !ok {
			return nil, errMethodNotFound
		}
		call.Target = t
		return next(ctx, call)
	}
}

var errMethodNotFound = gateway.NewError(schemas.CodeMethodNotFound)

// Dispatch is the last handler of the pipeline: it invokes the routed target.
func Dispatch(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	if call.Target == nil {
		return nil, errMethodNotFound
	}
	return call.Target.Invoke(ctx, call)
}

package mcpbackend

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend/inputschema"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// This file is the bridge's input validation. Every call of a tool reaches the upstream
// through Target.Invoke — the JSON-RPC method "<namespace><tool>", MCP's tools/call
// (the /mcp face, `gatehouse stdio`), tool.v1 ToolInvocation on the gRPC face, and the
// capability layer (nekte.invoke, nekte.delegate) — and Target.Invoke checks the
// arguments against the tool's inputSchema before the upstream sees them.
//
// The schemas are compiled when the upstream's tool list is loaded, once per catalog
// version (a tool whose version did not change keeps its compiled schema across
// reloads), within the upstream's input_schema bounds and with no external $ref loaded.
// A tool whose schema cannot be compiled is withheld: it is left out of the catalog (so
// out of tools/list, nekte.discover and tool.v1 ListTools), calling it fails with
// CAPABILITY_NOT_FOUND naming the reason, and the reason is logged once per catalog load.

// withheldTool is a tool left out of the catalog, and why.
type withheldTool struct {
	name   string // the upstream's name for it
	reason string
}

// WithheldTool is a tool an upstream lists that the bridge does not serve.
type WithheldTool struct {
	// Upstream is the server listing it; Tool its name there.
	Upstream string
	Tool     string
	// Reason says why its inputSchema cannot be used.
	Reason string
}

// Withheld returns the tools the upstreams list whose inputSchema cannot be used, in
// configuration order, then by the order the upstream listed them.
func (b *Bridge) Withheld() []WithheldTool {
	var out []WithheldTool
	for _, u := range b.ups {
		sc := u.cat.Load()
		if sc == nil {
			continue
		}
		for _, w := range sc.withheld {
			out = append(out, WithheldTool{Upstream: u.cfg.Name, Tool: w.name, Reason: w.reason})
		}
	}
	return out
}

// WithheldByUpstream counts, by upstream name, the tools each lists that the bridge does
// not serve; an upstream whose catalog is in and withholds none counts 0, so the series a
// dashboard watches falls back to zero once the upstream fixes its schemas.
func (b *Bridge) WithheldByUpstream() map[string]int {
	out := make(map[string]int, len(b.ups))
	for _, u := range b.ups {
		if sc := u.cat.Load(); sc != nil {
			out[u.cfg.Name] = len(sc.withheld)
		}
	}
	return out
}

// compileInputs compiles the input schema of every tool in next, reusing prev's compiled
// schema of a tool whose version (SchemaVersion) did not change, and moves each tool whose
// schema cannot be used from next.tools to next.withheld, logging why.
func (u *upstream) compileInputs(next, prev *serverCatalog) {
	old := map[string]string{} // name → version, of prev's compiled tools
	if prev != nil {
		for _, e := range prev.tools {
			old[e.key] = e.version
		}
	}
	lim := inputschema.Limits{MaxBytes: u.cfg.InputSchema.MaxBytes, MaxDepth: u.cfg.InputSchema.MaxDepth, RequireObject: true}
	inputs := make(map[string]*inputschema.Schema, len(next.tools))
	kept := make([]rawEntry, 0, len(next.tools))
	var withheld []withheldTool
	for _, e := range next.tools {
		if v, ok := old[e.key]; ok && v == e.version && prev.inputs[e.key] != nil {
			inputs[e.key] = prev.inputs[e.key]
			kept = append(kept, e)
			continue
		}
		s, err := compileTool(e.def, lim)
		if err != nil {
			withheld = append(withheld, withheldTool{name: e.key, reason: err.Error()})
			u.log.Warn("MCP tool withheld: its inputSchema cannot be used", "tool", e.key, "reason", err.Error())
			continue
		}
		inputs[e.key] = s
		kept = append(kept, e)
	}
	next.tools, next.inputs, next.withheld = kept, inputs, withheld
}

// compileTool compiles a tool definition's inputSchema.
func compileTool(def json.RawMessage, lim inputschema.Limits) (*inputschema.Schema, error) {
	var d struct {
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(def, &d); err != nil {
		return nil, &inputschema.CompileError{Reason: "the tool definition is not an object"}
	}
	if len(d.InputSchema) == 0 || bytes.Equal(bytes.TrimSpace(d.InputSchema), []byte("null")) {
		return nil, &inputschema.CompileError{Reason: "the tool has no inputSchema"}
	}
	return inputschema.Compile(d.InputSchema, lim)
}

// emptyArgs stands for absent arguments: MCP reads them as an empty object.
var emptyArgs = []byte("{}")

// checkInput checks a call's arguments against the tool's compiled inputSchema. A tool
// the bridge does not route is left to CallTool to report, unless it is withheld, which
// fails here with CAPABILITY_NOT_FOUND and the reason. Arguments the schema refuses fail
// with INVALID_PARAMS (invalidInput). A routed tool whose compiled schema is missing — its
// upstream withheld it in a list reload the routes do not show yet — is refused too:
// nothing reaches an upstream unchecked.
func (b *Bridge) checkInput(name string, args json.RawMessage) error {
	r, ok := b.routes.Load().tools[name]
	if !ok {
		return b.withheldError(name)
	}
	if r.up == nil {
		return nil // a collision: CallTool reports it
	}
	var s *inputschema.Schema
	if sc := r.up.cat.Load(); sc != nil {
		s = sc.inputs[r.original]
	}
	if s == nil {
		if err := b.withheldError(name); err != nil {
			return err
		}
		return gateway.NewError(schemas.CodeCapabilityNotFound).With("tool", name).
			With("reason", "the tool's inputSchema is not loaded")
	}
	in := bytes.TrimSpace(args)
	if len(in) == 0 || bytes.Equal(in, []byte("null")) {
		in = emptyArgs
	}
	err := s.Check(in, r.up.cfg.InputSchema.MaxErrors)
	if err == nil {
		return nil
	}
	return invalidInput(name, err)
}

// withheldError returns CAPABILITY_NOT_FOUND naming why name is withheld, or nil when no
// upstream withholds a tool that name would expose.
func (b *Bridge) withheldError(name string) error {
	for _, u := range b.ups {
		sc := u.cat.Load()
		if sc == nil {
			continue
		}
		n := u.cfg.Names
		for _, w := range sc.withheld {
			if name == w.name || name == n.Prefix+n.Separator+w.name {
				return gateway.NewError(schemas.CodeCapabilityNotFound).With("tool", name).With("upstream", u.cfg.Name).
					With("reason", "withheld: "+w.reason)
			}
		}
	}
	return nil
}

// invalidInput is INVALID_PARAMS for arguments a tool's inputSchema refuses: data names the
// tool, the first failure (path as a JSON pointer into the arguments, keyword, reason) and
// every failure reported (errors, at most input_schema.max_errors; more counts the rest).
// It wraps the *inputschema.Error, so that the capability layer can describe it in its own
// notation.
func invalidInput(tool string, err error) error {
	ie, ok := errors.AsType[*inputschema.Error](err)
	if !ok {
		return gateway.NewError(schemas.CodeInvalidParams).With("tool", tool).Wrap(err)
	}
	list := make([]map[string]string, 0, len(ie.Violations))
	for _, v := range ie.Violations {
		list = append(list, map[string]string{"path": v.Pointer(), "keyword": v.Keyword, "reason": v.Reason})
	}
	first := ie.Violations[0]
	e := gateway.NewError(schemas.CodeInvalidParams).With("tool", tool).
		With("path", first.Pointer()).With("keyword", first.Keyword).With("reason", first.Reason).
		With("errors", list)
	if ie.More > 0 {
		e = e.With("more", ie.More)
	}
	return e.Wrap(ie)
}

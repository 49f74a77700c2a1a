package mcpface

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// The operators of the compute agents connected over the agent link are tools of the face
// beside the bridged ones: each is named by its method (agents.namespace + the operator's
// id, "agent.sha256"), described by the operator's description and input schema, and its
// output schema is that of the call's result (task_id, job_id, agent, output, data_refs …).
// tools/call runs it through the same pipeline as a JSON-RPC call of the method (policy,
// limits, the agent target) on mcp-go's path, never the fast path. A call of an operator no
// agent offers any more gets NO_AGENT from the agent target; a bridged tool of the same name
// wins.
//
// The list follows the hub (Hub.OnChange): when the operators offered change — an
// agent connecting or leaving here, or on another replica sharing the state store — it
// republishes its tools after mcp_face.tools_changed_delay, so a burst of changes makes one
// publish, and mcp-go sends notifications/tools/list_changed to every session. A
// tools/list or tools/call after a change it has not republished yet rebuilds the list
// first (a generation compare when nothing changed).

// setTools publishes the bridged tools the last publish built and the agents' operators
// as they are now. f.toolsMu is held.
func (f *Face) setTools() {
	tools := append([]mcpserver.ServerTool(nil), f.bridged...)
	names := map[string]bool{}
	for _, t := range tools {
		names[t.Tool.Name] = true
	}
	agentNames := map[string]bool{}
	if f.agents != nil {
		ops, gen := f.agents.Hub().Operators()
		f.agentGen = gen
		for _, op := range ops {
			if names[op.Method] {
				continue
			}
			agentNames[op.Method] = true
			tools = append(tools, mcpserver.ServerTool{Tool: agentTool(op), Handler: f.callAgentTool(op.Method)})
		}
	}
	tools = f.a2aTools(tools, names, agentNames) // the upstream A2A agents' skills (a2atools.go)
	f.agentNames.Store(&agentNames)
	f.srv.SetTools(tools...)
	f.lists.invalidate() // the tools changed: a new catalog version
}

// refreshAgentTools republishes the tools when the operators the agents offer changed
// since they were last published (a hook before tools/list).
func (f *Face) refreshAgentTools() {
	f.toolsMu.Lock()
	defer f.toolsMu.Unlock()
	if (f.agents != nil && f.agents.Hub().Generation() != f.agentGen) || f.a2aChanged() {
		f.setTools()
	}
}

// watchAgents follows the hub of f.agents (replacing the hub followed before). f.toolsMu
// is held.
func (f *Face) watchAgents() {
	if f.agentWatch != nil {
		f.agentWatch()
		f.agentWatch = nil
	}
	if f.agents != nil {
		f.agentWatch = f.agents.Hub().OnChange(f.agentsChanged)
	}
}

// agentsChanged schedules a republish of the tools after the face's delay, unless one is
// pending already (the debounce). It does not block.
func (f *Face) agentsChanged() {
	f.changeMu.Lock()
	defer f.changeMu.Unlock()
	if f.changeTimer != nil || f.closed {
		return
	}
	f.changeTimer = time.AfterFunc(f.changeDelay, func() {
		f.changeMu.Lock()
		f.changeTimer = nil
		closed := f.closed
		f.changeMu.Unlock()
		if !closed {
			f.refreshAgentTools()
		}
	})
}

// stopAgentWatch stops following the agents' hub and drops a pending republish.
func (f *Face) stopAgentWatch() {
	f.toolsMu.Lock()
	if f.agentWatch != nil {
		f.agentWatch()
		f.agentWatch = nil
	}
	f.toolsMu.Unlock()
	f.changeMu.Lock()
	f.closed = true
	if f.changeTimer != nil {
		f.changeTimer.Stop()
		f.changeTimer = nil
	}
	f.changeMu.Unlock()
}

// isAgentTool reports whether name is an agent operator's tool (its method is its name).
func (f *Face) isAgentTool(name string) bool {
	m := f.agentNames.Load()
	return m != nil && (*m)[name]
}

// agentTool is the tool of an agent operator.
func agentTool(op agentlink.OperatorInfo) mcp.Tool {
	in := op.Input
	if len(in) == 0 {
		in = json.RawMessage(`{"type":"object"}`)
	}
	desc := op.Description
	if desc == "" {
		desc = "Operator " + op.ID + " of the connected compute agents."
	}
	t := mcp.NewToolWithRawSchema(op.Method, desc, in)
	t.RawOutputSchema = op.Output
	return t
}

// callAgentTool runs a call of an agent operator through the pipeline as the MCP caller.
// The result is the call's JSON result as text and as structuredContent; the agent's
// progress reports become progress notifications under the caller's progressToken. An
// outcome of the agent (execution failed, rejected, timed out, gone) is a tool error
// (isError) whose text is the gateway's error object {code, message, data}, so the model
// sees it; a refusal before any agent ran (policy, invalid arguments, no agent offers the
// operator) is the gateway's JSON-RPC error, as for a bridged tool.
func (f *Face) callAgentTool(method string) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := json.Marshal(req.GetRawArguments())
		if err != nil || string(args) == "null" {
			args = []byte("{}")
		}
		principal, _ := ctx.Value(principalKey{}).(gateway.Principal)
		st := postCallStream(ctx) // progress on the call's POST response (poststream.go)
		if meta := req.Params.Meta; meta != nil && meta.ProgressToken != nil {
			ctx = f.relayProgress(ctx, meta.ProgressToken, st)
		}
		rt := f.gw.Acquire()
		if meta := req.Params.Meta; meta != nil && rt.Pipeline().Tracer != nil {
			ctx = observability.ExtractMeta(ctx, meta.AdditionalFields)
		}
		out := rt.Pipeline().RunAs(ctx, faces.Caller{Principal: principal, Zone: callerZone(ctx), Protocol: gateway.ProtocolMCP}, method, args, nil)
		rt.Release()
		st.finish()
		if out.Err != nil {
			if !agentOutcome(out.Err.Code()) {
				if fr := faceRequestOf(ctx); fr != nil {
					fr.refusal.Store(&mcpRefusal{err: out.Err, traceID: out.TraceID})
				}
				return nil, out.Err
			}
			text, _ := json.Marshal(map[string]any{"error": errorObject(out.Err, out.TraceID)})
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(text))}, IsError: true}, nil
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(out.Result))}}
		var one struct {
			TaskID string `json:"task_id"`
		}
		if json.Unmarshal(out.Result, &one) == nil && one.TaskID != "" { // one run, as the output schema says (not redundancy's runs)
			res.StructuredContent = json.RawMessage(out.Result)
		}
		return res, nil
	}
}

// agentOutcome reports whether code is an outcome of a task an agent was given.
func agentOutcome(code schemas.Code) bool {
	switch code {
	case schemas.CodeAgentExecution, schemas.CodeAgentRejected, schemas.CodeAgentTaskFailed, schemas.CodeAgentTimeout, schemas.CodeAgentGone:
		return true
	}
	return false
}

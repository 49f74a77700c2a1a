package mcpface

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/routing/a2a"
)

// The skills of the upstream A2A agents (routing.a2a.agents) are tools of the face beside
// the bridged ones and the agent operators: each is named by its method
// ("a2a.<agent>.<skill>"), described by the skill, takes {text, data} and answers the
// call's result ({task_id, state, text, artifacts}). tools/call runs it through the
// pipeline as the agent operators' tools do (callAgentTool): policy, limits, the A2A
// target; a progress token turns the agent's status updates into progress notifications,
// and a failed, rejected or cancelled upstream task is a tool error the model sees. The
// list follows each agent's card: a tools/list or tools/call after a card changed the
// skills republishes it first (a generation compare when nothing changed). A bridged
// tool or an agent operator of the same name wins.

// a2aTools appends the tools of the upstream agents' skills to tools, skipping names
// taken, and records them in agentNames (their method is their name). f.toolsMu is held.
func (f *Face) a2aTools(tools []mcpserver.ServerTool, taken, agentNames map[string]bool) []mcpserver.ServerTool {
	var gen uint64
	for _, t := range f.upstreams {
		skills, g := t.Skills()
		gen += g
		for _, sk := range skills {
			if taken[sk.Method] || agentNames[sk.Method] {
				continue
			}
			agentNames[sk.Method] = true
			tools = append(tools, mcpserver.ServerTool{Tool: skillTool(t.Config().Name, sk), Handler: f.callAgentTool(sk.Method)})
		}
	}
	f.a2aGen = gen
	return tools
}

// a2aChanged reports whether an upstream agent's skills changed since they were last
// published. f.toolsMu is held.
func (f *Face) a2aChanged() bool {
	var gen uint64
	for _, t := range f.upstreams {
		gen += t.Generation()
	}
	return gen != f.a2aGen
}

// skillTool is the tool of an upstream agent's skill.
func skillTool(agent string, sk a2a.Skill) mcp.Tool {
	desc := sk.Description
	if desc == "" {
		desc = "Skill " + sk.ID + " of the A2A agent " + agent + "."
	}
	t := mcp.NewToolWithRawSchema(sk.Method, desc, json.RawMessage(a2a.InputSchema))
	t.RawOutputSchema = json.RawMessage(a2a.OutputSchema)
	return t
}

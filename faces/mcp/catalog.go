package mcpface

import (
	"encoding/json"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// Sync publishes the catalog of the current configuration's bridge, rebinding to it when a
// reload replaced it, and keeps it published as the catalog changes.
func (f *Face) Sync() {
	rt := f.gw.Acquire()
	target := rt.Table().MCP()
	agents := rt.Table().Agents()
	upstreams := rt.Table().A2A()
	rt.Release()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.toolsMu.Lock()
	agentsChanged := agents != f.agents
	f.agents = agents
	if agentsChanged {
		f.watchAgents()
	}
	upstreamsChanged := !slices.Equal(upstreams, f.upstreams)
	f.upstreams = upstreams
	if target == f.bound && (agentsChanged || upstreamsChanged) {
		f.setTools()
	}
	f.toolsMu.Unlock()
	f.lists.invalidate() // a reload: its policy and routes may narrow the lists differently
	if target == f.bound {
		return
	}
	if f.unsubscribe != nil {
		f.unsubscribe()
		f.unsubscribe = nil
	}
	f.bound = target
	if target != nil {
		f.unsubscribe = target.OnEvent(func(ev mcpbackend.Event) {
			if ev.Kind == mcpbackend.EventResourceUpdated {
				f.relayUpdate(ev)
				return
			}
			f.publish(target)
		})
	}
	f.publish(target)
}

// target returns the bridge target the face publishes, nil when there is none.
func (f *Face) target() *mcpbackend.Target {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bound
}

// Refresh publishes the bound bridge's catalog as it is now, whatever events about it are
// still on their way.
func (f *Face) Refresh() { f.publish(f.target()) }

// publish replaces the face's tools, resources and prompts with target's catalog.
func (f *Face) publish(target *mcpbackend.Target) {
	var tools []mcpserver.ServerTool
	var resources []mcpserver.ServerResource
	var prompts []mcpserver.ServerPrompt
	var templates []mcpserver.ServerResourceTemplate
	fast := map[string]string{}
	if target != nil {
		cat := target.Catalog()
		for _, e := range cat.Tools {
			if e.Available {
				method := target.Namespace() + e.Name
				tool := toolOf(e)
				f.tasks.mark(&tool) // callable as a task when MCP tasks are on (tasks.go)
				tools = append(tools, mcpserver.ServerTool{Tool: tool, Handler: f.callTool(method)})
				fast[e.Name] = method
			}
		}
		for _, e := range cat.Resources {
			var res mcp.Resource
			if e.Available && json.Unmarshal(e.Definition, &res) == nil {
				resources = append(resources, mcpserver.ServerResource{Resource: res, Handler: f.readResource(target)})
			}
		}
		for _, e := range cat.ResourceTemplates {
			var rt mcp.ResourceTemplate
			if e.Available && json.Unmarshal(e.Definition, &rt) == nil {
				templates = append(templates, mcpserver.ServerResourceTemplate{Template: rt, Handler: mcpserver.ResourceTemplateHandlerFunc(f.readResource(target))})
			}
		}
		for _, e := range cat.Prompts {
			var p mcp.Prompt
			if e.Available && json.Unmarshal(e.Definition, &p) == nil {
				prompts = append(prompts, mcpserver.ServerPrompt{Prompt: p, Handler: f.getPrompt(target)})
			}
		}
	}
	f.toolsMu.Lock()
	f.bridged = tools
	f.setTools() // with the agents' operators (agenttools.go)
	f.toolsMu.Unlock()
	f.publishTools(fast)
	f.srv.SetResources(resources...)
	f.srv.SetPrompts(prompts...)
	f.srv.AddResourceTemplates(templates...)
	f.lists.invalidate() // a new catalog version: after it is in place, so no list of the old one is stored under it
}

// toolOf rebuilds a tool from its upstream definition, keeping both schemas as raw JSON so
// nothing mcp-go's structs do not know is lost.
func toolOf(e mcpbackend.Entry) mcp.Tool {
	var def struct {
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
		Title        string          `json:"title"`
	}
	_ = json.Unmarshal(e.Definition, &def)
	if len(def.InputSchema) == 0 {
		def.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	t := mcp.NewToolWithRawSchema(e.Name, def.Description, def.InputSchema)
	t.RawOutputSchema = def.OutputSchema
	return t
}

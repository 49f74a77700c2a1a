package server

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// MCPFaceConfig enables the MCP face: the bridged MCP catalog served as one MCP server at
// /mcp (streamable HTTP) on the boundary listener. Absent, /mcp is not served.
type MCPFaceConfig struct {
	// LocalhostProtection refuses requests whose Host or Origin is not a loopback name
	// (DNS-rebinding protection; default true). Turn it off only behind a proxy that checks
	// them itself.
	LocalhostProtection *bool `yaml:"localhost_protection" json:"localhost_protection,omitempty"`
}

// mcpFace publishes the current configuration's MCP catalog through an mcp-go server. It
// lives as long as the process, so MCP sessions survive reloads; after each reload it
// rebinds to the new configuration's bridge.
type mcpFace struct {
	s       *Server
	srv     *mcpserver.MCPServer
	handler *mcpserver.StreamableHTTPServer

	mu          sync.Mutex
	bound       *mcpbackend.Target
	unsubscribe func()
	subs        *subscriptions
}

type principalKey struct{}

func newMCPFace(s *Server, cfg MCPFaceConfig, version string) *mcpFace {
	f := &mcpFace{s: s, subs: newSubscriptions()}
	f.srv = mcpserver.NewMCPServer("gatehouse", version,
		mcpserver.WithToolCapabilities(true),
		mcpserver.WithResourceCapabilities(true, true),
		mcpserver.WithPromptCapabilities(true),
		mcpserver.WithLogging(),
		mcpserver.WithHooks(f.hooks()))
	f.handler = mcpserver.NewStreamableHTTPServer(f.srv,
		mcpserver.WithEndpointPath("/mcp"),
		mcpserver.WithDisableLocalhostProtection(cfg.LocalhostProtection != nil && !*cfg.LocalhostProtection),
		mcpserver.WithStreamableHTTPLogger(s.log))
	return f
}

// shutdown ends the face's sessions and their long-lived streams, so a drain is not held
// up by idle MCP clients.
func (f *mcpFace) shutdown(ctx context.Context) error {
	f.mu.Lock()
	if f.unsubscribe != nil {
		f.unsubscribe()
		f.unsubscribe = nil
	}
	f.mu.Unlock()
	return f.handler.Shutdown(ctx)
}

// serve handles /mcp: the caller is authenticated from the headers before mcp-go reads the
// body, and its principal rides in the request context to the tool handlers.
func (f *mcpFace) serve(c *gin.Context) {
	rt := f.s.acquire()
	principal, err := rt.auth.Authenticate(c.Request.Context(), httpCredentials(c.Request, gateway.ZoneExternal))
	maxBody := rt.cfg.JSONRPC.MaxBodyBytes
	rt.release()
	if err != nil {
		writeAuthError(c.Writer, gateway.AsError(err), observability.NewTraceID())
		return
	}
	r := c.Request.WithContext(context.WithValue(c.Request.Context(), principalKey{}, principal))
	r.Body = http.MaxBytesReader(c.Writer, r.Body, maxBody)
	f.handler.ServeHTTP(c.Writer, r)
}

// sync publishes the catalog of the current configuration's bridge, rebinding to it when a
// reload replaced it, and keeps it published as the catalog changes.
func (f *mcpFace) sync() {
	rt := f.s.acquire()
	var target *mcpbackend.Target
	for _, t := range rt.table.Targets() {
		if mt, ok := t.(*mcpbackend.Target); ok {
			target = mt
		}
	}
	rt.release()
	f.mu.Lock()
	defer f.mu.Unlock()
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
func (f *mcpFace) target() *mcpbackend.Target {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bound
}

// publish replaces the face's tools, resources and prompts with target's catalog.
func (f *mcpFace) publish(target *mcpbackend.Target) {
	var tools []mcpserver.ServerTool
	var resources []mcpserver.ServerResource
	var prompts []mcpserver.ServerPrompt
	var templates []mcpserver.ServerResourceTemplate
	if target != nil {
		cat := target.Catalog()
		for _, e := range cat.Tools {
			if e.Available {
				tools = append(tools, mcpserver.ServerTool{Tool: toolOf(e), Handler: f.callTool(target.Namespace() + e.Name)})
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
	f.srv.SetTools(tools...)
	f.srv.SetResources(resources...)
	f.srv.SetPrompts(prompts...)
	f.srv.AddResourceTemplates(templates...)
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

// callTool runs a tool call through the pipeline as the MCP caller; a tool that failed is
// returned as its CallToolResult (isError), as MCP clients expect.
func (f *mcpFace) callTool(method string) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := json.Marshal(req.GetRawArguments())
		if err != nil || string(args) == "null" {
			args = []byte("{}")
		}
		principal, _ := ctx.Value(principalKey{}).(gateway.Principal)
		if meta := req.Params.Meta; meta != nil && meta.ProgressToken != nil {
			ctx = f.relayProgress(ctx, meta.ProgressToken)
		}
		rt := f.s.acquire()
		out := rt.runAs(ctx, principal, gateway.ZoneExternal, gateway.ProtocolMCP, method, args, nil)
		rt.release()
		raw := json.RawMessage(out.result)
		if out.err != nil {
			if out.err.Code() != schemas.CodeToolFailed {
				return nil, out.err
			}
			raw, _ = json.Marshal(out.err.Data()["result"])
		}
		return mcp.ParseCallToolResult(&raw)
	}
}

// relayProgress forwards the upstream's progress notifications for this call to the
// calling session, under the caller's own progress token.
func (f *mcpFace) relayProgress(ctx context.Context, token mcp.ProgressToken) context.Context {
	return mcpbackend.WithProgress(ctx, func(p mcpbackend.Progress) {
		params := map[string]any{"progressToken": token, "progress": p.Progress}
		if p.Total != nil {
			params["total"] = *p.Total
		}
		if p.Message != "" {
			params["message"] = p.Message
		}
		if err := f.srv.SendNotificationToClient(ctx, "notifications/progress", params); err != nil {
			f.s.log.Debug("relaying MCP progress", "err", err)
		}
	})
}

func (f *mcpFace) readResource(target *mcpbackend.Target) mcpserver.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		raw, err := target.ReadResource(ctx, req.Params.URI)
		if err != nil {
			return nil, err
		}
		res, err := mcp.ParseReadResourceResult(&raw)
		if err != nil {
			return nil, err
		}
		return res.Contents, nil
	}
}

func (f *mcpFace) getPrompt(target *mcpbackend.Target) mcpserver.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		raw, err := target.GetPrompt(ctx, req.Params.Name, req.Params.Arguments)
		if err != nil {
			return nil, err
		}
		return mcp.ParseGetPromptResult(&raw)
	}
}

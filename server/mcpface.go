package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// MCPFaceConfig enables the MCP face: the bridged MCP catalog served as one MCP server at
// /mcp (streamable HTTP) and, for older clients, GET /sse with POST /message (the legacy
// HTTP+SSE transport) on the boundary listener. Absent, none of them is served. Its
// settings are read at start; a reload does not change them.
type MCPFaceConfig struct {
	// LocalhostProtection refuses requests whose Host or Origin is not a loopback name
	// (DNS-rebinding protection; default true). Turn it off only behind a proxy that checks
	// them itself.
	LocalhostProtection *bool `yaml:"localhost_protection" json:"localhost_protection,omitempty"`
	// SSE serves the legacy HTTP+SSE transport at GET /sse and POST /message (default true).
	SSE *bool `yaml:"sse" json:"sse,omitempty"`
	// SessionKey signs the Mcp-Session-Id of the streamable HTTP transport (at least
	// MinSessionKeyBytes bytes; give it as ${ENV}). Every replica, and the process after a
	// restart, needs the same key to accept a session; absent, a random key is drawn at
	// start, so sessions end with the process.
	SessionKey string `yaml:"session_key" json:"session_key,omitempty"`
	// SessionTTL is how long a session lives after its initialize (default 24h); its record
	// in the state store, and a revocation, expire with it.
	SessionTTL time.Duration `yaml:"session_ttl" json:"session_ttl,omitempty"`
}

// localOnly reports whether DNS-rebinding protection is on.
func (c MCPFaceConfig) localOnly() bool {
	return c.LocalhostProtection == nil || *c.LocalhostProtection
}

// sseOn reports whether the legacy SSE transport is served.
func (c MCPFaceConfig) sseOn() bool { return c.SSE == nil || *c.SSE }

// mcpFace publishes the current configuration's MCP catalog through an mcp-go server. It
// lives as long as the process, so MCP sessions survive reloads; after each reload it
// rebinds to the new configuration's bridge.
type mcpFace struct {
	s         *Server
	srv       *mcpserver.MCPServer
	handler   *mcpserver.StreamableHTTPServer // nil when serving stdio
	sse       *mcpserver.SSEServer            // nil when off or serving stdio
	sessions  *mcpSessions                    // nil when serving stdio
	localOnly bool

	mu          sync.Mutex
	bound       *mcpbackend.Target
	unsubscribe func()
	subs        *subscriptions
}

type principalKey struct{}

// newMCPFace builds the face's MCP server and, unless the server speaks stdio only, its
// HTTP transports.
func newMCPFace(s *Server, cfg MCPFaceConfig, version string) *mcpFace {
	f := &mcpFace{s: s, subs: newSubscriptions(), localOnly: cfg.localOnly()}
	hooks := f.hooks()
	hooks.AddAfterListTools(f.visibleTools)         // tools/list shows the caller what the policy lets it reach
	hooks.AddAfterListResources(f.visibleResources) // and so do the other lists (mcpresource.go)
	hooks.AddAfterListResourceTemplates(f.visibleTemplates)
	hooks.AddAfterListPrompts(f.visiblePrompts)
	f.srv = mcpserver.NewMCPServer("gatehouse", version,
		mcpserver.WithToolCapabilities(true),
		mcpserver.WithResourceCapabilities(true, true),
		mcpserver.WithPromptCapabilities(true),
		mcpserver.WithLogging(),
		mcpserver.WithCompletions(),
		mcpserver.WithPromptCompletionProvider(faceCompletions{f}),
		mcpserver.WithResourceCompletionProvider(faceCompletions{f}),
		mcpserver.WithHooks(hooks))
	if s.stdio {
		return f
	}
	f.sessions = newMCPSessions(cfg, s.kv, s.opts.Now, s.log)
	f.sessions.record(hooks)
	f.handler = mcpserver.NewStreamableHTTPServer(f.srv,
		mcpserver.WithEndpointPath(mcpPath),
		mcpserver.WithDisableLocalhostProtection(!f.localOnly),
		mcpserver.WithSessionIdManagerResolver(f.sessions),
		mcpserver.WithHTTPContextFunc(f.sessions.restore),
		mcpserver.WithSessionIdleTTL(f.sessions.signer.ttl),
		mcpserver.WithStreamableHTTPLogger(s.log))
	if cfg.sseOn() {
		f.sse = newSSEServer(f.srv, !f.localOnly)
	}
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
	if f.sse != nil {
		f.sse.CloseSessions()
	}
	if f.handler == nil {
		return nil
	}
	return f.handler.Shutdown(ctx)
}

// serve handles /mcp: the request is admitted (Host and Origin, credentials, body size)
// before mcp-go reads anything, a GET or DELETE naming a session is checked against the
// session table, and the caller's principal rides in the request context to the tool
// handlers. Each write of the response is bounded by the write timeout (boundWrites).
// The session a request names is checked here, before mcp-go, for every method: so that a
// session store out of reach answers 503 (the client keeps its session and retries) where
// mcp-go would answer 404 (the client drops it).
func (f *mcpFace) serve(c *gin.Context) {
	r, ok := f.admit(c.Writer, c.Request)
	if !ok {
		return
	}
	if !f.sessions.admit(c.Writer, r) {
		return
	}
	bw, r, done := f.s.boundWrites(c.Writer, r)
	defer done()
	fr := faceRequestOf(r.Context())
	if r.Method != http.MethodPost || fr == nil {
		f.handler.ServeHTTP(bw, r)
		return
	}
	w := &refusalWriter{ResponseWriter: bw, fr: fr}
	f.handler.ServeHTTP(w, r)
	w.finish(faces.RequestOrigin(r) + protectedResourcePath + mcpPath)
}

// admit checks what the HTTP transports check before mcp-go sees a request: a Host or
// Origin that is not a loopback name on a loopback connection (DNS rebinding), the
// caller's credentials, and the size of a POST body, which it reads. On success it returns
// the request to serve, whose context carries the caller and the body; otherwise it has
// answered the request.
func (f *mcpFace) admit(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	base := f.s.cur.Load().pipe.Tracer.ExtractHTTP(r) // the caller's trace, which its tool calls continue
	traceID := observability.TraceIDOf(base)
	if f.localOnly {
		if what := foreignOrigin(r); what != "" {
			faces.WriteHTTPError(w, http.StatusForbidden, gateway.Errorf(schemas.CodeAuthorization, "Forbidden: the %s is not a loopback name", what), traceID, faces.EncodingJSON)
			return nil, false
		}
	}
	rt := f.s.acquire()
	principal, err := rt.auth.Authenticate(r.Context(), faces.HTTPCredentials(r, gateway.ZoneExternal))
	maxBody := rt.cfg.JSONRPC.MaxBodyBytes
	rt.release()
	if err != nil {
		faces.WriteChallenge(w, gateway.AsError(err), traceID, faces.EncodingJSON, faces.RequestOrigin(r)+protectedResourcePath+mcpPath)
		return nil, false
	}
	fr := &faceRequest{}
	if r.Method == http.MethodPost {
		if fr.body, err = faces.ReadBody(r, maxBody, nil); err != nil {
			faces.WriteBodyError(w, f.s.log, err, maxBody, traceID, faces.EncodingJSON)
			return nil, false
		}
	}
	ctx := context.WithValue(context.WithValue(base, principalKey{}, principal), faceRequestKey{}, fr)
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		ctx = resilience.WithClientAddr(ctx, ap.Addr()) // anonymous callers' rate-limit identity
	}
	r = r.WithContext(ctx)
	r.Body = io.NopCloser(bytes.NewReader(fr.body))
	return r, true
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
		ctx = f.withPeer(ctx) // upstream logs and requests during the call reach this session
		if meta := req.Params.Meta; meta != nil && meta.ProgressToken != nil {
			ctx = f.relayProgress(ctx, meta.ProgressToken)
		}
		rt := f.s.acquire()
		if meta := req.Params.Meta; meta != nil && rt.trace != nil {
			ctx = observability.ExtractMeta(ctx, meta.AdditionalFields) // params._meta.traceparent
		}
		out := rt.Pipeline().RunAs(ctx, faces.Caller{Principal: principal, Zone: callerZone(ctx), Protocol: gateway.ProtocolMCP}, method, args, nil)
		rt.release()
		raw := json.RawMessage(out.Result)
		if out.Err != nil {
			if out.Err.Code() != schemas.CodeToolFailed {
				if fr := faceRequestOf(ctx); fr != nil {
					fr.refusal = &mcpRefusal{err: out.Err, traceID: out.TraceID}
				}
				return nil, out.Err
			}
			raw, _ = json.Marshal(out.Err.Data()["result"])
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

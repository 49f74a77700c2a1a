package mcpface

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/routing/a2a"
	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Face publishes the current configuration's MCP catalog through an mcp-go server. It
// lives as long as the process, so MCP sessions survive reloads; after each reload (Sync)
// it rebinds to the new configuration's bridge.
type Face struct {
	gw        Gateway
	log       *slog.Logger
	srv       *mcpserver.MCPServer
	handler   *mcpserver.StreamableHTTPServer // nil when serving stdio
	sse       *mcpserver.SSEServer            // nil when off or serving stdio
	sessions  *mcpSessions                    // nil when serving stdio
	localOnly bool

	fast  fastPath   // the tools/call fast path (fastcall.go)
	lists *listCache // the narrowed lists (listcache.go); nil when mcp_face.list_cache is off
	tasks *taskFace  // MCP tasks (tasks.go); nil when mcp_face.tasks is off or serving stdio
	mrtr  *mrtr      // calls waiting for their 2026-07-28 caller's input (mrtr.go)
	relay *relay25   // requests relayed to 2025-11-25 sessions (relay25.go); nil when serving stdio

	mu          sync.Mutex
	bound       *mcpbackend.Target
	unsubscribe func()
	subs        *subscriptions

	toolsMu    sync.Mutex                      // held while the tools are published; guards what follows
	agents     *agentlink.Target               // the agent link's target, whose operators are tools too (agenttools.go)
	bridged    []mcpserver.ServerTool          // the bridged tools the last publish built
	agentGen   uint64                          // the agents' operator generation published
	agentNames atomic.Pointer[map[string]bool] // the agent operators' tool names published
	agentWatch func()                          // stops following the agents' hub (OnChange); guarded by toolsMu
	upstreams  []*a2a.Target                   // the upstream A2A agents, whose skills are tools too (a2atools.go)
	a2aGen     uint64                          // the sum of their skill generations published

	changeDelay time.Duration // mcp_face.tools_changed_delay
	changeMu    sync.Mutex
	changeTimer *time.Timer // pending republish after the agents' operators changed; guarded by changeMu
	closed      bool        // guarded by changeMu
}

type principalKey struct{}

// Options are what the face takes from the process: they do not change with reloads.
type Options struct {
	// Config is the mcp_face section read at start.
	Config Config
	// Version is the gateway's version, which initialize reports.
	Version string
	// State holds the session table.
	State state.KV
	// Now is the clock.
	Now func() time.Time
	// Log receives the face's own errors.
	Log *slog.Logger
	// Stdio builds the face for ServeStdio only: no HTTP transport, no session table.
	Stdio bool
}

// New builds the face's MCP server and, unless it serves stdio only, its HTTP transports.
// Call Sync to publish the current configuration's catalog.
func New(gw Gateway, o Options) *Face {
	cfg := o.Config
	f := &Face{gw: gw, log: o.Log, subs: newSubscriptions(), localOnly: cfg.localOnly(), changeDelay: cfg.toolsChangedDelay(),
		lists: newListCache(cfg.ListCache, o.Now)}
	hooks := f.hooks()
	hooks.AddAfterListTools(f.visibleTools) // tools/list shows the caller what the policy lets it reach
	hooks.AddBeforeListTools(func(ctx context.Context, _ any, req *mcp.ListToolsRequest) {
		f.refreshAgentTools()
		f.markListVersion(ctx, req) // after the refresh: the version of the tools mcp-go lists
	})
	hooks.AddBeforeListResources(func(ctx context.Context, _ any, req *mcp.ListResourcesRequest) { f.markListVersion(ctx, req) })
	hooks.AddBeforeListResourceTemplates(func(ctx context.Context, _ any, req *mcp.ListResourceTemplatesRequest) {
		f.markListVersion(ctx, req)
	})
	hooks.AddBeforeListPrompts(func(ctx context.Context, _ any, req *mcp.ListPromptsRequest) { f.markListVersion(ctx, req) })
	hooks.AddBeforeCallTool(func(context.Context, any, *mcp.CallToolRequest) { f.refreshAgentTools() })
	hooks.AddAfterListResources(f.visibleResources) // and so do the other lists (lists.go)
	hooks.AddAfterListResourceTemplates(f.visibleTemplates)
	hooks.AddAfterListPrompts(f.visiblePrompts)
	hooks.AddAfterReadResource(f.readHints) // the upstream's cache hints (read.go)
	opts := []mcpserver.ServerOption{
		mcpserver.WithToolCapabilities(true),
		mcpserver.WithResourceCapabilities(true, true),
		mcpserver.WithPromptCapabilities(true),
		mcpserver.WithLogging(),
		mcpserver.WithCompletions(),
		mcpserver.WithPromptCompletionProvider(faceCompletions{f}),
		mcpserver.WithResourceCompletionProvider(faceCompletions{f}),
		mcpserver.WithHooks(hooks)}
	if cfg.Tasks.on() && !o.Stdio {
		f.tasks = newTaskFace(f, cfg.Tasks, o.State, o.Now)
		opts = append(opts, taskServerOptions()...)
	}
	f.srv = mcpserver.NewMCPServer("gatehouse", o.Version, opts...)
	if o.Stdio {
		f.mrtr = newMRTR(cfg.MRTR, []byte(cfg.SessionKey), nil, f.srv, o.Now, o.Log)
		return f
	}
	f.sessions = newMCPSessions(cfg, o.State, o.Now, o.Log)
	f.mrtr = newMRTR(cfg.MRTR, f.sessions.signer.key, o.State, f.srv, o.Now, o.Log)
	f.relay = newRelay25(f.mrtr, o.State, f.sessions, o.Log)
	f.sessions.record(hooks)
	f.trackSessions(hooks)
	f.handler = mcpserver.NewStreamableHTTPServer(f.srv,
		mcpserver.WithEndpointPath(Path),
		mcpserver.WithDisableLocalhostProtection(!f.localOnly),
		mcpserver.WithSessionIdManagerResolver(f.sessions),
		mcpserver.WithHTTPContextFunc(f.sessions.restore),
		mcpserver.WithSessionIdleTTL(f.sessions.signer.ttl),
		mcpserver.WithStreamableHTTPLogger(o.Log))
	if cfg.sseOn() {
		f.sse = newSSEServer(f.srv, !f.localOnly)
	}
	return f
}

// MCPServer returns the face's mcp-go server: what it publishes (ListTools …), and where
// an embedder or a test adds its own tools.
func (f *Face) MCPServer() *mcpserver.MCPServer { return f.srv }

// Shutdown ends the face's sessions and their long-lived streams, so a drain is not held
// up by idle MCP clients.
func (f *Face) Shutdown(ctx context.Context) error {
	f.mu.Lock()
	if f.unsubscribe != nil {
		f.unsubscribe()
		f.unsubscribe = nil
	}
	f.mu.Unlock()
	f.stopAgentWatch()
	f.tasks.close()
	f.mrtr.close()
	if f.sse != nil {
		f.sse.CloseSessions()
	}
	if f.handler == nil {
		return nil
	}
	return f.handler.Shutdown(ctx)
}

// Serve handles /mcp (f may be nil: the face is off, and /mcp is a 404): the request is admitted (Host and Origin, credentials, body size)
// before mcp-go reads anything, a GET or DELETE naming a session is checked against the
// session table, and the caller's principal rides in the request context to the tool
// handlers. Each write of the response is bounded by the write timeout (boundWrites).
// The session a request names is checked here, before mcp-go, for every method: so that a
// session store out of reach answers 503 (the client keeps its session and retries) where
// mcp-go would answer 404 (the client drops it).
func (f *Face) Serve(w http.ResponseWriter, r *http.Request) {
	if f == nil {
		faces.WriteHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "The MCP face is not enabled"), observability.NewTraceID(), faces.EncodingJSON)
		return
	}
	r, ok := f.admit(w, r)
	if !ok {
		return
	}
	if !f.sessions.admit(w, r) {
		return
	}
	if r.Method == http.MethodGet { // the session's event stream: watched (recheck.go)
		var end func()
		r, end = f.watchStream(r)
		defer end()
	}
	bw, r, done := f.boundWrites(w, r)
	defer done()
	fr := faceRequestOf(r.Context())
	if r.Method == http.MethodGet && fr != nil && fr.sessionChecked { // it takes relayed requests (relay25.go)
		rw := newRelayWriter(bw, r, true)
		defer f.relay.openStream(r.Context(), r.Header.Get(mcpserver.HeaderKeySessionID), rw)()
		f.handler.ServeHTTP(rw, r)
		return
	}
	if r.Method != http.MethodPost || fr == nil {
		f.handler.ServeHTTP(bw, r)
		return
	}
	if fr.sessionChecked && f.relay.serveAnswer(bw, r, fr) { // a client's answers to relayed requests
		return
	}
	if f.tasks != nil && f.tasks.serve(bw, r, fr) { // MCP tasks (tasks.go)
		return
	}
	if fr.sessionChecked {
		if f.serveToolCall(bw, r, fr) {
			return
		}
		f.cancelFast(r.Header.Get(mcpserver.HeaderKeySessionID), fr.body)
	}
	rw := &refusalWriter{ResponseWriter: bw, fr: fr}
	var hw http.ResponseWriter = rw
	if fr.sessionChecked && f.relay != nil { // the call's relayed requests may go on its response
		fr.relay = newRelayWriter(rw, r, false)
		hw = fr.relay
	}
	if bytes.Contains(fr.body, []byte(`"tools/call"`)) { // its progress and logs share the response (poststream.go)
		ps, pr := withPostStream(hw, r)
		f.handler.ServeHTTP(ps, pr)
	} else {
		f.handler.ServeHTTP(hw, r)
	}
	if fr.relay != nil {
		fr.relay.close()
	}
	rw.finish(resourceMetadata(r))
	if fr.sessionChecked && bw.Header().Get("Content-Type") == "text/event-stream" {
		f.markStream(r.Header.Get(mcpserver.HeaderKeySessionID)) // mcp-go's session streams from now on
	}
}

// admit checks what the HTTP transports check before mcp-go sees a request: a Host or
// Origin that is not a loopback name on a loopback connection (DNS rebinding), the
// caller's credentials, the size of a POST body, which it reads, and the POST's routing
// headers against that body (checkRouting). On success it returns
// the request to serve, whose context carries the caller and the body; otherwise it has
// answered the request.
func (f *Face) admit(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	rt := f.gw.Acquire()
	base := rt.Pipeline().Tracer.ExtractHTTP(r) // the caller's trace, which its tool calls continue
	traceID := observability.TraceIDOf(base)
	if f.localOnly {
		if what := foreignOrigin(r); what != "" {
			rt.Release()
			faces.WriteHTTPError(w, http.StatusForbidden, gateway.Errorf(schemas.CodeAuthorization, "Forbidden: the %s is not a loopback name", what), traceID, faces.EncodingJSON)
			return nil, false
		}
	}
	principal, err := rt.Authenticator().Authenticate(r.Context(), faces.HTTPCredentials(r, gateway.ZoneExternal))
	maxBody, lim := rt.Pipeline().MaxBodyBytes, rt.Pipeline().LimitsFor(principal)
	rt.Release()
	if err != nil {
		faces.WriteChallenge(w, gateway.AsError(err), traceID, faces.EncodingJSON, resourceMetadata(r))
		return nil, false
	}
	fr := &faceRequest{}
	if r.Method == http.MethodPost {
		if fr.body, err = faces.ReadBody(r, maxBody, nil); err != nil {
			faces.WriteBodyError(w, f.log, err, maxBody, traceID, faces.EncodingJSON)
			return nil, false
		}
		// The routing headers agree with the body before anything reads either (routing.go).
		rtd, id, rerr := checkRouting(r.Header, fr.body, lim)
		if rerr != nil {
			writeRoutingError(w, id, rerr)
			return nil, false
		}
		fr.routed = rtd
	}
	ctx := context.WithValue(context.WithValue(base, principalKey{}, principal), faceRequestKey{}, fr)
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		ctx = resilience.WithClientAddr(ctx, ap.Addr()) // anonymous callers' rate-limit identity
	}
	r = r.WithContext(ctx)
	r.Body = io.NopCloser(bytes.NewReader(fr.body))
	return r, true
}

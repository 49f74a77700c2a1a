package mcpface

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
)

// maxSubscriptionsPerSession bounds the resource subscriptions one MCP session may hold.
const maxSubscriptionsPerSession = 1024

// subscriptions tracks which MCP face sessions subscribed to which resource URIs, so an
// upstream's notifications/resources/updated reaches exactly those sessions. The upstream
// is subscribed once per URI (the bridge counts), when the first session subscribes.
type subscriptions struct {
	mu    sync.Mutex
	byURI map[string]map[string]bool // uri → session ids
	count map[string]int             // session id → subscriptions held
}

func newSubscriptions() *subscriptions {
	return &subscriptions{byURI: map[string]map[string]bool{}, count: map[string]int{}}
}

// hooks wires the tracking into an mcp-go server.
func (f *Face) hooks() *mcpserver.Hooks {
	h := &mcpserver.Hooks{}
	h.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		if sid, t := sessionID(ctx), f.target(); sid != "" && t != nil && f.subs.add(sid, req.Params.URI) {
			if err := t.Subscribe(ctx, req.Params.URI); err != nil {
				f.log.WarnContext(ctx, "subscribing upstream", "uri", req.Params.URI, "err", err)
			}
		}
	})
	h.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if sid, t := sessionID(ctx), f.target(); sid != "" && t != nil && f.subs.remove(sid, req.Params.URI) {
			_ = t.Unsubscribe(ctx, req.Params.URI)
		}
	})
	h.AddOnUnregisterSession(func(ctx context.Context, s mcpserver.ClientSession) {
		t := f.target()
		for _, uri := range f.subs.drop(s.SessionID()) {
			if t != nil {
				_ = t.Unsubscribe(ctx, uri)
			}
		}
	})
	return h
}

// relayUpdate sends a resource update to the sessions subscribed to its URI.
func (f *Face) relayUpdate(ev mcpbackend.Event) {
	for _, sid := range f.subs.sessions(ev.URI) {
		f.markStream(sid) // mcp-go's send makes the session's later POSTs streams
		_ = f.srv.SendNotificationToSpecificClient(sid, "notifications/resources/updated", map[string]any{"uri": ev.URI})
	}
}

func sessionID(ctx context.Context) string {
	if s := mcpserver.ClientSessionFromContext(ctx); s != nil {
		return s.SessionID()
	}
	return ""
}

// add records a subscription; it reports whether the upstream must be subscribed too (the
// first session for the URI) — false also when the session is at its limit.
func (s *subscriptions) add(sid, uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.byURI[uri]
	if set[sid] || s.count[sid] >= maxSubscriptionsPerSession {
		return false
	}
	if set == nil {
		set = map[string]bool{}
		s.byURI[uri] = set
	}
	set[sid] = true
	s.count[sid]++
	return len(set) == 1
}

// remove drops a subscription; it reports whether the URI has no subscriber left.
func (s *subscriptions) remove(sid, uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.byURI[uri]
	if !set[sid] {
		return false
	}
	delete(set, sid)
	if s.count[sid]--; s.count[sid] == 0 {
		delete(s.count, sid)
	}
	if len(set) == 0 {
		delete(s.byURI, uri)
		return true
	}
	return false
}

// drop removes every subscription of a session that ended and returns the URIs no one
// subscribes to any more.
func (s *subscriptions) drop(sid string) []string {
	s.mu.Lock()
	var uris []string
	for uri, set := range s.byURI {
		if set[sid] {
			uris = append(uris, uri)
		}
	}
	s.mu.Unlock()
	var gone []string
	for _, uri := range uris {
		if s.remove(sid, uri) {
			gone = append(gone, uri)
		}
	}
	return gone
}

func (s *subscriptions) sessions(uri string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.byURI[uri]))
	for sid := range s.byURI[uri] {
		out = append(out, sid)
	}
	return out
}

package mcpbackend

import (
	"context"
	"encoding/json"
	"sync"
)

// Peer is the downstream MCP client a call was made by, as the face that received the
// call sees it. The bridge relays to it what an upstream sends during the call: log
// notifications, and sampling/createMessage and elicitation/create requests for upstreams
// whose policy is "client". A Peer is safe for concurrent use.
type Peer interface {
	// ID identifies the downstream session. Two calls whose peers have the same ID come
	// from one client: a message attributed to either reaches the same place.
	ID() string
	// Capabilities reports what the client declared.
	Capabilities() PeerCapabilities
	// Log passes on the params of a notifications/message ({level, logger, data}). It
	// must not block: it may run on an upstream connection's reader.
	Log(params json.RawMessage)
	// Request sends a request (sampling/createMessage, elicitation/create) to the client
	// and returns its result JSON; it returns when the client answers or ctx ends. An
	// error is a *gateway.Error.
	Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// PeerCapabilities are the capabilities a downstream client declared.
type PeerCapabilities struct {
	// Sampling: the client answers sampling/createMessage.
	Sampling bool
	// Elicitation: the client answers elicitation/create in form mode.
	Elicitation bool
	// LogLevel is the lowest level of notifications/message the client asked for; empty
	// when it asked for none.
	LogLevel string
	// NoRequests, when set, says why the client cannot be sent requests at all (e.g. its
	// protocol revision has none from the server); Sampling and Elicitation are then
	// false.
	NoRequests string
}

type peerKey struct{}

// WithPeer returns a context under which a Bridge call relays to p what the upstream
// sends during the call (see the package documentation, "Relaying to the caller").
func WithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

func peerFrom(ctx context.Context) Peer {
	p, _ := ctx.Value(peerKey{}).(Peer)
	return p
}

// callers records the requests in flight on one upstream session and the peers they
// carry, so that a message the server sends outside any request's context can be
// attributed to the caller that caused it when, and only when, that is certain.
type callers struct {
	mu        sync.Mutex
	anonymous int              // requests in flight without a peer
	peers     map[string]*held // by Peer.ID
}

// held is one downstream peer with requests in flight.
type held struct {
	peer Peer
	n    int
}

// enter records a request carrying p (nil: none) and returns the function that removes it.
func (c *callers) enter(p Peer) (leave func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p == nil {
		c.anonymous++
		return func() {
			c.mu.Lock()
			c.anonymous--
			c.mu.Unlock()
		}
	}
	id := p.ID()
	if c.peers == nil {
		c.peers = map[string]*held{}
	}
	h := c.peers[id]
	if h == nil {
		h = &held{}
		c.peers[id] = h
	}
	h.peer = p // the latest: the one most likely still running when the message is handled
	h.n++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if h.n--; h.n == 0 {
			delete(c.peers, id)
		}
	}
}

// sole returns the peer of every request in flight, when they all carry the same one;
// otherwise nil and why not.
func (c *callers) sole() (Peer, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case len(c.peers) == 0 && c.anonymous == 0:
		return nil, "no call is in flight on the upstream session"
	case len(c.peers) == 0:
		return nil, "the calls in flight on the upstream session were not made by MCP clients"
	case len(c.peers) > 1 || c.anonymous > 0:
		return nil, "calls of several callers are in flight on the upstream session"
	}
	for _, h := range c.peers {
		return h.peer, ""
	}
	return nil, ""
}

// attribute returns the caller a message from the server belongs to: the peer of the
// request whose context the message arrived under (exact: a streamable HTTP response
// stream, or a multi round-trip input request), or else the peer every request in flight
// on the session shares. It returns nil and the reason when it cannot tell.
func (s *session) attribute(ctx context.Context) (Peer, string) {
	if p := peerFrom(ctx); p != nil {
		return p, ""
	}
	return s.calls.sole()
}

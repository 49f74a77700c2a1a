package ws

import (
	"context"
	"log/slog"
	"sync"

	"github.com/gatehouse-dev/gatehouse/faces"
)

// spanIngress is the name of a message's ingress span until its method is known.
const spanIngress = "websocket message"

// closeReasonShutdown is the close reason of a connection the face drains or aborts
// (faces.CloseReasonSlow is that of a slow consumer).
const closeReasonShutdown = "server shutting down"

// Gateway is what the face sees of the gateway.
type Gateway interface {
	// Acquire returns the configuration in force, held until its Release.
	Acquire() Runtime
	// Draining reports whether the gateway is shutting down: new connections are refused.
	Draining() bool
}

// Runtime is one configuration as this face sees it.
type Runtime interface {
	faces.Runtime
	// WebSocket returns the websocket section, nil when the face is off.
	WebSocket() *Config
}

// Face is the JSON-RPC face over WebSocket. It outlives configurations: each connection
// reads its section when it is opened, and each message runs on the configuration in
// force when it arrives.
type Face struct {
	gw    Gateway
	log   *slog.Logger
	conns registry

	pools sync.Map // write buffer size → *sync.Pool of the connections' write buffers
}

// New returns the face serving gw's configurations; log receives what fails outside a call.
func New(gw Gateway, log *slog.Logger) *Face {
	f := &Face{gw: gw, log: log}
	f.conns.init()
	return f
}

// writeBuffers returns the pool of write buffers of size bytes: one pool per size, as a
// configuration reload may change it.
func (f *Face) writeBuffers(size int) *sync.Pool {
	if p, ok := f.pools.Load(size); ok {
		return p.(*sync.Pool)
	}
	p, _ := f.pools.LoadOrStore(size, new(sync.Pool))
	return p.(*sync.Pool)
}

// Drain stops every connection reading, waits for their running requests to be answered,
// and closes them with 1001; connections still busy when ctx ends are aborted.
func (f *Face) Drain(ctx context.Context) error { return f.conns.drain(ctx) }

// Open returns how many connections are open.
func (f *Face) Open() int {
	f.conns.mu.Lock()
	defer f.conns.mu.Unlock()
	return len(f.conns.conns)
}

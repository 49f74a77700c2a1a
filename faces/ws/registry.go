package ws

import (
	"context"
	"sync"

	"github.com/gatehouse-dev/gatehouse/faces"
)

// registry tracks open WebSocket connections so a shutdown can drain them (http.Server
// does not track hijacked connections).
type registry struct {
	mu     sync.Mutex
	conns  map[*wsConn]struct{}
	closed bool
}

func (r *registry) init() { r.conns = make(map[*wsConn]struct{}) }

func (r *registry) add(c *wsConn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *registry) remove(c *wsConn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

// drain stops every connection reading, waits for their running requests to be answered,
// and closes them with 1001; connections still busy when ctx ends are aborted.
func (r *registry) drain(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	conns := make([]*wsConn, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	return faces.DrainConns(ctx, conns, "websocket connections")
}

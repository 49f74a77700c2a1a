package faces

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// FreshConns tracks a listener's connections that have not sent a request yet, so the
// drain can close them: http.Server.Shutdown waits up to 5 s for such a connection to send
// its first request (golang/go#22682), and clients that dial ahead — load balancers,
// http.Transport racing a dial against a connection being returned — leave them open and
// unused. Closing one loses nothing: no request was read from it.
type FreshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// Track is the http.Server's ConnState hook.
func (f *FreshConns) Track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st == http.StateNew {
		if f.conns == nil {
			f.conns = make(map[net.Conn]struct{})
		}
		f.conns[c] = struct{}{}
		return
	}
	delete(f.conns, c)
}

// closeAll closes every connection that has not sent a request.
func (f *FreshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		_ = c.Close()
		delete(f.conns, c)
	}
}

// CloseUntil closes the fresh connections now and every 50 ms until done is closed: the
// drain runs beside http.Server.Shutdown, which closes the listener concurrently, so a
// connection accepted a moment before is caught by the next round.
func (f *FreshConns) CloseUntil(done <-chan struct{}) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		f.closeAll()
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

package faces

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// OriginChecker is the WebSocket upgrade's origin check of the faces that speak
// WebSocket: it allows requests without Origin (non-browser clients), same-host origins,
// and the allowed ones ("*" for any).
func OriginChecker(allowed []string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		origin := r.Header.Get("Origin")
		if origin == "" || slices.Contains(allowed, "*") || slices.Contains(allowed, origin) {
			return true
		}
		u, err := url.Parse(origin)
		return err == nil && strings.EqualFold(u.Host, r.Host)
	}
}

// DrainConn is a long-lived connection a face drains on shutdown.
type DrainConn interface {
	// BeginDrain stops the connection reading new messages; what runs finishes.
	BeginDrain()
	// Abort fails the connection at once.
	Abort()
	// Done is closed once the connection is fully finished.
	Done() <-chan struct{}
}

// DrainConns begins draining every connection of conns, then waits for each to finish;
// when ctx ends first, every connection is aborted and the error names what (e.g.
// "websocket connections") was still busy.
func DrainConns[C DrainConn](ctx context.Context, conns []C, what string) error {
	for _, c := range conns {
		c.BeginDrain()
	}
	for _, c := range conns {
		select {
		case <-c.Done():
		case <-ctx.Done():
			for _, c := range conns {
				c.Abort()
			}
			return errors.New(what + " still busy at the end of the grace period")
		}
	}
	return nil
}

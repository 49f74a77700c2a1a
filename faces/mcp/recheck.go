package mcpface

import (
	"context"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Every request of the HTTP transports authenticates its own credential, so a call made
// with an expired or revoked token is refused before it runs (401, 4001) and no hop token
// is minted for it. What outlives a request is its event stream — the standalone stream of
// a streamable HTTP session (GET /mcp) and the stream of a legacy SSE session (GET /sse),
// which carry notifications and, for the legacy transport, every response. Such a stream
// is watched (auth.Liveness) with the credential that opened it and ends when that
// credential expires or is revoked (at once on the replica that revokes, within
// auth.revocation.refresh on the others):
//
//   - a legacy SSE session lives as long as its stream, so it ends with it: its message
//     URL answers as for an unknown session from then on;
//   - a streamable HTTP session whose stream's credential was revoked is terminated as a
//     DELETE would: every later request naming it is answered 404, so the client starts a
//     new session (with a credential that is still good). One whose credential merely
//     expired is not: the session is bound to its subject, not to one token, so a client
//     that refreshed its token keeps it and re-opens the stream with the new token.

// sessionTerminateTimeout bounds recording the termination of a revoked session.
const sessionTerminateTimeout = 5 * time.Second

// watchStream returns r with a context that ends when the credential that opened its event
// stream expires or is revoked, and end, which the handler calls once the stream is over:
// it stops watching and, when the credential was revoked, terminates the streamable HTTP
// session the stream belonged to.
func (f *Face) watchStream(r *http.Request) (*http.Request, func()) {
	p, _ := r.Context().Value(principalKey{}).(gateway.Principal)
	rt := f.gw.Acquire()
	live := rt.Pipeline().Liveness
	rt.Release()
	ctx, cancel := context.WithCancelCause(r.Context())
	w := live.Watch(p, cancel)
	return r.WithContext(ctx), func() {
		w.Stop()
		revoked := auth.ReasonOf(context.Cause(ctx)) == auth.ReasonRevoked
		cancel(nil)
		if revoked {
			f.terminateSession(r)
		}
	}
}

// terminateSession records the streamable HTTP session r names as terminated, until its
// token expires; requests without one (legacy SSE) have nothing to record.
func (f *Face) terminateSession(r *http.Request) {
	id := r.Header.Get(mcpserver.HeaderKeySessionID)
	if id == "" || f.sessions == nil || mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		return
	}
	t, err := f.sessions.signer.verify(id)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), sessionTerminateTimeout)
	defer cancel()
	if err := f.sessions.table.revoke(ctx, t.name, max(f.sessions.remaining(t), time.Millisecond)); err != nil {
		f.log.Warn("terminating the mcp session of a revoked credential", "err", err)
	}
}

package mcpface

import (
	"context"
	"maps"
	"net/http"
	"sync"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// A tools/call that mcp-go's server serves (a session this process does not hold — it was
// initialized on another replica, or before a restart —, a client with sampling or
// elicitation, the 2026-07-28 revision) gets the progress and log messages relayed during
// the call on its own POST response, as the fast path's calls do: the face writes them
// onto that response itself (a callStream sharing the response with mcp-go: postStream),
// rather than through mcp-go's session. Through the session they were lost or misrouted:
// mcp-go feeds the POST response and the session's GET stream from one queue, so a
// notification went to whichever stream took it first — the GET stream, open on this
// replica or not, where a client drops progress that arrives after the result —, and its
// POST forwarder drops a notification it took from the queue as the call ends.

// postStream is the response writer mcp-go writes a POST's response to, which the face
// writes the events of a call's callStream to as well: every write is serialized, and the
// response is started once, by whichever writes first. mcp-go sees headers of its own
// (copied to the response when mcp-go starts it): a header it sets after the face started
// the response is not sent, as net/http ignores one set after WriteHeader.
type postStream struct {
	w   http.ResponseWriter
	hdr http.Header // mcp-go's view of the headers

	mu      sync.Mutex
	started bool // the response's status line is written
	sse     bool // the response is an event stream: the face may add events
}

type postStreamKey struct{}

// withPostStream returns r under a context carrying a postStream over w, and the stream.
func withPostStream(w http.ResponseWriter, r *http.Request) (*postStream, *http.Request) {
	s := &postStream{w: w, hdr: w.Header().Clone()}
	return s, r.WithContext(context.WithValue(r.Context(), postStreamKey{}, s))
}

// Header implements http.ResponseWriter.
func (s *postStream) Header() http.Header { return s.hdr }

// WriteHeader implements http.ResponseWriter: a second status (mcp-go's, once the face
// started the response as an event stream) is dropped.
func (s *postStream) WriteHeader(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked(status)
}

func (s *postStream) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked(http.StatusOK)
	return s.w.Write(b)
}

// Flush implements http.Flusher, which mcp-go needs to stream SSE.
func (s *postStream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked(http.StatusOK)
	_ = http.NewResponseController(s.w).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *postStream) Unwrap() http.ResponseWriter { return s.w }

// startLocked starts the response with mcp-go's headers, unless it is started.
func (s *postStream) startLocked(status int) {
	if s.started {
		return
	}
	h := s.w.Header()
	maps.Copy(h, s.hdr)
	s.started = true
	s.sse = status == http.StatusOK && h.Get("Content-Type") == "text/event-stream"
	s.w.WriteHeader(status)
}

// event writes data as one event of the response, starting it as an event stream with the
// headers mcp-go gives one; it writes nothing once mcp-go started the response otherwise.
func (s *postStream) event(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
		h.Set("Cache-Control", "no-cache")
		s.started, s.sse = true, true
		s.w.WriteHeader(http.StatusOK)
	}
	if !s.sse {
		return
	}
	ev := make([]byte, 0, len(data)+24)
	ev = append(ev, "event: message\ndata: "...)
	ev = append(ev, data...)
	ev = append(ev, "\n\n"...)
	_, _ = s.w.Write(ev)
	_ = http.NewResponseController(s.w).Flush()
}

// postCallStream returns the callStream on which the tool call of ctx relays progress and
// log messages when mcp-go serves it over streamable HTTP: its POST response. nil on the
// other transports (stdio, the legacy SSE transport), whose notifications go through
// mcp-go's session.
func postCallStream(ctx context.Context) *callStream {
	ps, _ := ctx.Value(postStreamKey{}).(*postStream)
	if ps == nil {
		return nil
	}
	return &callStream{w: ps, shared: ps, sess: mcpserver.ClientSessionFromContext(ctx), reqCtx: ctx}
}

type callStreamKey struct{}

// withCallStream returns ctx carrying st, the stream of the request of ctx, for a multi
// round-trip call's progress and log messages (mrtrface.go), which find the request now
// waiting on the call by its context; ctx unchanged when st is nil.
func withCallStream(ctx context.Context, st *callStream) context.Context {
	if st == nil {
		return ctx
	}
	return context.WithValue(ctx, callStreamKey{}, st)
}

// callStreamOf returns the stream withCallStream put on ctx, or nil.
func callStreamOf(ctx context.Context) *callStream {
	st, _ := ctx.Value(callStreamKey{}).(*callStream)
	return st
}

package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	wire "github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// HTTP+SSE: every endpoint takes one envelope as its POST body, after the caller is
// authenticated (Authorization: Bearer, or X-API-Key) and the body's size checked.
//
//	POST /session/chat?route=<name>   chat.start; the response is an event stream of every
//	                                  message concerning the request, up to its terminal one
//	POST /session/abort               chat.abort {requestId, sessionId} → chat.abort.result
//	POST /session/task                task.status {taskId, sessionId} → task.status.result
//	POST /session/status              status.get → status.result
//
// The queue belongs to the payload's sessionId, per principal: chat.starts naming the
// same sessionId run one at a time; without one a request has a queue of its own.

// sseItem is one message waiting for an event stream's writer.
type sseItem struct {
	typ   string
	data  []byte
	final bool
}

// sseSink is the event stream of one request.
type sseSink struct {
	q    *faces.SendQueue[sseItem]
	max  int64 // session.send_queue_bytes
	ctx  context.Context
	wait time.Duration
	cut  func() // cuts the consumer off (too slow)
}

// typeOf returns the type of an envelope AppendEnvelope wrote: the first `,"type":"`
// in it is its type member, as the id before it is escaped (a quote in it is \").
func typeOf(msg []byte) string {
	_, rest, ok := bytes.Cut(msg, []byte(`,"type":"`))
	if !ok {
		return ""
	}
	typ, _, ok := bytes.Cut(rest, []byte{'"'})
	if !ok {
		return ""
	}
	return string(typ)
}

func (s *sseSink) send(msg []byte) bool {
	if s.q.Push(s.ctx, sseItem{typ: typeOf(msg), data: msg}, s.wait) {
		return true
	}
	if s.ctx.Err() == nil {
		s.cut()
	}
	return false
}

func (s *sseSink) offer(msg []byte) bool {
	return s.q.TryPush(sseItem{typ: typeOf(msg), data: msg}, s.q.Cap()/2, s.max/2)
}

func (s *sseSink) final(msg []byte) {
	if !s.q.TryPush(sseItem{typ: typeOf(msg), data: msg, final: true}, s.q.Cap()+1, 1<<62) {
		// No room even past the bound: the writer is gone or the consumer too slow; a
		// final marker with no data ends the writer.
		select {
		case s.q.Chan() <- sseItem{final: true}:
		default:
			s.cut()
		}
	}
}

// authenticate checks the caller of an HTTP+SSE request and reads its body: nil and the
// error written when either fails.
func (f *Face) authenticate(w http.ResponseWriter, r *http.Request) (*Config, gateway.Principal, *auth.Liveness, []byte, bool) {
	rt := f.gw.Acquire()
	defer rt.Release()
	cfg, p := rt.Session(), rt.Pipeline()
	traceID := observability.NewTraceID()
	if cfg == nil {
		faces.WriteHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "Session RPC is not enabled"), traceID, faces.EncodingJSON)
		return nil, gateway.Principal{}, nil, nil, false
	}
	principal, err := rt.Authenticator().Authenticate(r.Context(), faces.HTTPCredentials(r, gateway.ZoneExternal))
	if err != nil {
		faces.WriteChallenge(w, gateway.AsError(err), traceID, faces.EncodingJSON, "")
		return nil, gateway.Principal{}, nil, nil, false
	}
	body, err := faces.ReadBody(r, cfg.MaxMessageBytes, nil)
	if err != nil {
		faces.WriteBodyError(w, f.log, err, cfg.MaxMessageBytes, traceID, faces.EncodingJSON)
		return nil, gateway.Principal{}, nil, nil, false
	}
	c := *cfg
	return &c, principal, p.Liveness, body, true
}

// decodeHTTP decodes the envelope of an HTTP+SSE request, which must be of type want.
func (f *Face) decodeHTTP(w http.ResponseWriter, cfg *Config, body []byte, want string) (wire.Envelope, bool) {
	env, derr := wire.DecodeRequest(body, f.limits(cfg))
	if derr == nil && env.Type != want {
		derr = &wire.DecodeError{Reason: wire.ReasonUnknownType, Detail: "this endpoint takes " + want, ID: env.ID}
	}
	if derr != nil {
		writeJSON(w, http.StatusBadRequest, envelopeError("rpc_unknown", derr))
		return env, false
	}
	return env, true
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body) //nolint:gosec // a JSON envelope the face encoded, served as application/json with nosniff
}

// sessionID reads the sessionId member of a payload.
func sessionID(p json.RawMessage) string {
	var v struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(p, &v)
	return v.SessionID
}

// errTooManySessions refuses a principal's session past session.max_sessions.
var errTooManySessions = errors.New("too many sessions")

// sseSession returns principal's session sid, creating it when create; sessions idle past
// session_idle are dropped on the way.
func (f *Face) sseSession(cfg *Config, principal gateway.Principal, sid string, create bool) (*session, error) {
	key := principal.Owner()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed && create {
		return nil, errShutdown
	}
	m := f.sessions[key]
	now := time.Now()
	for id, s := range m {
		if idle, since := s.idle(); idle && now.Sub(since) > cfg.SessionIdle {
			delete(m, id)
		}
	}
	if s := m[sid]; s != nil || !create {
		return s, nil
	}
	if len(m) >= cfg.MaxSessions {
		return nil, errTooManySessions
	}
	if m == nil {
		m = make(map[string]*session)
		f.sessions[key] = m
	}
	s := newSession(context.Background(), f, *cfg)
	m[sid] = s
	return s, nil
}

// ServeChat serves POST /session/chat.
func (f *Face) ServeChat(w http.ResponseWriter, r *http.Request) {
	cfg, principal, live, body, ok := f.authenticate(w, r)
	if !ok {
		return
	}
	env, ok := f.decodeHTTP(w, cfg, body, wire.TypeChatStart)
	if !ok {
		return
	}
	if _, ok := startPayload(env.Payload); !ok {
		writeJSON(w, http.StatusBadRequest, errorMsg(env.ID, wire.TypeChatError, "", wire.ErrorInvalidPayload,
			gateway.Errorf(schemas.CodeInvalidParams, "chat.start takes {message, history?, sessionId?, options?}"), nil))
		return
	}
	route, ok := cfg.route(r.URL.Query().Get("route"))
	if !ok {
		writeJSON(w, http.StatusNotFound, errorMsg(env.ID, wire.TypeChatError, "", wire.ErrorUnknownRoute,
			gateway.Errorf(schemas.CodeMethodNotFound, "No such session route"), nil))
		return
	}
	var s *session
	if sid := sessionID(env.Payload); sid != "" {
		var err error
		if s, err = f.sseSession(cfg, principal, sid, true); err != nil {
			status, ge := http.StatusTooManyRequests, gateway.Errorf(schemas.CodeOverloaded, "Too many sessions").With("limit", "max_sessions").With("max", cfg.MaxSessions)
			if errors.Is(err, errShutdown) {
				status, ge = http.StatusServiceUnavailable, gateway.NewError(schemas.CodeShuttingDown)
			}
			writeJSON(w, status, errorMsg(env.ID, wire.TypeChatError, "", errorID(ge), ge, nil))
			return
		}
	} else {
		s = newSession(context.Background(), f, *cfg)
	}
	// The request's stream: its own send queue, cut off as a WebSocket consumer is.
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	q := faces.NewSendQueue[sseItem](cfg.SendQueue, cfg.SendQueueBytes, func(it sseItem) int { return len(it.data) })
	out := &sseSink{q: q, max: cfg.SendQueueBytes, ctx: ctx, wait: faces.SlowConsumerWait(cfg.WriteTimeout), cut: func() { cancel(errSlow) }}
	ended := make(chan error, 1)
	watch := live.Watch(principal, func(err error) {
		select {
		case ended <- err:
		default:
		}
	})
	defer watch.Stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	s.start(env.ID, route, append([]byte(nil), env.Payload...), out, gateway.ProtocolHTTP, watch.Principal)
	f.stream(w, rc, cfg, s, env.ID, q, ctx, ended)
}

// stream writes the request's messages as Server-Sent Events until its terminal one, the
// client leaving, the consumer being cut off or its credential ending.
func (f *Face) stream(w http.ResponseWriter, rc *http.ResponseController, cfg *Config, s *session, id string,
	q *faces.SendQueue[sseItem], ctx context.Context, ended <-chan error) {
	ping := time.NewTicker(cfg.PingInterval)
	defer ping.Stop()
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(cfg.WriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	leave := func(cause error) {
		s.mu.Lock()
		r := s.active[id]
		s.mu.Unlock()
		if r != nil {
			s.stop(r, cause, false)
		}
	}
	for {
		select {
		case it := <-q.Chan():
			q.Taken(it)
			if it.data != nil {
				frame := make([]byte, 0, len(it.data)+len(it.typ)+16)
				frame = append(frame, "event: "...)
				frame = append(frame, it.typ...)
				frame = append(frame, "\ndata: "...)
				frame = append(frame, it.data...)
				frame = append(frame, "\n\n"...)
				if !write(frame) {
					leave(errGone)
					return
				}
			}
			if it.final {
				return
			}
		case <-ping.C:
			if !write([]byte(": ping\n\n")) {
				leave(errGone)
				return
			}
		case err := <-ended: // the credential expired or was revoked
			s.mu.Lock()
			r := s.active[id]
			s.mu.Unlock()
			if r != nil {
				s.stop(r, err, true)
			}
		case <-ctx.Done():
			cause := context.Cause(ctx)
			if errors.Is(cause, context.Canceled) {
				cause = errGone
			}
			leave(cause)
			if errors.Is(cause, errSlow) {
				q.Drop()
				return
			}
			// The client left: nothing more can reach it.
			return
		}
	}
}

// ServeAbort serves POST /session/abort.
func (f *Face) ServeAbort(w http.ResponseWriter, r *http.Request) {
	cfg, principal, _, body, ok := f.authenticate(w, r)
	if !ok {
		return
	}
	env, ok := f.decodeHTTP(w, cfg, body, wire.TypeChatAbort)
	if !ok {
		return
	}
	var p struct {
		RequestID string `json:"requestId"`
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(env.Payload, &p) != nil || p.RequestID == "" || p.SessionID == "" {
		writeJSON(w, http.StatusBadRequest, invalidPayload(env.ID, "chat.abort over HTTP takes {requestId, sessionId}"))
		return
	}
	res := wire.AbortResult{RequestID: p.RequestID, State: wire.StateUnknown}
	if s, _ := f.sseSession(cfg, principal, p.SessionID, false); s != nil {
		res = s.abort(p.RequestID)
	}
	out, _ := json.Marshal(res)
	writeJSON(w, http.StatusOK, wire.AppendEnvelope(nil, env.ID, wire.TypeChatAbortResult, out))
}

// ServeTask serves POST /session/task.
func (f *Face) ServeTask(w http.ResponseWriter, r *http.Request) {
	cfg, principal, _, body, ok := f.authenticate(w, r)
	if !ok {
		return
	}
	env, ok := f.decodeHTTP(w, cfg, body, wire.TypeTaskStatus)
	if !ok {
		return
	}
	s, _ := f.sseSession(cfg, principal, sessionID(env.Payload), false)
	msg := taskStatus(s, env)
	status := http.StatusOK
	if typeOf(msg) == wire.TypeError {
		status = http.StatusNotFound
	}
	writeJSON(w, status, msg)
}

// ServeStatus serves POST /session/status.
func (f *Face) ServeStatus(w http.ResponseWriter, r *http.Request) {
	cfg, _, _, body, ok := f.authenticate(w, r)
	if !ok {
		return
	}
	env, ok := f.decodeHTTP(w, cfg, body, wire.TypeStatusGet)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, wire.AppendEnvelope(nil, env.ID, wire.TypeStatusResult, statusResult(cfg)))
}

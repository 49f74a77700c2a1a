package demo

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/codecs/sse"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// abortPayload is the payload of chat.abort (sessionId only over HTTP).
type abortPayload struct {
	RequestID string `json:"requestId"`
	SessionID string `json:"sessionId"`
}

// serveWebSocket serves one WebSocket connection: its own queue of requests.
func (c *Chat) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	ok, proto := c.authorized(r)
	if !ok {
		http.Error(w, "a bearer token is required", http.StatusUnauthorized)
		return
	}
	var h http.Header
	if proto != "" {
		h = http.Header{"Sec-Websocket-Protocol": {proto}}
	}
	conn, err := c.upgrader.Upgrade(w, r, h)
	if err != nil {
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = conn.Close()
		return
	}
	c.conns[conn] = struct{}{}
	c.wg.Add(1)
	c.mu.Unlock()
	defer c.wg.Done()
	ctx, cancel := context.WithCancel(c.ctx)
	s := newChatSession(c, "")
	defer func() {
		cancel() // a disconnect aborts the running request for real
		s.closeAll()
		_ = conn.Close()
		c.mu.Lock()
		delete(c.conns, conn)
		c.mu.Unlock()
	}()
	conn.SetReadLimit(c.opts.MaxMessageBytes)
	var wmu sync.Mutex
	send := func(b []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		_ = conn.SetWriteDeadline(time.Now().Add(chatWriteTimeout))
		if err := conn.WriteMessage(websocket.TextMessage, b); err != nil {
			_ = conn.Close() // the read loop ends and aborts what runs
		}
	}
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) && ctx.Err() == nil {
				c.opts.Logger.Debug("demo-chat connection ended", "err", err)
			}
			return
		}
		var env sessionrpc.Envelope
		if json.Unmarshal(data, &env) != nil || env.ID == "" || env.Type == "" {
			send(envelope(env.ID, sessionrpc.TypeError, protocolError("bad_envelope", "a message must be a JSON object with an id and a type", schemas.CodeInvalidRequest)))
			continue
		}
		switch env.Type {
		case sessionrpc.TypeStatusGet:
			send(envelope(env.ID, sessionrpc.TypeStatusResult, statusResult()))
		case sessionrpc.TypeChatStart:
			s.start(env.ID, env.Payload, send, ctx)
		case sessionrpc.TypeChatAbort:
			var p abortPayload
			_ = json.Unmarshal(env.Payload, &p)
			aborted, state := s.abort(p.RequestID)
			send(envelope(env.ID, sessionrpc.TypeChatAbortResult, abortResult(p.RequestID, aborted, state)))
		case sessionrpc.TypeTaskStatus:
			send(c.taskStatus(env.ID, env.Payload))
		default:
			send(envelope(env.ID, sessionrpc.TypeError, protocolError("unknown_type", "unknown message type", schemas.CodeMethodNotFound)))
		}
	}
}

// httpSession returns the session of id, made if needed, and counts a user of it; release
// undoes that. A request without a session id (reqID) has a session of its own, found
// by its request id.
func (c *Chat) httpSession(id, reqID string) *chatSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == "" {
		s := newChatSession(c, "")
		if _, taken := c.loose[reqID]; !taken {
			c.loose[reqID] = s
			s.looseID = reqID
		}
		return s
	}
	s := c.sessions[id]
	if s == nil {
		s = newChatSession(c, id)
		c.sessions[id] = s
	}
	s.users++
	return s
}

func (c *Chat) release(s *chatSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.key == "" {
		if s.looseID != "" {
			delete(c.loose, s.looseID)
		}
		return
	}
	if s.users--; s.users == 0 {
		delete(c.sessions, s.key)
	}
}

// readEnvelope decodes a request body holding one envelope of type typ (any type when
// typ is ""); it answers the client itself and returns false on failure.
func (c *Chat) readEnvelope(w http.ResponseWriter, r *http.Request, typ string) (sessionrpc.Envelope, bool) {
	var env sessionrpc.Envelope
	if ok, _ := c.authorized(r); !ok {
		http.Error(w, "a bearer token is required", http.StatusUnauthorized)
		return env, false
	}
	body := http.MaxBytesReader(w, r.Body, c.opts.MaxMessageBytes)
	if err := json.NewDecoder(body).Decode(&env); err != nil || env.ID == "" || (typ != "" && env.Type != typ) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(envelope(env.ID, sessionrpc.TypeError, protocolError("bad_envelope", "the body must be one "+typ+" envelope with an id", schemas.CodeInvalidRequest)))
		return env, false
	}
	return env, true
}

func writeJSON(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// serveChat runs one chat.start over HTTP: the response is an event stream of every
// server message concerning it (chat.accepted … chat.done or chat.error), each the data
// of one SSE event named by the message type.
func (c *Chat) serveChat(w http.ResponseWriter, r *http.Request) {
	env, ok := c.readEnvelope(w, r, sessionrpc.TypeChatStart)
	if !ok {
		return
	}
	var p chatStartPayload
	_ = json.Unmarshal(env.Payload, &p)
	if !c.register() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	defer c.wg.Done()
	s := c.httpSession(p.SessionID, env.ID)
	defer c.release(s)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()

	w.Header().Set("Content-Type", sse.ContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	out := make(chan []byte, 64)
	send := func(b []byte) {
		select {
		case out <- b:
		case <-ctx.Done():
		}
	}
	var buf []byte
	write := func(b []byte) {
		var head struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &head)
		buf = sse.AppendEvent(buf[:0], head.Type, b)
		if _, err := w.Write(buf); err != nil {
			cancel()
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	req, started := s.start(env.ID, env.Payload, send, ctx)
	if !started {
		for len(out) > 0 {
			write(<-out)
		}
		return
	}
	for {
		select {
		case b := <-out:
			write(b)
		case <-req.end:
			for len(out) > 0 {
				write(<-out)
			}
			return
		case <-ctx.Done():
			// The client went away: abort the request, and wait for it to end (its
			// runner is on this session).
			s.mu.Lock()
			if s.running == req {
				req.cancel()
			} else if _, queued := s.byID[req.id]; queued {
				s.removeQueued(req)
			}
			s.mu.Unlock()
			<-req.end
			return
		}
	}
}

// removeQueued takes the queued request q off (under s.mu) and ends it.
func (s *chatSession) removeQueued(q *chatRequest) {
	for i, x := range s.queue {
		if x == q {
			s.queue = append(s.queue[:i:i], s.queue[i+1:]...)
			s.endQueued(q)
			s.reemit()
			return
		}
	}
}

// serveAbort answers POST /session/abort: a chat.abort envelope whose payload names the
// request id and the session id it was started under.
func (c *Chat) serveAbort(w http.ResponseWriter, r *http.Request) {
	env, ok := c.readEnvelope(w, r, sessionrpc.TypeChatAbort)
	if !ok {
		return
	}
	var p abortPayload
	_ = json.Unmarshal(env.Payload, &p)
	c.mu.Lock()
	s := c.sessions[p.SessionID]
	if p.SessionID == "" {
		s = c.loose[p.RequestID]
	}
	c.mu.Unlock()
	aborted, state := false, "unknown"
	if s != nil {
		aborted, state = s.abort(p.RequestID)
	} else {
		c.abortMsgs.Add(1)
		if t := c.findByRequest(p.RequestID); t != nil {
			state, _ = t.snapshot()
		}
	}
	writeJSON(w, envelope(env.ID, sessionrpc.TypeChatAbortResult, abortResult(p.RequestID, aborted, state)))
}

// serveStatus answers POST /session/status (status.get; the body may be empty).
func (c *Chat) serveStatus(w http.ResponseWriter, r *http.Request) {
	if ok, _ := c.authorized(r); !ok {
		http.Error(w, "a bearer token is required", http.StatusUnauthorized)
		return
	}
	var env sessionrpc.Envelope
	_ = json.NewDecoder(http.MaxBytesReader(w, r.Body, c.opts.MaxMessageBytes)).Decode(&env)
	writeJSON(w, envelope(env.ID, sessionrpc.TypeStatusResult, statusResult()))
}

// serveTask answers POST /session/task (task.status).
func (c *Chat) serveTask(w http.ResponseWriter, r *http.Request) {
	env, ok := c.readEnvelope(w, r, sessionrpc.TypeTaskStatus)
	if !ok {
		return
	}
	writeJSON(w, c.taskStatus(env.ID, env.Payload))
}

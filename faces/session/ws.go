package session

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/auth"
	wire "github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// bearerPrefix starts the Sec-WebSocket-Protocol entry carrying a bearer token.
const bearerPrefix = "bearer."

// Close codes and reasons of a connection the gateway ends.
const (
	// CloseCredentialEnded (4001) closes a connection whose credential expired or was
	// revoked; the reason is CloseReasonExpired or CloseReasonRevoked.
	CloseCredentialEnded = 4001
	CloseReasonExpired   = "credential expired"
	CloseReasonRevoked   = "credential revoked"
	closeReasonShutdown  = "server shutting down"
)

// serverMsgID is the id of a message the gateway sends unasked (a credential's end).
const serverMsgID = "rpc_gateway"

// credentials returns the credentials of a GET /session upgrade — its headers, or a
// bearer token offered as the subprotocol bearer.<token> — and the subprotocol to echo.
// Two bearer entries, or one with an Authorization header, are ambiguous; an empty one is
// malformed.
func credentials(r *http.Request) (gateway.Credentials, string, *gateway.Error) {
	creds := faces.HTTPCredentials(r, gateway.ZoneExternal)
	var entry string
	for _, p := range websocket.Subprotocols(r) {
		if !strings.HasPrefix(p, bearerPrefix) {
			continue
		}
		if entry != "" {
			return creds, "", refusal(auth.ReasonAmbiguous)
		}
		entry = p
	}
	switch {
	case entry == "":
		return creds, "", nil
	case r.Header.Get("Authorization") != "":
		return creds, "", refusal(auth.ReasonAmbiguous)
	case entry == bearerPrefix:
		return creds, "", refusal(auth.ReasonMalformed)
	}
	creds.Bearer = entry[len(bearerPrefix):]
	return creds, entry, nil
}

func refusal(reason auth.Reason) *gateway.Error {
	return gateway.NewError(schemas.CodeAuthentication).With(auth.DataReason, string(reason))
}

// ServeHTTP serves GET /session: the caller is authenticated from the upgrade request
// (Authorization, X-API-Key, or the subprotocol bearer.<token>, then echoed), ?route=
// picks the connection's route, and each text message is one envelope.
func (f *Face) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt := f.gw.Acquire()
	p, cfg := rt.Pipeline(), rt.Session()
	traceID := observability.NewTraceID()
	if cfg == nil {
		rt.Release()
		faces.WriteHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "Session RPC is not enabled"), traceID, faces.EncodingJSON)
		return
	}
	creds, subprotocol, refused := credentials(r)
	if refused != nil {
		rt.Release()
		faces.WriteChallenge(w, refused, traceID, faces.EncodingJSON, "")
		return
	}
	principal, err := rt.Authenticator().Authenticate(r.Context(), creds)
	live := p.Liveness
	rt.Release()
	if err != nil {
		faces.WriteChallenge(w, gateway.AsError(err), traceID, faces.EncodingJSON, "")
		return
	}
	route, ok := cfg.route(r.URL.Query().Get("route"))
	if !ok {
		faces.WriteHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "No such session route").With("errorId", wire.ErrorUnknownRoute), traceID, faces.EncodingJSON)
		return
	}
	if f.gw.Draining() {
		faces.WriteHTTPError(w, http.StatusServiceUnavailable, gateway.NewError(schemas.CodeShuttingDown), traceID, faces.EncodingJSON)
		return
	}
	up := websocket.Upgrader{
		CheckOrigin:     faces.OriginChecker(cfg.AllowedOrigins),
		ReadBufferSize:  cfg.ReadBufferBytes,
		WriteBufferSize: cfg.WriteBufferBytes,
		WriteBufferPool: f.writeBuffers(cfg.WriteBufferBytes),
	}
	if subprotocol != "" {
		up.Subprotocols = []string{subprotocol}
	}
	conn, err := up.Upgrade(w, r, http.Header{"X-Trace-Id": {traceID}})
	if err != nil {
		return // the upgrader has answered
	}
	c := newConn(f, conn, *cfg, route.Name)
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, closeReasonShutdown), time.Now().Add(time.Second))
		_ = conn.Close()
		return
	}
	f.conns[c] = struct{}{}
	f.mu.Unlock()
	c.cred = live.Watch(principal, c.credentialEnded)
	go c.serve()
}

// wsConn is one WebSocket connection: one reader, a writer while there is something to
// write, and the goroutine of its running request.
type wsConn struct {
	f     *Face
	conn  *websocket.Conn
	cfg   Config
	route string
	cred  *auth.Watch
	sess  *session

	ctx    context.Context
	cancel context.CancelCauseFunc

	send *faces.Outbox[[]byte]

	draining  chan struct{}
	drainOnce sync.Once
	endMu     sync.Mutex
	endCode   int // set when the credential ended: the close code serve uses
	endText   string
	endErr    error

	// w writes: a goroutine runs only while there is something to write.
	w    faces.WSWriter[[]byte]
	done chan struct{}
}

func newConn(f *Face, conn *websocket.Conn, cfg Config, route string) *wsConn {
	ctx, cancel := context.WithCancelCause(context.Background())
	c := &wsConn{f: f, conn: conn, cfg: cfg, route: route, ctx: ctx, cancel: cancel,
		send:     faces.NewOutbox(cfg.SendQueue, cfg.SendQueueBytes, func(b []byte) int { return len(b) }),
		draining: make(chan struct{}),
		done:     make(chan struct{}),
	}
	c.w.Init(conn, c.send, writeText, c.gone, cfg.WriteTimeout, cfg.PingInterval)
	c.sess = newSession(ctx, f, cfg)
	return c
}

// sink implementation: every request of the connection writes to it.
func (c *wsConn) sendMsg(msg []byte) bool {
	if c.send.Push(c.ctx, msg, faces.SlowConsumerWait(c.cfg.WriteTimeout)) {
		c.kick()
		return true
	}
	if c.ctx.Err() == nil {
		c.slow()
	}
	return false
}

type wsSink struct{ c *wsConn }

func (s wsSink) send(msg []byte) bool { return s.c.sendMsg(msg) }
func (s wsSink) final(msg []byte)     { s.c.sendMsg(msg) }
func (s wsSink) offer(msg []byte) bool {
	c := s.c
	if c.ctx.Err() != nil || !c.send.TryPush(msg, c.cfg.SendQueue/2, c.cfg.SendQueueBytes/2) {
		return false
	}
	c.kick()
	return true
}

// slow cuts off a consumer that cannot keep up: its requests are abandoned, what is
// queued for it dropped, and it is closed with 1008.
func (c *wsConn) slow() {
	c.f.log.Warn("disconnecting slow session consumer", "queued", c.send.Len(), "send_queue", c.cfg.SendQueue)
	c.cancel(errSlow)
	c.closeWith(websocket.ClosePolicyViolation, faces.CloseReasonSlow)
	if c.conn != nil {
		_ = c.conn.SetReadDeadline(time.Now())
	}
}

// credentialEnded ends the connection whose credential expired or was revoked: its
// requests end with chat.error "credential_ended", an error message says why, and it
// closes with 4001. It does not block.
func (c *wsConn) credentialEnded(err error) {
	text := CloseReasonRevoked
	if auth.ReasonOf(err) == auth.ReasonExpired {
		text = CloseReasonExpired
	}
	c.endMu.Lock()
	if c.endCode == 0 {
		c.endCode, c.endText, c.endErr = CloseCredentialEnded, text, err
	}
	c.endMu.Unlock()
	ge := gateway.AsError(err)
	if c.send.TryPush(errorMsg(serverMsgID, wire.TypeError, "", wire.ErrorCredential, ge, nil), c.cfg.SendQueue, c.cfg.SendQueueBytes) {
		c.kick()
	}
	_ = c.conn.SetReadDeadline(time.Now()) // serve ends the requests, then closes
}

func (c *wsConn) serve() {
	defer close(c.done)
	defer func() {
		c.f.mu.Lock()
		delete(c.f.conns, c)
		c.f.mu.Unlock()
	}()
	defer c.cred.Stop()
	c.w.Start()
	c.readLoop()
	c.endMu.Lock()
	code, text, endErr := c.endCode, c.endText, c.endErr
	c.endMu.Unlock()
	switch {
	case code != 0: // the credential ended: its requests are told so, then the close
		c.sess.close(endErr, true)
	case isClosed(c.draining):
		c.sess.dropQueued(errShutdown)
		c.sess.runs.Wait()
		code, text = websocket.CloseGoingAway, closeReasonShutdown
	default: // the peer is gone or broke the protocol
		c.cancel(errGone)
		c.sess.close(errGone, false)
		code, text = websocket.CloseGoingAway, closeReasonShutdown
	}
	c.closeWith(code, text)
	<-c.w.Done()
	c.cancel(errGone)
}

func (c *wsConn) readLoop() {
	c.conn.SetReadLimit(c.cfg.MaxMessageBytes)
	alive := func() { _ = c.conn.SetReadDeadline(time.Now().Add(c.cfg.PingInterval + c.cfg.PongTimeout)) }
	alive()
	c.conn.SetPongHandler(func(string) error { alive(); return nil })
	for {
		mt, data, err := c.conn.ReadMessage()
		if err != nil || isClosed(c.draining) || c.ctx.Err() != nil {
			if err != nil && strings.Contains(err.Error(), "read limit exceeded") {
				c.closeWith(websocket.CloseMessageTooBig, "message too large")
			}
			return
		}
		alive()
		if mt != websocket.TextMessage {
			c.sendMsg(envelopeError("rpc_unknown", &wire.DecodeError{Reason: wire.ReasonParse, Detail: "session messages are JSON text"}))
			continue
		}
		c.f.handle(c.sess, data, wsSink{c}, c.route, c.cred.Principal, c.cfg)
	}
}

// envelopeError is the error message answering an envelope that could not be decoded.
func envelopeError(id string, d *wire.DecodeError) []byte {
	if d.ID != "" {
		id = d.ID
	}
	code := schemas.CodeInvalidRequest
	if d.Reason == wire.ReasonParse {
		code = schemas.CodeParseError
	}
	if d.Reason == wire.ReasonTooLarge {
		code = schemas.CodePayloadTooLarge
	}
	p, _ := json.Marshal(wire.ErrorPayload{ErrorID: d.Reason, Message: d.Error(), Code: int(code)})
	return wire.AppendEnvelope(nil, id, wire.TypeError, p)
}

// BeginDrain implements faces.DrainConn: it stops reading new messages.
func (c *wsConn) BeginDrain() {
	c.drainOnce.Do(func() { close(c.draining) })
	_ = c.conn.SetReadDeadline(time.Now())
}

// Done implements faces.DrainConn.
func (c *wsConn) Done() <-chan struct{} { return c.done }

// Abort implements faces.DrainConn: it fails the connection at once.
func (c *wsConn) Abort() {
	c.cancel(errShutdown)
	c.closeWith(websocket.CloseGoingAway, closeReasonShutdown)
	_ = c.conn.Close()
}

// closeWith asks the writer to say goodbye with code and text; the first reason wins.
func (c *wsConn) closeWith(code int, text string) { c.w.Close(code, text) }

// kick starts the writer for what was just queued.
func (c *wsConn) kick() { c.w.Kick() }

// gone fails the connection whose writes fail: the peer is gone, and the reader stops.
func (c *wsConn) gone() {
	c.cancel(errGone)
	_ = c.conn.SetReadDeadline(time.Now())
}

// writeText writes one message as a text frame.
func writeText(conn *websocket.Conn, msg []byte) error {
	return conn.WriteMessage(websocket.TextMessage, msg)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

package server

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/codecs/msgpack"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// closeReasonShutdown is the close reason of a connection the server drains or aborts
// (closeReasonSlow, in sendqueue.go, that of a slow consumer).
const closeReasonShutdown = "server shutting down"

// handleWS serves GET /ws: the caller is authenticated from the upgrade request's headers
// (Authorization, X-API-Key, or a bearer token offered as the subprotocol bearer.<token>,
// which is then the subprotocol selected), then each message is one JSON-RPC body (a
// request or a batch): JSON in a text message, MessagePack in a binary one. What a message's requests produce — responses, progress,
// stream and event notifications — goes back in messages of the same kind. Requests run
// concurrently and their responses are sent as they complete.
func (s *Server) handleWS(c *gin.Context) {
	rt := s.acquire()
	cfg, w, r := rt.cfg.WebSocket, c.Writer, c.Request
	upgrade := rt.extractHTTP(r) // the caller's trace, which the connection's messages continue
	traceID := traceIDOf(upgrade)
	if cfg == nil {
		rt.release()
		writeHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "WebSocket is not enabled"), traceID)
		return
	}
	creds, subprotocol, refused := wsCredentials(r, gateway.ZoneExternal)
	if refused != nil {
		rt.release()
		writeAuthError(w, refused, traceID)
		return
	}
	principal, err := rt.auth.Authenticate(r.Context(), creds)
	rt.release()
	if err != nil {
		writeAuthError(w, gateway.AsError(err), traceID)
		return
	}
	if s.draining.Load() {
		writeHTTPError(w, http.StatusServiceUnavailable, gateway.NewError(schemas.CodeShuttingDown), traceID)
		return
	}
	up := websocket.Upgrader{
		CheckOrigin:       originChecker(cfg.AllowedOrigins),
		EnableCompression: false,
	}
	if subprotocol != "" {
		up.Subprotocols = []string{subprotocol}
	}
	conn, err := up.Upgrade(w, r, http.Header{"X-Trace-Id": {traceID}})
	if err != nil {
		return // the upgrader has answered the client
	}
	wc := newWSConn(s, conn, *cfg, principal)
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		wc.ctx = resilience.WithClientAddr(wc.ctx, ap.Addr()) // anonymous callers' rate-limit identity
	}
	wc.ctx = withTraceParentOf(wc.ctx, upgrade)
	if !s.ws.add(wc) {
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, closeReasonShutdown), time.Now().Add(time.Second))
		_ = conn.Close()
		return
	}
	wc.serve()
}

// originChecker allows requests without Origin (non-browser clients), same-host origins,
// and the configured ones ("*" for any).
func originChecker(allowed []string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		origin := r.Header.Get("Origin")
		if origin == "" || slices.Contains(allowed, "*") || slices.Contains(allowed, origin) {
			return true
		}
		u, err := url.Parse(origin)
		return err == nil && strings.EqualFold(u.Host, r.Host)
	}
}

// wsConn is one WebSocket connection: one reader (the handler's goroutine), one writer,
// and a goroutine per running request.
type wsConn struct {
	s         *Server
	conn      *websocket.Conn
	cfg       WebSocketConfig
	principal gateway.Principal

	ctx    context.Context // cancelled when the peer is gone or the connection is failed
	cancel context.CancelFunc

	send     *sendQueue[wsFrame] // what waits for the writer
	inflight chan struct{}       // one token per running request
	running  sync.WaitGroup

	callsMu sync.Mutex
	calls   map[string]*wsCall // requests in flight, by id key

	draining   atomic.Bool
	closeOnce  sync.Once
	closing    chan struct{} // closed when the writer should say goodbye
	closeCode  int
	closeText  string
	writerDone chan struct{}
	done       chan struct{} // closed when the connection is fully finished
}

func newWSConn(s *Server, conn *websocket.Conn, cfg WebSocketConfig, p gateway.Principal) *wsConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &wsConn{
		s: s, conn: conn, cfg: cfg, principal: p, ctx: ctx, cancel: cancel,
		send:       newSendQueue(cfg.SendQueue, cfg.SendQueueBytes, func(f wsFrame) int { return len(f.data) }),
		inflight:   make(chan struct{}, cfg.MaxInFlight),
		calls:      make(map[string]*wsCall),
		closing:    make(chan struct{}),
		writerDone: make(chan struct{}),
		done:       make(chan struct{}),
	}
}

// serve runs the connection until the peer leaves, the connection fails, or the server
// drains it.
func (c *wsConn) serve() {
	defer close(c.done)
	defer c.s.ws.remove(c)
	go c.writeLoop()
	c.readLoop()
	if !c.draining.Load() {
		c.cancel() // the peer is gone or broke the protocol: its calls are abandoned
	}
	c.running.Wait()
	c.closeWith(websocket.CloseGoingAway, closeReasonShutdown)
	<-c.writerDone
	c.cancel()
}

func (c *wsConn) readLoop() {
	c.conn.SetReadLimit(c.cfg.MaxMessageBytes)
	alive := func() { _ = c.conn.SetReadDeadline(time.Now().Add(c.cfg.PingInterval + c.cfg.PongTimeout)) }
	alive()
	c.conn.SetPongHandler(func(string) error { alive(); return nil })
	for {
		mt, data, err := c.conn.ReadMessage()
		if err != nil || c.draining.Load() {
			return
		}
		alive()
		enc := encodingJSON
		switch mt {
		case websocket.TextMessage:
		case websocket.BinaryMessage:
			enc = encodingMsgpack
		default:
			continue
		}
		lim := c.limits()
		text, terr := enc.toJSON(data, lim, c.cfg.MaxMessageBytes)
		if terr != nil {
			c.enqueue(enc, appendError(nil, jsonrpc.ID{}, terr, observability.NewTraceID()))
			continue
		}
		payload, derr := jsonrpc.Decode(text, lim)
		if c.control(&payload, derr, enc) {
			continue
		}
		select {
		case c.inflight <- struct{}{}:
		default:
			c.rejectOverloaded(payload, derr, enc)
			continue
		}
		unregister := c.register(&payload)
		c.running.Add(1)
		go c.handle(payload, derr, enc, unregister)
	}
}

// handle runs one message's requests on the runtime current when it arrived; what they
// produce goes back in enc.
func (c *wsConn) handle(payload jsonrpc.Payload, derr *jsonrpc.DecodeError, enc wireEncoding, unregister func()) {
	defer c.running.Done()
	defer func() { <-c.inflight }()
	defer unregister()
	rt := c.s.acquire()
	defer rt.release()
	ctx, span, traceID := rt.startMessage(c.ctx, &payload, derr)
	if span != nil {
		defer span.End()
	}
	ex := exchange{
		principal: c.principal,
		zone:      gateway.ZoneExternal,
		protocol:  gateway.ProtocolWebSocket,
		deadline:  rt.cfg.Deadline.Resolve(rt.now(), 0),
		traceID:   traceID,
		span:      span,
		encoding:  enc,
		begin:     c.begin,
		progress: func(id jsonrpc.ID, _ bool) (func(gateway.Progress), func()) {
			return progressSink(id, func(msg []byte) bool { return c.offer(enc, msg) })
		},
		stream: func(ctx context.Context, id jsonrpc.ID, s gateway.Stream) outcome {
			return relay(ctx, id, s, func(msg []byte) error {
				c.enqueue(enc, bytes.Clone(msg))
				return c.ctx.Err()
			})
		},
		events: func(ctx context.Context, id jsonrpc.ID, s gateway.Stream) outcome {
			return relayEvents(ctx, id, s, func(name string, data []byte) error {
				c.enqueue(enc, appendEventNote(nil, id, name, data))
				return c.ctx.Err()
			})
		},
	}
	if out := rt.servePayload(ctx, &ex, payload, derr, nil); len(out) > 0 {
		c.enqueue(enc, out)
	}
}

// limits returns the decoder limits of the current configuration for this caller.
func (c *wsConn) limits() jsonrpc.Limits {
	rt := c.s.acquire()
	defer rt.release()
	return rt.limitsFor(c.principal)
}

// rejectOverloaded answers every request of a message that found no in-flight slot.
func (c *wsConn) rejectOverloaded(payload jsonrpc.Payload, derr *jsonrpc.DecodeError, enc wireEncoding) {
	err := gateway.Errorf(schemas.CodeOverloaded, "Too many requests in flight on this connection").
		With("limit", "max_in_flight").With("max", c.cfg.MaxInFlight).With("retry_after_ms", 100)
	if out := reject(payload, derr, nil, err, observability.NewTraceID()); len(out) > 0 {
		c.enqueue(enc, out)
	}
}

// wsFrame is one message waiting for the writer: text (JSON) or binary (MessagePack).
type wsFrame struct {
	data   []byte
	binary bool
}

// frame returns msg, JSON text the caller no longer needs, as a message in enc.
func (c *wsConn) frame(enc wireEncoding, msg []byte) wsFrame {
	if enc != encodingMsgpack {
		return wsFrame{data: msg}
	}
	if data, err := msgpack.FromJSON(msg); err == nil {
		return wsFrame{data: data, binary: true}
	}
	traceID := observability.NewTraceID()
	c.s.log.Error("a WebSocket message has no MessagePack form", "trace_id", traceID)
	data, _ := enc.fromJSON(msg, traceID)
	return wsFrame{data: data, binary: true}
}

// enqueue hands a response, JSON text, to the writer in enc. When the queue is full
// (websocket.send_queue messages or send_queue_bytes bytes) it waits for room up to half
// websocket.write_timeout; a consumer whose queue stays full that long is disconnected.
func (c *wsConn) enqueue(enc wireEncoding, msg []byte) {
	if !c.send.push(c.ctx, c.frame(enc, msg), slowConsumerWait(c.cfg.WriteTimeout)) && c.ctx.Err() == nil {
		c.slow()
	}
}

// slow fails a consumer that cannot keep up: its calls are abandoned, what is queued for
// it is dropped, and it is closed with 1008 and closeReasonSlow once the writer can send
// the close frame (within websocket.write_timeout).
func (c *wsConn) slow() {
	c.s.log.Warn("disconnecting slow WebSocket consumer", "queued", len(c.send.ch), "queued_bytes", c.send.bytes.n.Load(),
		"send_queue", c.cfg.SendQueue, "send_queue_bytes", c.cfg.SendQueueBytes)
	c.cancel()
	c.closeWith(websocket.ClosePolicyViolation, closeReasonSlow)
}

// offer queues a progress report for the writer, in enc, without ever waiting: it is
// dropped when the connection is ending or the send queue is half full (in messages or in
// bytes), so that reports never take the room the responses that follow them need. Every
// request with an id gets a sink offering its reports here (exchange.progress).
func (c *wsConn) offer(enc wireEncoding, msg []byte) bool {
	if c.ctx.Err() != nil || 2*len(c.send.ch) >= cap(c.send.ch) {
		return false
	}
	return c.send.tryPush(c.frame(enc, msg), cap(c.send.ch)/2, c.cfg.SendQueueBytes/2)
}

// closeWith asks the writer to flush what is queued, send a close frame and close. The
// first reason given wins.
func (c *wsConn) closeWith(code int, text string) {
	c.closeOnce.Do(func() {
		c.closeCode, c.closeText = code, text
		close(c.closing)
	})
}

// beginDrain stops reading new messages; running requests finish and are answered.
func (c *wsConn) beginDrain() {
	c.draining.Store(true)
	_ = c.conn.SetReadDeadline(time.Now())
}

// abort fails the connection at once.
func (c *wsConn) abort() {
	c.cancel()
	c.closeWith(websocket.CloseGoingAway, closeReasonShutdown)
	_ = c.conn.Close()
}

func (c *wsConn) writeLoop() {
	defer close(c.writerDone)
	defer func() { _ = c.conn.Close() }()
	ping := time.NewTicker(c.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-c.closing: // a close (a slow consumer's above all) goes before what is queued
			c.goodbye()
			return
		default:
		}
		select {
		case msg := <-c.send.ch:
			c.send.taken(msg)
			if c.write(msg) != nil {
				c.cancel()
				return
			}
		case <-ping.C:
			if c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.cfg.WriteTimeout)) != nil {
				c.cancel()
				return
			}
		case <-c.closing:
			c.goodbye()
			return
		}
	}
}

// goodbye flushes what is queued (unless the connection failed as a slow consumer) and
// sends the close frame.
func (c *wsConn) goodbye() {
	c.flush()
	_ = c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.closeCode, c.closeText),
		time.Now().Add(c.cfg.WriteTimeout))
}

// flush writes what is queued, unless the connection failed as a slow consumer: then it
// is dropped.
func (c *wsConn) flush() {
	if c.closeCode == websocket.ClosePolicyViolation {
		c.send.drop()
		return
	}
	for {
		select {
		case msg := <-c.send.ch:
			c.send.taken(msg)
			if c.write(msg) != nil {
				return
			}
		default:
			return
		}
	}
}

func (c *wsConn) write(f wsFrame) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(c.cfg.WriteTimeout))
	mt := websocket.TextMessage
	if f.binary {
		mt = websocket.BinaryMessage
	}
	return c.conn.WriteMessage(mt, f.data)
}

// wsRegistry tracks open WebSocket connections so a shutdown can drain them (http.Server
// does not track hijacked connections).
type wsRegistry struct {
	mu     sync.Mutex
	conns  map[*wsConn]struct{}
	closed bool
}

func (r *wsRegistry) init() { r.conns = make(map[*wsConn]struct{}) }

func (r *wsRegistry) add(c *wsConn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *wsRegistry) remove(c *wsConn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

// drain stops every connection reading, waits for their running requests to be answered,
// and closes them with 1001; connections still busy when ctx ends are aborted.
func (r *wsRegistry) drain(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	conns := make([]*wsConn, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	for _, c := range conns {
		c.beginDrain()
	}
	for _, c := range conns {
		select {
		case <-c.done:
		case <-ctx.Done():
			for _, c := range conns {
				c.abort()
			}
			return errors.New("websocket connections still busy at the end of the grace period")
		}
	}
	return nil
}

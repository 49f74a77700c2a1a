package ws

import (
	"bytes"
	"context"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/codecs/msgpack"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// ServeHTTP serves GET /ws: the caller is authenticated from the upgrade request's headers
// (Authorization, X-API-Key, or a bearer token offered as the subprotocol bearer.<token>,
// which is then the subprotocol selected), then each message is one JSON-RPC body (a
// request or a batch): JSON in a text message, MessagePack in a binary one. What a
// message's requests produce — responses, progress, stream and event notifications — goes
// back in messages of the same kind. Requests run concurrently and their responses are
// sent as they complete.
//
// The handler returns once the connection is upgraded, so that nothing of the HTTP request
// (its buffers, request and context objects) outlives the handshake: the connection then
// lives on one reader goroutine, parked in a read of the next frame with a small buffer
// (websocket.read_buffer_bytes) while idle, and a writer goroutine that runs only while
// there is something to send, borrowing a pooled write buffer (websocket.write_buffer_bytes)
// for each message.
func (f *Face) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt := f.gw.Acquire()
	p, cfg := rt.Pipeline(), rt.WebSocket()
	upgrade := p.Tracer.ExtractHTTP(r) // the caller's trace, which the connection's messages continue
	traceID := observability.TraceIDOf(upgrade)
	if cfg == nil {
		rt.Release()
		faces.WriteHTTPError(w, http.StatusNotFound, gateway.Errorf(schemas.CodeInvalidRequest, "WebSocket is not enabled"), traceID, faces.EncodingJSON)
		return
	}
	creds, subprotocol, refused := credentials(r, gateway.ZoneExternal)
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
	if f.gw.Draining() {
		faces.WriteHTTPError(w, http.StatusServiceUnavailable, gateway.NewError(schemas.CodeShuttingDown), traceID, faces.EncodingJSON)
		return
	}
	up := websocket.Upgrader{
		CheckOrigin:       faces.OriginChecker(cfg.AllowedOrigins),
		EnableCompression: false,
		ReadBufferSize:    cfg.ReadBufferBytes,
		WriteBufferSize:   cfg.WriteBufferBytes,
		WriteBufferPool:   f.writeBuffers(cfg.WriteBufferBytes),
	}
	if subprotocol != "" {
		up.Subprotocols = []string{subprotocol}
	}
	conn, err := up.Upgrade(w, r, http.Header{"X-Trace-Id": {traceID}})
	if err != nil {
		return // the upgrader has answered the client
	}
	wc := newConn(f, conn, *cfg)
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		wc.ctx = resilience.WithClientAddr(wc.ctx, ap.Addr()) // anonymous callers' rate-limit identity
	}
	wc.ctx = observability.WithTraceParentOf(wc.ctx, upgrade)
	if !f.conns.add(wc) {
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, closeReasonShutdown), time.Now().Add(time.Second))
		_ = conn.Close()
		return
	}
	// From here on the credential is re-checked before each message and the connection
	// closes when it expires or is revoked (recheck.go).
	wc.cred = live.Watch(principal, wc.credentialEnded)
	go wc.serve()
}

// wsConn is one WebSocket connection: one reader, a writer while there is something to
// write, and a goroutine per running request.
type wsConn struct {
	f    *Face
	conn *websocket.Conn
	cfg  Config
	// cred is the connection's credential: re-checked before each message, renewed by
	// $/auth/renew, and closing the connection when it expires or is revoked.
	cred *auth.Watch

	ctx    context.Context // cancelled when the peer is gone or the connection is failed
	cancel context.CancelFunc

	send     *faces.Outbox[wsFrame] // what waits for the writer
	inflight chan struct{}          // one token per running request
	running  sync.WaitGroup

	callsMu sync.Mutex
	calls   map[string]*wsCall // requests in flight, by id key; nil when none

	draining atomic.Bool
	// w writes: a goroutine runs only while there is something to write (a message queued,
	// a ping due or the goodbye).
	w    faces.WSWriter[wsFrame]
	done chan struct{} // closed when the connection is fully finished
}

func newConn(f *Face, conn *websocket.Conn, cfg Config) *wsConn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &wsConn{
		f: f, conn: conn, cfg: cfg, ctx: ctx, cancel: cancel,
		send:     faces.NewOutbox(cfg.SendQueue, cfg.SendQueueBytes, func(f wsFrame) int { return len(f.data) }),
		inflight: make(chan struct{}, cfg.MaxInFlight),
		done:     make(chan struct{}),
	}
	c.w.Init(conn, c.send, writeFrame, cancel, cfg.WriteTimeout, cfg.PingInterval)
	return c
}

// serve runs the connection until the peer leaves, the connection fails, or the server
// drains it.
func (c *wsConn) serve() {
	defer close(c.done)
	defer c.f.conns.remove(c)
	defer c.cred.Stop()
	c.w.Start()
	c.readLoop()
	if !c.draining.Load() {
		c.cancel() // the peer is gone or broke the protocol: its calls are abandoned
	}
	c.running.Wait()
	c.closeWith(websocket.CloseGoingAway, closeReasonShutdown)
	<-c.w.Done()
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
		enc := faces.EncodingJSON
		switch mt {
		case websocket.TextMessage:
		case websocket.BinaryMessage:
			enc = faces.EncodingMsgpack
		default:
			continue
		}
		lim := c.limits()
		text, terr := enc.ToJSON(data, lim, c.cfg.MaxMessageBytes)
		if terr != nil {
			c.enqueue(enc, faces.AppendError(nil, jsonrpc.ID{}, terr, observability.NewTraceID()))
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

// handle runs one message's requests on the configuration in force when it arrived; what
// they produce goes back in enc.
func (c *wsConn) handle(payload jsonrpc.Payload, derr *jsonrpc.DecodeError, enc faces.Encoding, unregister func()) {
	defer c.running.Done()
	// The slot is given back before the answer is sent (and at the latest on return): a
	// client that has its answer may send the next request at once.
	release := sync.OnceFunc(func() { unregister(); <-c.inflight })
	defer release()
	principal, err := c.cred.Principal()
	if err != nil { // expired or revoked: no call runs, so no hop token is minted for it
		c.refuse(payload, derr, enc, err)
		c.cred.End(err) // closes the connection after the refusal
		return
	}
	rt := c.f.gw.Acquire()
	defer rt.Release()
	p := rt.Pipeline()
	ctx, span, traceID := p.Tracer.StartMessage(c.ctx, gateway.ProtocolWebSocket, spanIngress, &payload, derr)
	if span != nil {
		defer span.End()
	}
	ex := faces.Exchange{
		Principal: principal,
		Zone:      gateway.ZoneExternal,
		Protocol:  gateway.ProtocolWebSocket,
		Deadline:  p.Resolve(0),
		TraceID:   traceID,
		Span:      span,
		Delivery:  &delivery{c: c, enc: enc},
	}
	if out := p.ServePayload(ctx, &ex, payload, derr, nil); len(out) > 0 {
		release()
		c.enqueue(enc, out)
	}
}

// delivery is how what a message's requests produce beyond their responses reaches the
// connection, in the message's encoding: each request's own context and input stream
// ($/cancelRequest, $/stream/send), progress, streamed results and named events.
type delivery struct {
	c   *wsConn
	enc faces.Encoding
}

var (
	_ faces.InputDeliverer    = (*delivery)(nil)
	_ faces.ProgressDeliverer = (*delivery)(nil)
	_ faces.StreamDeliverer   = (*delivery)(nil)
	_ faces.EventDeliverer    = (*delivery)(nil)
)

// Begin implements faces.InputDeliverer.
func (d *delivery) Begin(ctx context.Context, id jsonrpc.ID) (context.Context, gateway.Stream, func()) {
	return d.c.begin(ctx, id)
}

// Progress implements faces.ProgressDeliverer: every request with an id gets a sink.
func (d *delivery) Progress(id jsonrpc.ID, _ bool) (func(gateway.Progress), func()) {
	return faces.ProgressSink(id, func(msg []byte) bool { return d.c.offer(d.enc, msg) })
}

// DeliverStream implements faces.StreamDeliverer: each message as a $/stream notification.
func (d *delivery) DeliverStream(ctx context.Context, id jsonrpc.ID, s gateway.Stream) faces.Outcome {
	return faces.Relay(ctx, id, s, func(msg []byte) error {
		d.c.enqueue(d.enc, bytes.Clone(msg))
		return d.c.ctx.Err()
	})
}

// DeliverEvents implements faces.EventDeliverer: each event as a $/event notification.
func (d *delivery) DeliverEvents(ctx context.Context, id jsonrpc.ID, s gateway.Stream) faces.Outcome {
	return faces.RelayEvents(ctx, id, s, func(name string, data []byte) error {
		d.c.enqueue(d.enc, faces.AppendEventNote(nil, id, name, data))
		return d.c.ctx.Err()
	})
}

// limits returns the decoder limits of the current configuration for this caller.
func (c *wsConn) limits() jsonrpc.Limits {
	rt := c.f.gw.Acquire()
	defer rt.Release()
	p, _ := c.cred.Principal() // a dead credential's message is refused: the default tier will do
	return rt.Pipeline().LimitsFor(p)
}

// rejectOverloaded answers every request of a message that found no in-flight slot.
func (c *wsConn) rejectOverloaded(payload jsonrpc.Payload, derr *jsonrpc.DecodeError, enc faces.Encoding) {
	err := gateway.Errorf(schemas.CodeOverloaded, "Too many requests in flight on this connection").
		With("limit", "max_in_flight").With("max", c.cfg.MaxInFlight).With("retry_after_ms", 100)
	if out := faces.Reject(payload, derr, nil, err, observability.NewTraceID()); len(out) > 0 {
		c.enqueue(enc, out)
	}
}

// wsFrame is one message waiting for the writer: text (JSON) or binary (MessagePack).
type wsFrame struct {
	data   []byte
	binary bool
}

// frame returns msg, JSON text the caller no longer needs, as a message in enc.
func (c *wsConn) frame(enc faces.Encoding, msg []byte) wsFrame {
	if enc != faces.EncodingMsgpack {
		return wsFrame{data: msg}
	}
	if data, err := msgpack.FromJSON(msg); err == nil {
		return wsFrame{data: data, binary: true}
	}
	traceID := observability.NewTraceID()
	c.f.log.Error("a WebSocket message has no MessagePack form", "trace_id", traceID)
	data, _ := enc.FromJSON(msg, traceID)
	return wsFrame{data: data, binary: true}
}

// enqueue hands a response, JSON text, to the writer in enc. When the queue is full
// (websocket.send_queue messages or send_queue_bytes bytes) it waits for room up to half
// websocket.write_timeout; a consumer whose queue stays full that long is disconnected.
func (c *wsConn) enqueue(enc faces.Encoding, msg []byte) {
	if c.send.Push(c.ctx, c.frame(enc, msg), faces.SlowConsumerWait(c.cfg.WriteTimeout)) {
		c.kick()
	} else if c.ctx.Err() == nil {
		c.slow()
	}
}

// slow fails a consumer that cannot keep up: its calls are abandoned, what is queued for
// it is dropped, and it is closed with 1008 and closeReasonSlow once the writer can send
// the close frame (within websocket.write_timeout).
func (c *wsConn) slow() {
	c.f.log.Warn("disconnecting slow WebSocket consumer", "queued", c.send.Len(), "queued_bytes", c.send.Bytes(),
		"send_queue", c.cfg.SendQueue, "send_queue_bytes", c.cfg.SendQueueBytes)
	c.cancel()
	c.closeWith(websocket.ClosePolicyViolation, faces.CloseReasonSlow)
}

// offer queues a progress report for the writer, in enc, without ever waiting: it is
// dropped when the connection is ending or the send queue is half full (in messages or in
// bytes), so that reports never take the room the responses that follow them need. Every
// request with an id gets a sink offering its reports here (delivery.Progress).
func (c *wsConn) offer(enc faces.Encoding, msg []byte) bool {
	if c.ctx.Err() != nil || 2*c.send.Len() >= c.send.Cap() {
		return false
	}
	if !c.send.TryPush(c.frame(enc, msg), c.send.Cap()/2, c.cfg.SendQueueBytes/2) {
		return false
	}
	c.kick()
	return true
}

// closeWith asks the writer to flush what is queued, send a close frame and close. The
// first reason given wins.
func (c *wsConn) closeWith(code int, text string) { c.w.Close(code, text) }

// kick starts the writer for what was just queued.
func (c *wsConn) kick() { c.w.Kick() }

// BeginDrain implements faces.DrainConn: it stops reading new messages; running requests
// finish and are answered.
func (c *wsConn) BeginDrain() {
	c.draining.Store(true)
	_ = c.conn.SetReadDeadline(time.Now())
}

// Abort implements faces.DrainConn: it fails the connection at once.
// Done implements faces.DrainConn.
func (c *wsConn) Done() <-chan struct{} { return c.done }

func (c *wsConn) Abort() {
	c.cancel()
	c.closeWith(websocket.CloseGoingAway, closeReasonShutdown)
	_ = c.conn.Close()
}

// writeFrame writes one frame: text, or binary for MessagePack.
func writeFrame(conn *websocket.Conn, f wsFrame) error {
	mt := websocket.TextMessage
	if f.binary {
		mt = websocket.BinaryMessage
	}
	return conn.WriteMessage(mt, f.data)
}

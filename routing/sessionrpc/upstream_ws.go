package sessionrpc

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// dialWS opens a WebSocket connection to the upstream presenting bearer (if any) as the
// subprotocol "bearer.<token>".
func (u *Upstream) dialWS(ctx context.Context, bearer string) (*websocket.Conn, int, error) {
	var h http.Header
	if bearer != "" {
		h = http.Header{"Sec-Websocket-Protocol": {"bearer." + bearer}}
	}
	dctx, cancel := context.WithTimeout(ctx, u.cfg.DialTimeout)
	defer cancel()
	conn, resp, err := u.dialer.DialContext(dctx, u.wsURL, h)
	status := 0
	if resp != nil {
		status = resp.StatusCode
		if resp.Body != nil {
			_ = resp.Body.Close()
		}
	}
	if err != nil {
		return nil, status, err
	}
	conn.SetReadLimit(u.cfg.MaxFrameBytes)
	return conn, status, nil
}

// dialError maps a failed dial or handshake.
func dialError(ctx context.Context, what string, status int, err error) *gateway.Error {
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		return gateway.Errorf(schemas.CodeUnavailable, "the session upstream refused the gateway's credential").
			With("status", status).Wrap(err)
	}
	e := upstreamError(ctx, "the session upstream is unavailable", err)
	if e.Code() == schemas.CodeUnavailable {
		e = e.With("upstream", what).NotSent()
	}
	return e
}

// openWS dials the upstream and sends chat.start.
func (u *Upstream) openWS(ctx context.Context, reqID string, start []byte) (gateway.Stream, error) {
	conn, status, err := u.dialWS(ctx, u.hopCredential(ctx))
	if err != nil {
		return nil, dialError(ctx, redact(u.wsURL), status, err)
	}
	_ = conn.SetWriteDeadline(time.Now().Add(u.cfg.DialTimeout))
	if err := conn.WriteMessage(websocket.TextMessage, start); err != nil {
		_ = conn.Close()
		return nil, upstreamError(ctx, "the session upstream closed the connection", err)
	}
	s := &wsStream{u: u, conn: conn, reqID: reqID, ctx: ctx, abortDone: make(chan struct{})}
	s.stopCall = context.AfterFunc(ctx, s.abort)
	return s, nil
}

// wsStream is one request's connection to a WebSocket upstream.
type wsStream struct {
	u     *Upstream
	conn  *websocket.Conn
	reqID string
	ctx   context.Context // the call's

	stopCall  func() bool
	ended     atomic.Bool // the terminal frame or a failure was returned
	abortOnce sync.Once
	aborting  atomic.Bool
	abortDone chan struct{}
	closeOnce sync.Once
}

// abort tells the upstream to stop the request and closes the connection.
func (s *wsStream) abort() {
	s.abortOnce.Do(func() {
		s.aborting.Store(true)
		defer close(s.abortDone)
		_ = s.conn.SetWriteDeadline(time.Now().Add(s.u.cfg.AbortTimeout))
		if s.conn.WriteMessage(websocket.TextMessage, abortEnvelope(s.reqID, "")) == nil {
			_ = s.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "aborted"))
		}
		_ = s.conn.Close()
	})
}

// Recv implements gateway.Stream.
func (s *wsStream) Recv(ctx context.Context) ([]byte, error) {
	if s.ended.Load() {
		return nil, io.EOF
	}
	if done := ctx.Done(); done != nil && done != s.ctx.Done() {
		stop := context.AfterFunc(ctx, s.abort)
		defer stop()
	}
	for {
		_ = s.conn.SetReadDeadline(time.Now().Add(s.u.cfg.IdleTimeout))
		_, data, err := s.conn.ReadMessage()
		if err != nil {
			s.ended.Store(true)
			return nil, s.readError(ctx, err)
		}
		if s.aborting.Load() { // the request was cancelled: what the upstream sent since is not relayed
			s.ended.Store(true)
			return nil, s.readError(ctx, context.Canceled)
		}
		f, action, ferr := relay(s.reqID, data)
		if ferr != nil {
			s.ended.Store(true)
			_ = s.Close()
			return nil, ferr
		}
		switch action {
		case relayFrame:
			return f, nil
		case relayTerminal:
			s.ended.Store(true)
			_ = s.Close() // released as soon as the request ended
			return f, nil
		}
	}
}

// readError maps a failed read and releases the connection.
func (s *wsStream) readError(ctx context.Context, err error) error {
	if s.aborting.Load() {
		<-s.abortDone
	}
	_ = s.Close()
	switch {
	case ctx.Err() != nil:
		return upstreamError(ctx, "", err)
	case s.ctx.Err() != nil:
		return upstreamError(s.ctx, "", err)
	case errors.Is(err, websocket.ErrReadLimit):
		return gateway.Errorf(schemas.CodePayloadTooLarge, "the session upstream sent a message larger than max_frame_bytes").
			With("max_frame_bytes", s.u.cfg.MaxFrameBytes).Wrap(err)
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return gateway.Errorf(schemas.CodeUnavailable, "the session upstream sent nothing for longer than idle_timeout").Wrap(err)
	}
	return gateway.Errorf(schemas.CodeUnavailable, "the session upstream closed the stream before the request ended").Wrap(err)
}

// Close implements gateway.Stream: an unfinished request is aborted upstream first.
func (s *wsStream) Close() error {
	s.closeOnce.Do(func() {
		s.stopCall()
		if !s.ended.Load() {
			s.abort() // the consumer gave up on a running request
		}
		if s.aborting.Load() {
			<-s.abortDone
		}
		_ = s.conn.Close()
	})
	return nil
}

// readyWS asks the upstream for status.get on a connection of its own.
func (u *Upstream) readyWS(ctx context.Context) error {
	conn, status, err := u.dialWS(ctx, "")
	if err != nil {
		if status == http.StatusUnauthorized || status == http.StatusForbidden {
			return nil
		}
		return err
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	id := u.idPrefix + "ready"
	if err := conn.WriteMessage(websocket.TextMessage, []byte(`{"id":"`+id+`","type":"status.get"}`)); err != nil {
		return err
	}
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			return err
		}
		if env, ok := decodeEnvelope(data); ok && env.ID == id {
			if env.Type != sessionrpc.TypeStatusResult {
				return errors.New("the upstream answered status.get with " + env.Type)
			}
			return nil
		}
	}
}

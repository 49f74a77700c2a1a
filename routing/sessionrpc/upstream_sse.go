package sessionrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// errEventTooLarge is returned by sseReader for an event (or line) over its bound.
var errEventTooLarge = errors.New("event stream: event larger than the bound")

// sseReader reads the data of Server-Sent Events from an event stream: the data lines of
// an event joined with "\n", dispatched at the blank line that ends it. Comments and the
// event, id and retry fields are skipped; an event cut off by the end of the stream is
// dropped, as the format says. Neither a line nor an event's data may exceed max bytes.
type sseReader struct {
	br   *bufio.Reader
	max  int
	data []byte
	line []byte
}

func newSSEReader(r io.Reader, maxBytes int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 4096), max: maxBytes}
}

// next returns the data of the next event; it is valid until the next call.
func (r *sseReader) next() ([]byte, error) {
	r.data = r.data[:0]
	has := false
	for {
		line, err := r.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			if has {
				return r.data, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if string(field) != "data" {
			continue
		}
		if has {
			r.data = append(r.data, '\n')
		}
		if len(r.data)+len(value) > r.max {
			return nil, errEventTooLarge
		}
		r.data = append(r.data, value...)
		has = true
	}
}

// readLine returns the next line without its terminator ("\n", "\r\n" or "\r" before "\n").
func (r *sseReader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		r.line = append(r.line[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(r.line) > r.max+8 {
				return nil, errEventTooLarge
			}
			line, err = r.br.ReadSlice('\n')
			r.line = append(r.line, line...)
		}
		line = r.line
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF // a last line without its terminator ends no event
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > r.max+8 {
		return nil, errEventTooLarge
	}
	return line, nil
}

// sessionOf returns the sessionId member of a chat.start payload, "" for none.
func sessionOf(params []byte) string {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(params, &p)
	return p.SessionID
}

// post sends body to rawURL with bearer.
func (u *Upstream) post(ctx context.Context, rawURL, bearer string, body []byte, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return u.client.Do(req)
}

// notDialed reports whether err is a failure to connect (the request was not written).
func notDialed(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// openSSE posts chat.start to /session/chat and returns the stream of its response.
func (u *Upstream) openSSE(ctx context.Context, reqID string, start, params []byte) (gateway.Stream, error) {
	// The request's own context is not the call's: a cancelled call sends chat.abort
	// first (abort), and only then drops the response.
	reqCtx, cancel := context.WithCancel(context.Background())
	s := &sseStream{u: u, reqID: reqID, sessionID: sessionOf(params), bearer: u.hopCredential(ctx), ctx: ctx,
		cancelReq: cancel, abortDone: make(chan struct{})}
	s.stopCall = context.AfterFunc(ctx, s.abort)
	resp, err := u.post(reqCtx, u.chatURL, s.bearer, start, "text/event-stream")
	if err != nil {
		s.fail()
		e := upstreamError(ctx, "the session upstream is unavailable", err)
		if e.Code() == schemas.CodeUnavailable && notDialed(err) {
			e = e.NotSent()
		}
		return nil, e
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		s.fail()
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			return nil, gateway.Errorf(schemas.CodeUnavailable, "the session upstream refused the gateway's credential").With("status", resp.StatusCode)
		}
		return nil, gateway.Errorf(schemas.CodeUnavailable, "the session upstream answered HTTP %d", resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		_ = resp.Body.Close()
		s.fail()
		return nil, gateway.Errorf(schemas.CodeUnavailable, "the session upstream did not answer with an event stream")
	}
	s.body = resp.Body
	s.rd = newSSEReader(resp.Body, int(u.cfg.MaxFrameBytes))
	s.idle = time.AfterFunc(u.cfg.IdleTimeout, func() {
		s.idleFired.Store(true)
		cancel()
	})
	return s, nil
}

// sseStream is one request's event stream from an HTTP+SSE upstream.
type sseStream struct {
	u                *Upstream
	reqID, sessionID string
	bearer           string
	ctx              context.Context // the call's
	cancelReq        context.CancelFunc
	body             io.ReadCloser
	rd               *sseReader
	idle             *time.Timer
	idleFired        atomic.Bool

	stopCall  func() bool
	ended     atomic.Bool
	abortOnce sync.Once
	aborting  atomic.Bool
	abortDone chan struct{}
	closeOnce sync.Once
}

// fail releases a stream that never started.
func (s *sseStream) fail() {
	s.stopCall()
	if s.aborting.Load() {
		<-s.abortDone
	}
	s.cancelReq()
}

// abort posts chat.abort for the request, then drops its response.
func (s *sseStream) abort() {
	s.abortOnce.Do(func() {
		s.aborting.Store(true)
		defer close(s.abortDone)
		defer s.cancelReq()
		ctx, cancel := context.WithTimeout(context.Background(), s.u.cfg.AbortTimeout)
		defer cancel()
		resp, err := s.u.post(ctx, s.u.abortURL, s.bearer, abortEnvelope(s.reqID, s.sessionID), "application/json")
		if err != nil {
			s.u.log.Debug("session upstream: chat.abort failed", "err", err)
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
	})
}

// Recv implements gateway.Stream.
func (s *sseStream) Recv(ctx context.Context) ([]byte, error) {
	if s.ended.Load() {
		return nil, io.EOF
	}
	if done := ctx.Done(); done != nil && done != s.ctx.Done() {
		stop := context.AfterFunc(ctx, s.abort)
		defer stop()
	}
	for {
		data, err := s.rd.next()
		if err != nil {
			s.ended.Store(true)
			return nil, s.readError(ctx, err)
		}
		s.idle.Reset(s.u.cfg.IdleTimeout)
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
			_ = s.Close()
			return f, nil
		}
	}
}

// readError maps a failed read and releases the stream.
func (s *sseStream) readError(ctx context.Context, err error) error {
	if s.aborting.Load() {
		<-s.abortDone
	}
	_ = s.Close()
	switch {
	case ctx.Err() != nil:
		return upstreamError(ctx, "", err)
	case s.ctx.Err() != nil:
		return upstreamError(s.ctx, "", err)
	case errors.Is(err, errEventTooLarge):
		return gateway.Errorf(schemas.CodePayloadTooLarge, "the session upstream sent a message larger than max_frame_bytes").
			With("max_frame_bytes", s.u.cfg.MaxFrameBytes).Wrap(err)
	case s.idleFired.Load():
		return gateway.Errorf(schemas.CodeUnavailable, "the session upstream sent nothing for longer than idle_timeout").Wrap(err)
	}
	return gateway.Errorf(schemas.CodeUnavailable, "the session upstream closed the stream before the request ended").Wrap(err)
}

// Close implements gateway.Stream: an unfinished request is aborted upstream first.
func (s *sseStream) Close() error {
	s.closeOnce.Do(func() {
		s.stopCall()
		if !s.ended.Load() {
			s.abort()
		}
		if s.aborting.Load() {
			<-s.abortDone
		}
		s.idle.Stop()
		s.cancelReq()
		_ = s.body.Close()
	})
	return nil
}

// readySSE posts status.get to /session/status.
func (u *Upstream) readySSE(ctx context.Context) error {
	resp, err := u.post(ctx, u.statusURL, "", []byte(`{"id":"`+u.idPrefix+`ready","type":"status.get"}`), "application/json")
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		return errors.New("status.get answered HTTP " + resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, u.cfg.MaxFrameBytes))
	if err != nil {
		return err
	}
	if env, ok := decodeEnvelope(b); !ok || env.Type != sessionrpc.TypeStatusResult {
		return errors.New("the upstream did not answer status.get with status.result")
	}
	return nil
}

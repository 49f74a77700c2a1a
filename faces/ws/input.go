package ws

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// wsCall is a request in flight on a WebSocket connection, addressable by its id.
type wsCall struct {
	ctx    context.Context //nolint:containedctx // the request's own context, cancelled by $/cancelRequest
	cancel context.CancelFunc
	input  *inputStream
}

// register makes every request of a message addressable before the message runs — in the
// reader, so that a $/stream/send or $/cancelRequest the client sends right after it finds
// it. Each gets a context the client can cancel and an input stream. A request whose id is
// already in flight on the connection is not registered (it runs without either). The
// returned function unregisters them all once the message is answered.
func (c *wsConn) register(payload *jsonrpc.Payload) func() {
	var mine []string
	c.callsMu.Lock()
	for i := range payload.Members {
		m := &payload.Members[i]
		if m.Err != nil || m.Request.IsNotification() {
			continue
		}
		key := m.Request.ID.Key()
		if _, dup := c.calls[key]; dup {
			continue
		}
		ctx, cancel := context.WithCancel(c.ctx)
		if c.calls == nil {
			c.calls = make(map[string]*wsCall)
		}
		c.calls[key] = &wsCall{ctx: ctx, cancel: cancel, input: newInputStream(c.cfg.InputQueue)}
		mine = append(mine, key)
	}
	c.callsMu.Unlock()
	return func() {
		c.callsMu.Lock()
		defer c.callsMu.Unlock()
		for _, key := range mine {
			call := c.calls[key]
			delete(c.calls, key)
			call.cancel()
			_ = call.input.Close()
		}
		if len(c.calls) == 0 {
			c.calls = nil // an idle connection holds no map
		}
	}
}

// begin gives a registered request its context and input (delivery.Begin).
func (c *wsConn) begin(ctx context.Context, id jsonrpc.ID) (context.Context, gateway.Stream, func()) {
	c.callsMu.Lock()
	call := c.calls[id.Key()]
	c.callsMu.Unlock()
	if call == nil {
		return ctx, nil, func() {}
	}
	return call.ctx, call.input, func() {}
}

// control handles a message addressed to the face itself ($/stream/send, $/stream/end,
// $/cancelRequest, $/auth/renew) and reports whether it was one; its answer goes back in enc.
func (c *wsConn) control(payload *jsonrpc.Payload, derr *jsonrpc.DecodeError, enc faces.Encoding) bool {
	if derr != nil || payload.Batch || payload.Members[0].Err != nil {
		return false
	}
	req := &payload.Members[0].Request
	result := []byte("true")
	var err *gateway.Error
	switch req.Method {
	case jsonrpc.MethodStreamSend, jsonrpc.MethodStreamEnd, jsonrpc.MethodCancelRequest:
		err = c.applyControl(req)
	case MethodAuthRenew:
		result, err = c.renew(req)
	default:
		return false
	}
	if !req.IsNotification() {
		var out []byte
		if err != nil {
			out = faces.AppendError(nil, req.ID, err, observability.NewTraceID())
		} else {
			out = jsonrpc.AppendResult(nil, req.ID, result)
		}
		c.enqueue(enc, out)
	}
	return true
}

func (c *wsConn) applyControl(req *jsonrpc.Request) *gateway.Error {
	var p struct {
		ID    json.RawMessage `json:"id"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || len(p.ID) == 0 {
		return gateway.NewError(schemas.CodeInvalidParams).With("reason", req.Method+" takes {id, value?}")
	}
	c.callsMu.Lock()
	call := c.calls[jsonrpc.RawID(bytes.TrimSpace(p.ID)).Key()]
	c.callsMu.Unlock()
	if call == nil {
		return gateway.NewError(schemas.CodeInvalidParams).With("reason", "no request with that id is in flight on this connection")
	}
	switch req.Method {
	case jsonrpc.MethodStreamSend:
		if len(p.Value) == 0 {
			return gateway.NewError(schemas.CodeInvalidParams).With("reason", "$/stream/send takes {id, value}")
		}
		call.input.push(bytes.Clone(p.Value))
	case jsonrpc.MethodStreamEnd:
		call.input.finish(io.EOF)
	default:
		call.cancel()
	}
	return nil
}

// inputStream is a request's input: messages from $/stream/send, bounded; past the bound
// the stream fails with OVERLOADED rather than grow.
type inputStream struct {
	ch   chan []byte
	done chan struct{}
	once sync.Once
	err  error // set before done is closed: io.EOF, or why the stream failed
}

func newInputStream(size int) *inputStream {
	return &inputStream{ch: make(chan []byte, size), done: make(chan struct{})}
}

var errInputOverflow = gateway.Errorf(schemas.CodeOverloaded, "Stream input queue full").With("limit", "input_queue")

func (in *inputStream) push(msg []byte) {
	select {
	case <-in.done:
		return
	default:
	}
	select {
	case in.ch <- msg:
	default:
		in.finish(errInputOverflow)
	}
}

func (in *inputStream) finish(err error) {
	in.once.Do(func() {
		in.err = err
		close(in.done)
	})
}

// Recv implements gateway.Stream: buffered messages come before the end.
func (in *inputStream) Recv(ctx context.Context) ([]byte, error) {
	select {
	case m := <-in.ch:
		return m, nil
	default:
	}
	select {
	case m := <-in.ch:
		return m, nil
	case <-in.done:
		select {
		case m := <-in.ch:
			return m, nil
		default:
			return nil, in.err
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close implements gateway.Stream.
func (in *inputStream) Close() error {
	in.finish(io.EOF)
	return nil
}

package sessionrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// GRPCStream is the target of a session route whose requests run a routed gRPC
// server-streaming method (GRPCConfig): it turns the chat.start payload into the method's
// request, invokes the method's target (a grpcbackend.Backend, which owns the connection)
// with a call derived from the session call — same context, so the same deadline, hop
// credential and trace — and maps each streamed message onto chat.event frames, the end
// of the stream onto chat.done and a failed stream onto chat.error.
//
// It answers the optional interfaces of the gateway (Describer, Backended, Readier,
// HopAuthenticated, Unretryable) for the derived call from the inner target, so policy,
// breaker, admission and the hop token treat a session request as the gRPC call it makes.
// It does not close the inner target: that belongs to the routing table.
type GRPCStream struct {
	name  string
	cfg   GRPCConfig
	m     *mapping
	inner gateway.Target
}

var (
	_ gateway.Target           = (*GRPCStream)(nil)
	_ gateway.Describer        = (*GRPCStream)(nil)
	_ gateway.Backended        = (*GRPCStream)(nil)
	_ gateway.Readier          = (*GRPCStream)(nil)
	_ gateway.HopAuthenticated = (*GRPCStream)(nil)
	_ gateway.Unretryable      = (*GRPCStream)(nil)
)

// NewGRPCStream returns the target of the session route name (method "session.<name>")
// running cfg.Method on inner, the target that method is routed to. It refuses a mapping
// that does not validate (GRPCConfig.Validate) and a nil inner.
func NewGRPCStream(name string, cfg GRPCConfig, inner gateway.Target) (*GRPCStream, error) {
	if inner == nil {
		return nil, fmt.Errorf("session route %s: grpc.method %s has no target", name, cfg.Method)
	}
	m, err := compileGRPC(&cfg)
	if err != nil {
		return nil, fmt.Errorf("session route %s: %w", name, err)
	}
	return &GRPCStream{name: name, cfg: cfg, m: m, inner: inner}, nil
}

// Name implements gateway.Target: the route's method.
func (g *GRPCStream) Name() string { return "session:" + g.name }

// Method returns the routed gRPC method the route runs.
func (g *GRPCStream) Method() string { return g.cfg.Method }

// derive returns the call made to the inner target on call's behalf: call with the gRPC
// method's name, params and target.
func (g *GRPCStream) derive(call *gateway.Call, params []byte) *gateway.Call {
	d := *call
	d.Method = g.cfg.Method
	d.Params = params
	d.Target = g.inner
	return &d
}

// Invoke implements gateway.Target. An error before the stream starts (the payload is not
// an object, the inner target refused the call) is returned as is; once the stream has
// started every outcome is a frame. A unary result (the method is not server-streaming)
// is mapped as a stream of one message.
func (g *GRPCStream) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	params, err := g.m.buildRequest(call.Params)
	if err != nil {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "The chat.start payload must be a JSON object").Wrap(err)
	}
	res, err := g.inner.Invoke(ctx, g.derive(call, params))
	if err != nil {
		return nil, err
	}
	in := res.Stream
	if in == nil {
		in = &oneMessage{msg: res.Value}
	}
	s := &grpcStream{m: g.m, inner: in}
	return &gateway.Result{Stream: s, Metadata: res.Metadata}, nil
}

// Reaches implements gateway.Describer: what the derived call reaches on the inner target.
func (g *GRPCStream) Reaches(call *gateway.Call, detail bool) gateway.Reach {
	if d, ok := g.inner.(gateway.Describer); ok {
		return d.Reaches(g.derive(call, nil), detail)
	}
	return gateway.Reach{Kind: gateway.ReachBuiltin}
}

// Backend implements gateway.Backended: the inner target's backend for the derived call.
func (g *GRPCStream) Backend(call *gateway.Call) string {
	return gateway.BackendOf(g.derive(call, nil))
}

// Ready implements gateway.Readier: the inner target's readiness (ready when it reports
// none).
func (g *GRPCStream) Ready(ctx context.Context) error {
	if r, ok := g.inner.(gateway.Readier); ok {
		return r.Ready(ctx)
	}
	return nil
}

// HopAuth implements gateway.HopAuthenticated: the hop credential is minted for the
// inner target (the gRPC backend), which is the one that sends it. An inner target that
// makes no hop gets no credential.
func (g *GRPCStream) HopAuth(call *gateway.Call) gateway.HopAuth {
	if h, ok := g.inner.(gateway.HopAuthenticated); ok {
		return h.HopAuth(g.derive(call, nil))
	}
	return gateway.HopAuth{Mode: gateway.HopNone}
}

// NotRetryable implements gateway.Unretryable as the inner target says for the derived
// call.
func (g *GRPCStream) NotRetryable(call *gateway.Call) bool {
	u, ok := g.inner.(gateway.Unretryable)
	return ok && u.NotRetryable(g.derive(call, nil))
}

// Error ids of the chat.error frames GRPCStream makes itself (a failed gRPC stream's is
// the gateway error's code name, e.g. "UNAVAILABLE").
const (
	// ErrorIDAborted ends a request whose context ended (abort, disconnect).
	ErrorIDAborted = "aborted"
	// ErrorIDUnmapped ends a request whose stream sent a message no rule maps, with
	// unmapped: refuse.
	ErrorIDUnmapped = "unmapped_message"
	// ErrorIDInvalidMessage ends a request whose stream sent a message that is not JSON
	// (an inner target other than a gRPC backend).
	ErrorIDInvalidMessage = "invalid_message"
)

// grpcStream is a session request's frames: the inner stream's messages mapped. Recv is
// called from one goroutine at a time (gateway.Stream); Close from any.
type grpcStream struct {
	m       *mapping
	inner   gateway.Stream
	n       int      // messages received
	last    []byte   // the last message, for the final reply
	text    []byte   // the text-deltas' text (JSON-escaped), when the reply has it
	pending [][]byte // frames of the last message not yet returned
	ended   bool     // the terminal frame was made
	once    sync.Once
}

// Recv implements gateway.Stream: the next frame, io.EOF after the terminal one.
func (s *grpcStream) Recv(ctx context.Context) ([]byte, error) {
	for {
		if len(s.pending) > 0 {
			f := s.pending[0]
			s.pending[0] = nil
			s.pending = s.pending[1:]
			return f, nil
		}
		if s.ended {
			return nil, io.EOF
		}
		if err := ctx.Err(); err != nil { // ended: no message the stream still holds is wanted
			return s.end(ctx, err), nil
		}
		msg, err := s.inner.Recv(ctx)
		if err != nil {
			return s.end(ctx, err), nil
		}
		s.n++
		if !json.Valid(msg) {
			return s.fail(ErrorIDInvalidMessage, fmt.Sprintf("Message %d of the stream is not JSON", s.n)), nil
		}
		d := &doc{raw: msg}
		var mapped bool
		var text *[]byte
		if s.m.done.text {
			text = &s.text
		}
		s.pending, mapped = s.m.appendEvents(s.pending[:0], d, s.n, text)
		if !mapped && s.m.refuse {
			return s.fail(ErrorIDUnmapped, fmt.Sprintf("Message %d of the stream matches no event rule", s.n)), nil
		}
		if len(s.m.done.members.kids) > 0 {
			s.last = msg
		}
	}
}

// end returns the terminal frame of a stream that ended with err, and releases the
// inner stream.
func (s *grpcStream) end(ctx context.Context, err error) []byte {
	s.ended = true
	_ = s.Close()
	if errors.Is(err, io.EOF) {
		return s.m.doneFrame(s.last, s.text)
	}
	e := gateway.AsError(err)
	if errors.Is(ctx.Err(), context.Canceled) { // an abort, not the deadline
		return errorFrame(errorPayload{ErrorID: ErrorIDAborted, Message: "The request was aborted", Code: int(schemas.CodeCancelled)})
	}
	return errorFrame(errorPayload{ErrorID: schemas.KindOf(e.Code()).Name, Message: e.Message(), Code: int(e.Code()), Detail: e.Data()})
}

// fail ends the request on a message it cannot map, cancelling the gRPC stream.
func (s *grpcStream) fail(errorID, message string) []byte {
	s.ended = true
	s.pending = s.pending[:0]
	_ = s.Close()
	return errorFrame(errorPayload{ErrorID: errorID, Message: message, Code: int(schemas.CodeInternal)})
}

// Close implements gateway.Stream: it closes the inner stream (cancelling the gRPC call
// when it is still running), once.
func (s *grpcStream) Close() error {
	var err error
	s.once.Do(func() { err = s.inner.Close() })
	return err
}

// oneMessage is a unary result as a stream of one message.
type oneMessage struct {
	msg  []byte
	sent bool
}

func (o *oneMessage) Recv(context.Context) ([]byte, error) {
	if o.sent {
		return nil, io.EOF
	}
	o.sent = true
	return o.msg, nil
}

func (*oneMessage) Close() error { return nil }

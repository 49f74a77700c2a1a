package grpcbackend

import (
	"context"
	"errors"
	"io"
	"sync"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// invokeStreaming runs a streaming RPC. The call's params are the first request message
// (omitted when empty); for client-streaming and bidirectional methods the messages of
// call.Input follow. A server-streaming method's result is a Stream of response messages;
// closing it cancels the RPC. A traced call's RPC is a client span, which a
// server-streaming result's Close ends (trace.go).
func (b *Backend) invokeStreaming(ctx context.Context, call *gateway.Call, m *method) (res *gateway.Result, err error) {
	clientStreams, serverStreams := m.desc.IsStreamingClient(), m.desc.IsStreamingServer()
	if clientStreams && call.Input == nil {
		return nil, gateway.Errorf(schemas.CodeInvalidRequest,
			"Client-streaming method: call it over WebSocket and send messages with $/stream/send").With("backend", b.cfg.Name)
	}
	obs := gateway.ObserverFrom(ctx)
	ctx, span := b.startSpan(ctx, m)
	defer endSpanUnlessStreamed(span, &res, &err)
	ctx, cancel, herr := b.callContext(ctx, call, nil)
	if herr != nil {
		return nil, herr
	}
	desc := &grpc.StreamDesc{StreamName: string(m.desc.Name()), ServerStreams: serverStreams, ClientStreams: clientStreams}
	cs, err := b.conn.NewStream(ctx, desc, m.path, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		cancel()
		return nil, b.statusError(err, nil, nil, false)
	}
	closed := m.streamOpened(obs)
	first, err := m.encode(obs, nil, call.Params)
	if err != nil {
		cancel()
		closed()
		return nil, paramsError(err)
	}
	if len(call.Params) > 0 || !clientStreams {
		if err := cs.SendMsg(&frame{data: first}); err != nil {
			cancel()
			closed()
			return nil, b.recvError(cs, err)
		}
	}
	p := &pumper{done: make(chan struct{})}
	if clientStreams {
		go func() {
			if p.err = b.pump(ctx, cs, call.Input, m); p.err != nil {
				cancel() // a bad input message ends the RPC
			}
			close(p.done)
		}()
	} else {
		p.err = cs.CloseSend()
		close(p.done)
	}
	if serverStreams {
		return &gateway.Result{Stream: &responseStream{b: b, cs: cs, m: m, cancel: cancel, p: p, obs: obs, closed: closed, span: span}}, nil
	}
	defer closed()
	defer cancel()
	if <-p.done; p.err != nil {
		return nil, gateway.AsError(p.err)
	}
	var resp frame
	if err := cs.RecvMsg(&resp); err != nil {
		return nil, b.recvError(cs, err)
	}
	out, err := m.decode(obs, resp.data)
	if err != nil {
		return nil, gateway.NewError(schemas.CodeInternal).With("backend", b.cfg.Name).Wrap(err)
	}
	return gateway.NewResult(out), nil
}

// pump sends the caller's input messages until it ends, then half-closes the RPC.
func (b *Backend) pump(ctx context.Context, cs grpc.ClientStream, in gateway.Stream, m *method) error {
	defer func() { _ = in.Close() }()
	for {
		msg, err := in.Recv(ctx)
		if errors.Is(err, io.EOF) {
			return cs.CloseSend()
		}
		if err != nil {
			return gateway.AsError(err)
		}
		wire, err := m.codec.request(nil, msg)
		if err != nil {
			return paramsError(err)
		}
		if err := cs.SendMsg(&frame{data: wire}); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the backend ended the call; RecvMsg reports how
			}
			return b.recvError(cs, err)
		}
	}
}

// pumper is the sending side of a streaming RPC; err is valid once done is closed.
type pumper struct {
	done chan struct{}
	err  error
}

// failed returns the sending side's error once it has ended with one.
func (p *pumper) failed() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// recvError maps an error of a stream, with the status and metadata the backend sent. The
// stream reached the backend when it got a transport stream (its context knows the peer).
func (b *Backend) recvError(cs grpc.ClientStream, err error) *gateway.Error {
	header, _ := cs.Header()
	_, sent := peer.FromContext(cs.Context())
	return b.statusError(err, header, cs.Trailer(), sent)
}

// responseStream is a server-streaming RPC's responses as a gateway.Stream.
type responseStream struct {
	b      *Backend
	cs     grpc.ClientStream
	m      *method
	cancel context.CancelFunc
	p      *pumper
	once   sync.Once
	obs    gateway.Observer
	closed func()     // reports the stream closed to obs, once, from Close
	span   trace.Span // the RPC's client span, ended by Close; nil when untraced
}

// Recv returns the next response as JSON, io.EOF when the backend ended the stream with OK.
// The wait is bounded by the RPC's deadline (the call's less the reserve) and by ctx: a
// reader that gives up cancels the RPC.
func (s *responseStream) Recv(ctx context.Context) ([]byte, error) {
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, s.cancel)
		defer stop()
	}
	var f frame
	if err := s.cs.RecvMsg(&f); err != nil {
		if s.span != nil {
			spanStatus(s.span, err)
		}
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if status.Code(err) == codes.Canceled && ctx.Err() != nil { // the reader gave up
			return nil, gateway.AsError(ctx.Err()).With("backend", s.b.cfg.Name)
		}
		if perr := s.p.failed(); perr != nil {
			return nil, gateway.AsError(perr)
		}
		return nil, s.b.recvError(s.cs, err)
	}
	out, err := s.m.decode(s.obs, f.data)
	if err != nil {
		return nil, gateway.NewError(schemas.CodeInternal).With("backend", s.b.cfg.Name).Wrap(err)
	}
	return out, nil
}

// Close cancels the RPC (a no-op once it has ended) and waits for the input pump.
func (s *responseStream) Close() error {
	s.once.Do(func() {
		s.cancel()
		<-s.p.done
		s.closed()
		if s.span != nil {
			s.span.End()
		}
	})
	return nil
}

package a2aface

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	"github.com/gatehouse-dev/gatehouse/codecs/sse"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// eventStream writes the results of one streaming request as Server-Sent Events: each
// event's data is a JSON-RPC response whose result is one stream result. Writing one
// event is bounded by a2a.sse_write_timeout; a stream on which the task said nothing for
// a2a.sse_idle_timeout ends (the client re-attaches with SubscribeToTask).
type eventStream struct {
	x       *exchange
	rc      *http.ResponseController
	started bool
	failed  bool
}

func (x *exchange) newEventStream() *eventStream {
	if x.out != nil {
		return &eventStream{x: x}
	}
	return &eventStream{x: x, rc: http.NewResponseController(x.w)}
}

// start writes the response's headers, once.
func (es *eventStream) start() {
	if es.started {
		return
	}
	es.started = true
	h := es.x.w.Header()
	h.Set("Content-Type", sse.ContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	es.x.w.WriteHeader(http.StatusOK)
}

// send writes ev as one event; false when the stream cannot go on.
func (es *eventStream) send(ev a2a.Event) bool {
	result, err := a2a.MarshalEvent(ev, es.x.req.Version)
	if err != nil {
		es.x.f.log.Error("a2a: writing a stream result", "trace_id", es.x.ex.TraceID, "err", err)
		return es.fail(a2a.Errf(a2a.CodeInternal, "Internal error"))
	}
	if es.x.out != nil { // another binding's stream (Operate)
		es.started = true
		if !es.x.out.event(result) {
			es.failed = true
			return false
		}
		return true
	}
	return es.write(a2a.AppendResult(nil, es.x.req.ID, result))
}

// fail ends the stream with e: the JSON-RPC error as the last event (or as the whole
// response when no event was written yet).
func (es *eventStream) fail(e *a2a.Error) bool {
	if !es.started || es.x.out != nil {
		es.x.writeError(es.x.req.ID, e)
		es.failed = true
		return false
	}
	es.write(a2a.AppendError(nil, es.x.req.ID, e, es.x.ex.TraceID))
	es.failed = true
	return false
}

func (es *eventStream) write(frame []byte) bool {
	es.start()
	_ = es.rc.SetWriteDeadline(es.x.f.now().Add(es.x.cfg.SSEWriteTimeout))
	if _, err := es.x.w.Write(sse.AppendEvent(nil, "", frame)); err != nil {
		es.failed = true
		return false
	}
	if err := es.rc.Flush(); err != nil {
		es.failed = true
		return false
	}
	return true
}

// follow relays the NEKTE task stream s as A2A events through tr until the task ends, the
// stream idles past a2a.sse_idle_timeout, the caller goes away, or its credential expires
// or is revoked (then the last event is the 4001 error saying why).
func (es *eventStream) follow(ctx context.Context, s gateway.Stream, tr *tracker) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := es.x.p.Liveness.Watch(es.x.ex.Principal, cancel)
	defer w.Stop()
	for {
		msg, err := es.recv(ctx, s)
		if err != nil {
			es.ended(ctx, err)
			return
		}
		evs, final := tr.apply(msg)
		for _, ev := range evs {
			if !es.send(ev) {
				return
			}
		}
		if final {
			return
		}
	}
}

// errIdle ends a stream that idled past a2a.sse_idle_timeout.
var errIdle = errors.New("a2a: event stream idle")

func (es *eventStream) recv(ctx context.Context, s gateway.Stream) ([]byte, error) {
	rctx, cancel := context.WithTimeoutCause(ctx, es.x.cfg.SSEIdleTimeout, errIdle)
	defer cancel()
	msg, err := s.Recv(rctx)
	if err != nil && context.Cause(rctx) == errIdle && ctx.Err() == nil { //nolint:errorlint // the cause is ours, compared by identity
		return nil, errIdle
	}
	return msg, err
}

// ended ends the stream after err: silently when it ended, idled or the caller went away;
// with the error otherwise.
func (es *eventStream) ended(ctx context.Context, err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, errIdle):
	case ctx.Err() != nil:
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			es.fail(fromGateway(gateway.AsError(cause)))
		}
	default:
		es.fail(fromGateway(gateway.AsError(err)))
	}
}

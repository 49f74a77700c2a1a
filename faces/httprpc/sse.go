package httprpc

import (
	"context"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth"
	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/codecs/sse"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// sseWriter turns an HTTP response into an event stream the first time an event is
// written (a message of a streamed result, a progress report); each JSON-RPC message is
// one event's data. A stream of named events (deliverEvents) makes the whole response one
// such stream: its frames are the events alone.
//
// Events are not written by whoever produces them: they wait in a send queue
// (sse.send_queue events, sse.send_queue_bytes bytes) for the stream's writer goroutine,
// which writes and flushes each within server.boundary.write_timeout. A progress report
// that finds the queue half full is dropped; an event that finds it full waits for room up
// to half the write timeout, and one that finds none makes the consumer a slow one: the stream
// that produced it ends (which cancels the backend's side), what is queued is dropped, and
// the response ends with one "error" event saying why, when it can still be written. A
// write that fails or times out ends the stream the same way, without the event.
//
// A streamed result stops when the caller's credential expires or is revoked (within
// auth.revocation.refresh): the backend's stream is cancelled and the final event is the
// JSON-RPC error AUTHENTICATION_FAILED (4001) with data.reason "expired" or "revoked" (an
// "error" event {code, message} for a stream of named events).
type sseWriter struct {
	ctx     context.Context // the request's: a producer stops waiting for room when it ends
	w       http.ResponseWriter
	limits  SSEConfig
	timeout time.Duration // writing one event

	mu       sync.Mutex
	started  bool
	named    bool           // the response is a stream of named events; progress is dropped
	slow     *gateway.Error // set when the consumer let the queue stay full: why
	finished bool

	q      *faces.SendQueue[[]byte] // nil until started
	failed atomic.Bool              // a write failed: the consumer is gone
	done   chan struct{}            // closed when the writer has exited

	// live and principal re-check the caller while a streamed result is delivered
	// (watch): the stream ends when the credential expires or is revoked.
	live      *auth.Liveness
	principal gateway.Principal
}

// newSSEWriter returns the event writer of the HTTP response to a request with context ctx;
// writeTimeout bounds writing each event.
func newSSEWriter(ctx context.Context, w http.ResponseWriter, limits SSEConfig, writeTimeout time.Duration) *sseWriter {
	return &sseWriter{ctx: ctx, w: w, limits: limits, timeout: writeTimeout}
}

func (sw *sseWriter) deliver(ctx context.Context, id jsonrpc.ID, s gateway.Stream) faces.Outcome {
	ctx, end := sw.watch(ctx)
	return end(faces.Relay(ctx, id, s, func(msg []byte) error { return sw.send("", msg) }))
}

// watchAs makes the caller's credential re-checked while a streamed result is delivered:
// live is the process's liveness, p the caller the request authenticated.
func (sw *sseWriter) watchAs(live *auth.Liveness, p gateway.Principal) {
	sw.live, sw.principal = live, p
}

// watch returns a context for delivering a streamed result that ends when the caller's
// credential expires or is revoked (auth.Liveness), and end, which stops watching and
// turns the outcome of a stream the credential ended into the 4001 error saying why: the
// final event of the stream is then that JSON-RPC error.
func (sw *sseWriter) watch(ctx context.Context) (context.Context, func(faces.Outcome) faces.Outcome) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := sw.live.Watch(sw.principal, cancel)
	return ctx, func(out faces.Outcome) faces.Outcome {
		w.Stop()
		if cause := context.Cause(ctx); ctx.Err() != nil && auth.ReasonOf(cause) != "" {
			out.Res, out.Err = nil, gateway.AsError(cause)
		}
		cancel(nil)
		return out
	}
}

// startLocked sends the event stream's headers and starts its writer, once; sw.mu is held.
func (sw *sseWriter) startLocked() {
	if sw.started {
		return
	}
	h := sw.w.Header()
	for _, kv := range nekte.SSEHeaders {
		h.Set(kv[0], kv[1])
	}
	sw.w.WriteHeader(http.StatusOK)
	sw.started = true
	sw.q = faces.NewSendQueue(sw.limits.SendQueue, sw.limits.SendQueueBytes, func(f []byte) int { return len(f) })
	sw.done = make(chan struct{})
	go sw.write()
}

// write writes the queued frames in order until the queue is closed. After a failed write
// the rest are discarded.
func (sw *sseWriter) write() {
	defer close(sw.done)
	rc := http.NewResponseController(sw.w)
	for frame := range sw.q.Chan() {
		sw.q.Taken(frame)
		if sw.failed.Load() {
			continue
		}
		_ = rc.SetWriteDeadline(time.Now().Add(sw.timeout))
		if _, err := sw.w.Write(frame); err != nil || rc.Flush() != nil {
			sw.failed.Store(true)
		}
	}
}

// errStreamGone ends a stream whose consumer can no longer be written to.
var errStreamGone = gateway.Errorf(schemas.CodeCancelled, "The event stream's consumer is gone")

// send queues one event (name "" for a JSON-RPC message), starting the stream if needed,
// waiting for room up to half the write timeout; when there is none the consumer is a slow one
// and the error (errSlowConsumer) ends the stream that produced the event. Once the
// response is a stream of named events, unnamed events are dropped. One goroutine sends
// (the request's), and finishes the stream after its last send.
func (sw *sseWriter) send(name string, data []byte) error {
	sw.mu.Lock()
	switch {
	case sw.named && name == "":
		sw.mu.Unlock()
		return nil
	case sw.slow != nil:
		sw.mu.Unlock()
		return sw.slow
	case sw.finished || sw.failed.Load():
		sw.mu.Unlock()
		return errStreamGone
	}
	sw.startLocked()
	sw.mu.Unlock()
	if sw.q.Push(sw.ctx, sse.AppendEvent(nil, name, data), faces.SlowConsumerWait(sw.timeout)) {
		return nil
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	switch {
	case sw.ctx.Err() != nil || sw.failed.Load():
		return errStreamGone
	case sw.q.Len() >= sw.q.Cap():
		sw.slow = faces.ErrSlowConsumer("sse.send_queue", int64(sw.limits.SendQueue))
	default:
		sw.slow = faces.ErrSlowConsumer("sse.send_queue_bytes", sw.limits.SendQueueBytes)
	}
	return sw.slow
}

// offer queues a progress report unless the queue is half full (in events or bytes) or the
// response is a stream of named events; it never waits and reports whether it took it.
func (sw *sseWriter) offer(data []byte) bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.named || sw.slow != nil || sw.finished || sw.failed.Load() {
		return false
	}
	sw.startLocked()
	return sw.q.TryPush(sse.AppendEvent(nil, "", data), sw.q.Cap()/2, sw.limits.SendQueueBytes/2)
}

// finish ends the event stream: the frame final makes (none when final is nil) goes after
// what is queued, and finish returns once the writer has written it (or failed). A slow
// consumer's queued events are dropped first; final is told the consumer was slow, so
// that its event is an "error" one. Calls after the first only wait.
func (sw *sseWriter) finish(final func(slow bool) []byte) {
	sw.mu.Lock()
	if !sw.started || sw.finished {
		sw.mu.Unlock()
		sw.wait()
		return
	}
	sw.finished = true
	slow := sw.slow != nil
	if slow {
		sw.q.Drop()
	}
	sw.mu.Unlock()
	if final != nil && !sw.failed.Load() {
		frame := final(slow)
		sw.q.PushFinal(frame) // the writer drains the queue: it frees room within a write timeout
	}
	close(sw.q.Chan())
	<-sw.done
}

// finalResponse is the frame of the JSON-RPC response that ends a stream: an unnamed event,
// or an "error" one after a slow consumer was cut off.
func finalResponse(out []byte) func(slow bool) []byte {
	return func(slow bool) []byte {
		if slow {
			return sse.AppendEvent(nil, nekte.EventError, out)
		}
		return sse.AppendEvent(nil, "", out)
	}
}

// wait returns once the writer, if any, has exited; the handler must not return before.
func (sw *sseWriter) wait() {
	sw.mu.Lock()
	done := sw.done
	sw.mu.Unlock()
	if done != nil {
		<-done
	}
}

// close ends the stream without a final event, if finish has not; it is the handler's
// deferred guarantee that the writer is gone when it returns.
func (sw *sseWriter) close() { sw.finish(nil) }

// isNamed reports whether the response has become a stream of named events.
func (sw *sseWriter) isNamed() bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.named
}

// isStarted reports whether the response has become an event stream.
func (sw *sseWriter) isStarted() bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.started
}

// unlessStarted runs f, which sets response headers, unless the event stream has already
// sent them.
func (sw *sseWriter) unlessStarted(f func()) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if !sw.started {
		f()
	}
}

// progress returns a sink sending request id's progress as events of the stream, and
// stop (see faces.ProgressSink). The sink only queues (offer), so a client that reads slowly
// never stalls the backend; the response event the handler writes next goes through the
// same queue, after them.
func (sw *sseWriter) progress(id jsonrpc.ID) (sink func(gateway.Progress), stop func()) {
	return faces.ProgressSink(id, sw.offer)
}

// deliverEvents makes the HTTP response a stream of s's named events (faces.EventDeliverer):
// the headers go out at once, each event is queued for the stream's writer as it comes
// (see sseWriter), and a stream that fails ends with an "error" event. The response ends
// when it returns; its outcome is not written. A caller that goes away cancels ctx, which
// ends the stream (the caller of deliverEvents closes it).
func (sw *sseWriter) deliverEvents(ctx context.Context, id jsonrpc.ID, s gateway.Stream) faces.Outcome {
	sw.beginNamed()
	wctx, end := sw.watch(ctx)
	out := end(faces.RelayEvents(wctx, id, s, sw.send))
	if out.Err != nil && ctx.Err() == nil {
		sw.finish(func(bool) []byte {
			frame, _ := nekte.AppendEvent(nil, nekte.ErrorEvent{Code: out.Err.Code(), Message: out.Err.Message()})
			return frame
		})
	}
	sw.finish(nil)
	return out
}

// beginNamed makes the response a stream of named events and sends its headers.
func (sw *sseWriter) beginNamed() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.named = true
	sw.startLocked()
	sw.q.TryPush(nil, 1, math.MaxInt64) // an empty frame: the writer flushes the headers at once
}

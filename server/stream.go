package server

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/codecs/sse"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// relay delivers the messages of a streamed result through send, each as a "$/stream"
// notification tied to the request id, and returns the final outcome: the result
// {"messages": n} after the last one, or the stream's error.
func relay(ctx context.Context, id jsonrpc.ID, s gateway.Stream, send func([]byte) error) outcome {
	var buf []byte
	seq := 0
	return relayMessages(ctx, id, s, func(msg []byte) error {
		buf = jsonrpc.AppendStreamMessage(buf[:0], id, seq, msg)
		seq++
		return send(buf)
	})
}

// relayMessages passes each message of s to send as it is, then returns the final outcome
// ({"messages": n}, or the error that ended the stream).
func relayMessages(ctx context.Context, id jsonrpc.ID, s gateway.Stream, send func([]byte) error) outcome {
	for n := 0; ; n++ {
		msg, err := s.Recv(ctx)
		if errors.Is(err, io.EOF) {
			return outcome{res: gateway.NewResult(append(strconv.AppendInt([]byte(`{"messages":`), int64(n), 10), '}')), id: id}
		}
		if err != nil {
			return outcome{err: gateway.AsError(err), id: id}
		}
		if err := send(msg); err != nil {
			return outcome{err: gateway.AsError(err), id: id}
		}
	}
}

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

	q      *sendQueue[[]byte] // nil until started
	failed atomic.Bool        // a write failed: the consumer is gone
	done   chan struct{}      // closed when the writer has exited
}

// newSSEWriter returns the event writer of the HTTP response to a request with context ctx;
// writeTimeout bounds writing each event.
func newSSEWriter(ctx context.Context, w http.ResponseWriter, limits SSEConfig, writeTimeout time.Duration) *sseWriter {
	return &sseWriter{ctx: ctx, w: w, limits: limits, timeout: writeTimeout}
}

func (sw *sseWriter) deliver(ctx context.Context, id jsonrpc.ID, s gateway.Stream) outcome {
	return relay(ctx, id, s, func(msg []byte) error { return sw.send("", msg) })
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
	sw.q = newSendQueue(sw.limits.SendQueue, sw.limits.SendQueueBytes, func(f []byte) int { return len(f) })
	sw.done = make(chan struct{})
	go sw.write()
}

// write writes the queued frames in order until the queue is closed. After a failed write
// the rest are discarded.
func (sw *sseWriter) write() {
	defer close(sw.done)
	rc := http.NewResponseController(sw.w)
	for frame := range sw.q.ch {
		sw.q.taken(frame)
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
	if sw.q.push(sw.ctx, sse.AppendEvent(nil, name, data), slowConsumerWait(sw.timeout)) {
		return nil
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	switch {
	case sw.ctx.Err() != nil || sw.failed.Load():
		return errStreamGone
	case len(sw.q.ch) >= cap(sw.q.ch):
		sw.slow = errSlowConsumer("sse.send_queue", int64(sw.limits.SendQueue))
	default:
		sw.slow = errSlowConsumer("sse.send_queue_bytes", sw.limits.SendQueueBytes)
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
	return sw.q.tryPush(sse.AppendEvent(nil, "", data), cap(sw.q.ch)/2, sw.limits.SendQueueBytes/2)
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
		sw.q.drop()
	}
	sw.mu.Unlock()
	if final != nil && !sw.failed.Load() {
		frame := final(slow)
		sw.q.bytes.take(len(frame), math.MaxInt64)
		sw.q.ch <- frame // the writer drains the queue: it frees room within a write timeout
	}
	close(sw.q.ch)
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
// stop (see progressSink). The sink only queues (offer), so a client that reads slowly
// never stalls the backend; the response event the handler writes next goes through the
// same queue, after them.
func (sw *sseWriter) progress(id jsonrpc.ID) (sink func(gateway.Progress), stop func()) {
	return progressSink(id, sw.offer)
}

// methodProgress (server → client) reports the progress of a request in flight; it is sent
// before the request's response and never after it:
//
//	{"jsonrpc":"2.0","method":"$/progress","params":{"id":<id>,"progress":n,"total":t,"message":m}}
//
// total and message are left out when the backend did not send them.
const methodProgress = "$/progress"

// progressSink returns a progress sink for request id that passes each report, as a
// $/progress notification, to offer, and stop, after which reports are dropped. offer must
// not block; it reports whether it took the message (one it refuses is dropped: progress
// is advisory). A report being offered when stop is called is finished first, so none is
// offered once stop has returned.
func progressSink(id jsonrpc.ID, offer func([]byte) bool) (sink func(gateway.Progress), stop func()) {
	var mu sync.Mutex
	stopped := false
	sink = func(p gateway.Progress) {
		if !finite(p.Progress) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			_ = offer(appendProgress(nil, id, p))
		}
	}
	stop = func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
	}
	return sink, stop
}

// appendProgress appends the $/progress notification of p for request id.
func appendProgress(dst []byte, id jsonrpc.ID, p gateway.Progress) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":"`+methodProgress+`","params":{"id":`...)
	dst = append(dst, id.Raw()...)
	dst = append(dst, `,"progress":`...)
	dst = appendNumber(dst, p.Progress)
	if p.Total != nil && finite(*p.Total) {
		dst = append(dst, `,"total":`...)
		dst = appendNumber(dst, *p.Total)
	}
	if p.Message != "" {
		dst = append(dst, `,"message":`...)
		dst = jsonrpc.AppendString(dst, p.Message)
	}
	return append(dst, "}}"...)
}

// appendNumber appends a finite f as a JSON number, formatted as encoding/json does.
func appendNumber(dst []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(dst, f, format, -1, 64)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

package server

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/codecs/sse"
	"github.com/gatehouse-dev/gatehouse/gateway"
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
// one event's data. Events come from the handler and from a progress writer, so writes
// are serialised. A stream of named events (deliverEvents) makes the whole response one
// such stream: its frames are the events alone.
type sseWriter struct {
	mu           sync.Mutex
	w            http.ResponseWriter
	writeTimeout time.Duration // bounds writing one named event
	started      bool
	named        bool // the response is a stream of named events; progress is dropped
	buf          []byte
}

// newSSEWriter returns the event writer of an HTTP response; writeTimeout bounds writing
// each named event.
func newSSEWriter(w http.ResponseWriter, writeTimeout time.Duration) *sseWriter {
	return &sseWriter{w: w, writeTimeout: writeTimeout}
}

func (sw *sseWriter) deliver(ctx context.Context, id jsonrpc.ID, s gateway.Stream) outcome {
	return relay(ctx, id, s, sw.event)
}

// startLocked sends the event stream's headers, once; sw.mu is held.
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
}

// event writes one event and flushes it to the client, starting the stream if needed.
// Once the response is a stream of named events, it writes nothing.
func (sw *sseWriter) event(data []byte) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.named {
		return nil
	}
	sw.startLocked()
	sw.buf = sse.AppendEvent(sw.buf[:0], "", data)
	if _, err := sw.w.Write(sw.buf); err != nil {
		return err
	}
	return http.NewResponseController(sw.w).Flush()
}

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

// sseProgressQueue bounds the progress events of one call waiting to be written; past it,
// reports are dropped.
const sseProgressQueue = 64

// progress returns a sink sending request id's progress as events of the stream, and
// stop (see progressSink). The sink only queues: a goroutine started with the first
// report writes the events, so a client that reads slowly never stalls the backend. stop
// waits for that goroutine, so the response event the handler writes next comes last.
func (sw *sseWriter) progress(id jsonrpc.ID) (sink func(gateway.Progress), stop func()) {
	queue := make(chan []byte, sseProgressQueue)
	done := make(chan struct{})
	var once sync.Once
	sink, stopSink := progressSink(id, func(msg []byte) bool {
		once.Do(func() { go sw.drain(queue, done) })
		select {
		case queue <- msg:
			return true
		default:
			return false
		}
	})
	return sink, func() {
		stopSink()
		close(queue)
		once.Do(func() { close(done) }) // no report came: no writer to wait for
		<-done
	}
}

// drain writes queued progress events until the queue is closed; after a failed write
// the rest are discarded.
func (sw *sseWriter) drain(queue <-chan []byte, done chan<- struct{}) {
	defer close(done)
	var failed bool
	for msg := range queue {
		if !failed {
			failed = sw.event(msg) != nil
		}
	}
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

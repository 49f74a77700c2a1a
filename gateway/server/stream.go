package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
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

// sseWriter turns an HTTP response into an event stream the first time a streamed result
// is delivered; each JSON-RPC message is one event's data.
type sseWriter struct {
	w       http.ResponseWriter
	started bool
	buf     []byte
}

func (sw *sseWriter) deliver(ctx context.Context, id jsonrpc.ID, s gateway.Stream) outcome {
	if !sw.started {
		h := sw.w.Header()
		h.Set("Content-Type", sse.ContentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		sw.w.WriteHeader(http.StatusOK)
		sw.started = true
	}
	return relay(ctx, id, s, sw.event)
}

// event writes one event and flushes it to the client.
func (sw *sseWriter) event(data []byte) error {
	sw.buf = sse.AppendEvent(sw.buf[:0], "", data)
	if _, err := sw.w.Write(sw.buf); err != nil {
		return err
	}
	return http.NewResponseController(sw.w).Flush()
}

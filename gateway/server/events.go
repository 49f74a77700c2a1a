package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/codecs/sse"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// A result of named events (gateway.Result.Events: nekte.delegate's task events) is a
// stream whose every message is {"event": <name>, "data": <payload>}. The faces deliver it
// to a single request as it comes:
//
//   - HTTP answers with Server-Sent Events whatever the Accept header says, one frame
//     "event: <name>\ndata: <payload>\n\n" per message, and ends the response after the last
//     one; a stream that fails ends with an "error" event {code, message};
//   - WebSocket sends each message as a methodEvent notification, then the response
//     {"events": n}, or the error that ended the stream.
//
// A batch member's events are collected like any stream's messages: its result is the
// array of the {"event", "data"} objects, bounded by jsonrpc.max_collected_bytes and the
// call's deadline.

// methodEvent (server → client, WebSocket) carries one named event of a request's result:
//
//	{"jsonrpc":"2.0","method":"$/event","params":{"id":<id>,"event":<name>,"data":<payload>}}
const methodEvent = "$/event"

// errMalformedEvent ends a stream of named events whose target sent a message that is not
// {"event": <name>, "data": <payload>} with a one-line name.
var errMalformedEvent = gateway.NewError(schemas.CodeInternal).With("reason", "the target sent a malformed event")

// eventMessage is one message of a stream of named events.
type eventMessage struct {
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// parseEvent returns the name and the payload of one message of a stream of named events;
// the payload is compact JSON, on one line.
func parseEvent(msg []byte) (name string, data []byte, err error) {
	var m eventMessage
	if json.Unmarshal(msg, &m) != nil || m.Event == "" || strings.ContainsAny(m.Event, "\r\n") || len(m.Data) == 0 {
		return "", nil, errMalformedEvent
	}
	data = m.Data
	if bytes.ContainsAny(data, "\r\n") {
		var b bytes.Buffer
		if json.Compact(&b, data) != nil {
			return "", nil, errMalformedEvent
		}
		data = b.Bytes()
	}
	return m.Event, data, nil
}

// relayEvents passes each event of s to send, then returns the final outcome: the result
// {"events": n} after the last one, or the error that ended the stream.
func relayEvents(ctx context.Context, id jsonrpc.ID, s gateway.Stream, send func(name string, data []byte) error) outcome {
	for n := 0; ; n++ {
		msg, err := s.Recv(ctx)
		if errors.Is(err, io.EOF) {
			return outcome{res: gateway.NewResult(append(strconv.AppendInt([]byte(`{"events":`), int64(n), 10), '}')), id: id}
		}
		if err != nil {
			return outcome{err: gateway.AsError(err), id: id}
		}
		name, data, err := parseEvent(msg)
		if err == nil {
			err = send(name, data)
		}
		if err != nil {
			return outcome{err: gateway.AsError(err), id: id}
		}
	}
}

// appendEventNote appends the methodEvent notification of one event of request id.
func appendEventNote(dst []byte, id jsonrpc.ID, name string, data []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":"`+methodEvent+`","params":{"id":`...)
	dst = append(dst, id.Raw()...)
	dst = append(dst, `,"event":`...)
	dst = jsonrpc.AppendString(dst, name)
	dst = append(dst, `,"data":`...)
	dst = append(dst, data...)
	return append(dst, "}}"...)
}

// deliverEvents makes the HTTP response a stream of s's named events (exchange.events):
// the headers go out at once, each event is flushed as it comes, and a stream that fails
// ends with an "error" event. The response ends when it returns; its outcome is not
// written. A caller that goes away cancels ctx, which ends the stream (the caller of
// deliverEvents closes it).
func (sw *sseWriter) deliverEvents(ctx context.Context, id jsonrpc.ID, s gateway.Stream) outcome {
	if err := sw.beginNamed(); err != nil {
		return outcome{err: gateway.AsError(err), id: id}
	}
	out := relayEvents(ctx, id, s, sw.namedEvent)
	if out.err != nil && ctx.Err() == nil {
		_ = sw.errorEvent(out.err)
	}
	return out
}

// beginNamed makes the response a stream of named events and sends its headers.
func (sw *sseWriter) beginNamed() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.named = true
	sw.startLocked()
	return http.NewResponseController(sw.w).Flush()
}

// namedEvent writes one named event and flushes it, within the write timeout.
func (sw *sseWriter) namedEvent(name string, data []byte) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.buf = sse.AppendEvent(sw.buf[:0], name, data)
	return sw.flushBufLocked()
}

// errorEvent writes the "error" event that ends a failed stream.
func (sw *sseWriter) errorEvent(e *gateway.Error) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	buf, err := nekte.AppendEvent(sw.buf[:0], nekte.ErrorEvent{Code: e.Code(), Message: e.Message()})
	if err != nil {
		return err
	}
	sw.buf = buf
	return sw.flushBufLocked()
}

// flushBufLocked writes sw.buf and flushes it, within the write timeout; sw.mu is held.
func (sw *sseWriter) flushBufLocked() error {
	rc := http.NewResponseController(sw.w)
	_ = rc.SetWriteDeadline(time.Now().Add(sw.writeTimeout))
	if _, err := sw.w.Write(sw.buf); err != nil {
		return err
	}
	return rc.Flush()
}

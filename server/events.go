package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
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
// the headers go out at once, each event is queued for the stream's writer as it comes
// (see sseWriter), and a stream that fails ends with an "error" event. The response ends
// when it returns; its outcome is not written. A caller that goes away cancels ctx, which
// ends the stream (the caller of deliverEvents closes it).
func (sw *sseWriter) deliverEvents(ctx context.Context, id jsonrpc.ID, s gateway.Stream) outcome {
	sw.beginNamed()
	out := relayEvents(ctx, id, s, sw.send)
	if out.err != nil && ctx.Err() == nil {
		sw.finish(func(bool) []byte {
			frame, _ := nekte.AppendEvent(nil, nekte.ErrorEvent{Code: out.err.Code(), Message: out.err.Message()})
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
	sw.q.tryPush(nil, 1, math.MaxInt64) // an empty frame: the writer flushes the headers at once
}

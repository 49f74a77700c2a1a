package faces

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Relay delivers the messages of a streamed result through send, each as a "$/stream"
// notification tied to the request id, and returns the final outcome: the result
// {"messages": n} after the last one, or the stream's error.
func Relay(ctx context.Context, id jsonrpc.ID, s gateway.Stream, send func([]byte) error) Outcome {
	var buf []byte
	seq := 0
	return RelayMessages(ctx, id, s, func(msg []byte) error {
		buf = jsonrpc.AppendStreamMessage(buf[:0], id, seq, msg)
		seq++
		return send(buf)
	})
}

// RelayMessages passes each message of s to send as it is, then returns the final outcome
// ({"messages": n}, or the error that ended the stream).
func RelayMessages(ctx context.Context, id jsonrpc.ID, s gateway.Stream, send func([]byte) error) Outcome {
	for n := 0; ; n++ {
		msg, err := s.Recv(ctx)
		if errors.Is(err, io.EOF) {
			return Outcome{Res: gateway.NewResult(append(strconv.AppendInt([]byte(`{"messages":`), int64(n), 10), '}')), ID: id}
		}
		if err != nil {
			return Outcome{Err: gateway.AsError(err), ID: id}
		}
		if err := send(msg); err != nil {
			return Outcome{Err: gateway.AsError(err), ID: id}
		}
	}
}

// A result of named events (gateway.Result.Events: nekte.delegate's task events) is a
// stream whose every message is {"event": <name>, "data": <payload>}. The faces deliver it
// to a single request as it comes:
//
//   - HTTP answers with Server-Sent Events whatever the Accept header says, one frame
//     "event: <name>\ndata: <payload>\n\n" per message, and ends the response after the last
//     one; a stream that fails ends with an "error" event {code, message};
//   - WebSocket sends each message as a MethodEvent notification, then the response
//     {"events": n}, or the error that ended the stream.
//
// A batch member's events are collected like any stream's messages: its result is the
// array of the {"event", "data"} objects, bounded by jsonrpc.max_collected_bytes and the
// call's deadline.

// MethodEvent (server → client, WebSocket) carries one named event of a request's result:
//
//	{"jsonrpc":"2.0","method":"$/event","params":{"id":<id>,"event":<name>,"data":<payload>}}
const MethodEvent = "$/event"

// ErrMalformedEvent ends a stream of named events whose target sent a message that is not
// {"event": <name>, "data": <payload>} with a one-line name.
var ErrMalformedEvent = gateway.NewError(schemas.CodeInternal).With("reason", "the target sent a malformed event")

// eventMessage is one message of a stream of named events.
type eventMessage struct {
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// ParseEvent returns the name and the payload of one message of a stream of named events;
// the payload is compact JSON, on one line.
func ParseEvent(msg []byte) (name string, data []byte, err error) {
	var m eventMessage
	if json.Unmarshal(msg, &m) != nil || m.Event == "" || strings.ContainsAny(m.Event, "\r\n") || len(m.Data) == 0 {
		return "", nil, ErrMalformedEvent
	}
	data = m.Data
	if bytes.ContainsAny(data, "\r\n") {
		var b bytes.Buffer
		if json.Compact(&b, data) != nil {
			return "", nil, ErrMalformedEvent
		}
		data = b.Bytes()
	}
	return m.Event, data, nil
}

// RelayEvents passes each event of s to send, then returns the final outcome: the result
// {"events": n} after the last one, or the error that ended the stream.
func RelayEvents(ctx context.Context, id jsonrpc.ID, s gateway.Stream, send func(name string, data []byte) error) Outcome {
	for n := 0; ; n++ {
		msg, err := s.Recv(ctx)
		if errors.Is(err, io.EOF) {
			return Outcome{Res: gateway.NewResult(append(strconv.AppendInt([]byte(`{"events":`), int64(n), 10), '}')), ID: id}
		}
		if err != nil {
			return Outcome{Err: gateway.AsError(err), ID: id}
		}
		name, data, err := ParseEvent(msg)
		if err == nil {
			err = send(name, data)
		}
		if err != nil {
			return Outcome{Err: gateway.AsError(err), ID: id}
		}
	}
}

// AppendEventNote appends the MethodEvent notification of one event of request id.
func AppendEventNote(dst []byte, id jsonrpc.ID, name string, data []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":"`+MethodEvent+`","params":{"id":`...)
	dst = append(dst, id.Raw()...)
	dst = append(dst, `,"event":`...)
	dst = jsonrpc.AppendString(dst, name)
	dst = append(dst, `,"data":`...)
	dst = append(dst, data...)
	return append(dst, "}}"...)
}

// MethodProgress (server → client) reports the progress of a request in flight; it is sent
// before the request's response and never after it:
//
//	{"jsonrpc":"2.0","method":"$/progress","params":{"id":<id>,"progress":n,"total":t,"message":m}}
//
// total and message are left out when the backend did not send them.
const MethodProgress = "$/progress"

// ProgressSink returns a progress sink for request id that passes each report, as a
// $/progress notification, to offer, and stop, after which reports are dropped. offer must
// not block; it reports whether it took the message (one it refuses is dropped: progress
// is advisory). A report being offered when stop is called is finished first, so none is
// offered once stop has returned.
func ProgressSink(id jsonrpc.ID, offer func([]byte) bool) (sink func(gateway.Progress), stop func()) {
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
	dst = append(dst, `{"jsonrpc":"2.0","method":"`+MethodProgress+`","params":{"id":`...)
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

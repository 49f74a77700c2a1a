package client

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// maxEventBytes bounds one line of an event stream.
const maxEventBytes = 16 << 20

// Names of the events that end a task's stream.
const (
	EventComplete  = "complete"
	EventError     = "error"
	EventCancelled = "cancelled"
)

// jsonNull is JSON's null.
const jsonNull = "null"

// Event is one named event of a stream: an SSE frame, or a WebSocket $/event.
type Event struct {
	Name string          `json:"event"`
	Data json.RawMessage `json:"data"`
}

// AsError is the JSON-RPC error an error event carries ({code, message}).
func (e Event) AsError() *RPCError {
	var re RPCError
	if json.Unmarshal(e.Data, &re) != nil || re.Code == 0 {
		return &RPCError{Code: -32603, Message: "the stream ended with an error event: " + string(e.Data)}
	}
	return &re
}

// ReadEvents reads Server-Sent Events from r and hands each to fn until the stream ends or
// fn fails; comments (": ping") are skipped, and data lines of one event are joined.
func ReadEvents(r io.Reader, fn func(Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventBytes)
	var name string
	var data bytes.Buffer
	flush := func() error {
		if data.Len() == 0 && name == "" {
			return nil
		}
		if name == "" {
			name = "message"
		}
		e := Event{Name: name, Data: json.RawMessage(bytes.Clone(data.Bytes()))}
		name = ""
		data.Reset()
		return fn(e)
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if err := flush(); err != nil {
				return err
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return flush()
}

package gateway

import (
	"context"
	"sync"
)

// Result is the successful outcome of a call.
type Result struct {
	// Value is the raw JSON of the JSON-RPC result member; nil encodes as null.
	Value []byte
	// Stream, when set, delivers the result as a sequence of messages (a server-streaming
	// method); Value is then ignored. Whoever receives the Result must Close the stream.
	Stream Stream
	// Events, with Stream set, marks the stream's messages as named events, each the JSON
	// object {"event": <name>, "data": <payload>} (nekte.delegate's task events). The HTTP
	// face answers such a result with Server-Sent Events whatever the Accept header says,
	// one frame "event: <name>\ndata: <payload>" per message, and ends the response after
	// the last one; the WebSocket face sends each message as a notification.
	Events bool
	// Metadata is backend response metadata the configuration allows to be surfaced
	// (lower-case keys); the HTTP face returns it as Grpc-Metadata-<key> headers.
	Metadata map[string][]string
}

// NewResult returns a Result holding the raw JSON value v.
func NewResult(v []byte) *Result { return &Result{Value: v} }

// Stream is a sequence of JSON messages: what a server-streaming method returns
// (Result.Stream) and what a client-streaming caller sends (Call.Input).
//
// Recv returns the next message, or io.EOF after the last one; any other error ends the
// stream and should be an *Error. Recv is called from one goroutine at a time. Close ends
// the stream early and releases what it holds; it may be called at any time, from any
// goroutine, more than once, and must be called once the stream is no longer needed.
type Stream interface {
	Recv(ctx context.Context) ([]byte, error)
	Close() error
}

// AfterClose returns a stream that runs f once, when s is closed. A stage that derives a
// cancellable context for a call whose result is streamed hands its cancel function over
// this way instead of deferring it, since the stream outlives the handler.
func AfterClose(s Stream, f func()) Stream {
	return &closeHook{Stream: s, f: f}
}

type closeHook struct {
	Stream
	once sync.Once
	f    func()
}

func (c *closeHook) Close() error {
	err := c.Stream.Close()
	c.once.Do(c.f)
	return err
}

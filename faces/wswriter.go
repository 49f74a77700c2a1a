package faces

import (
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// WSWriter is the writing half of one WebSocket connection, for the faces that speak
// WebSocket (faces/ws, faces/session): it writes what waits in the connection's Outbox, a
// ping every ping interval and, once asked (Close), the goodbye — what is queued, unless
// the connection failed as a slow consumer, then the close frame — from a goroutine that
// runs only while there is something to write, so an idle connection holds none.
//
// A WSWriter is embedded by value and set up with Init before the connection is served.
type WSWriter[T any] struct {
	conn         *websocket.Conn
	send         *Outbox[T]
	write        func(*websocket.Conn, T) error
	gone         func()
	writeTimeout time.Duration
	pingInterval time.Duration

	closeOnce sync.Once
	closing   chan struct{} // closed when the writer should say goodbye
	closeCode int
	closeText string

	mu       sync.Mutex
	serving  bool        // Start was called: the writer may run
	writing  bool        // a writer goroutine is running
	finished bool        // the writer has closed the connection; it never runs again
	pingDue  bool        // the ping timer fired since the last ping was written
	ping     *time.Timer // fires every ping interval while the writer may run
	done     chan struct{}
}

// Init sets w up for conn: write writes one message of send (the write deadline is set
// already), gone is called when a write fails (the peer is gone), each write may take
// writeTimeout, and a ping is written every pingInterval.
func (w *WSWriter[T]) Init(conn *websocket.Conn, send *Outbox[T], write func(*websocket.Conn, T) error, gone func(),
	writeTimeout, pingInterval time.Duration) {
	w.conn, w.send, w.write, w.gone = conn, send, write, gone
	w.writeTimeout, w.pingInterval = writeTimeout, pingInterval
	w.closing = make(chan struct{})
	w.done = make(chan struct{})
}

// Start lets the writer run from now on and starts the ping timer.
func (w *WSWriter[T]) Start() {
	w.mu.Lock()
	w.serving = true
	w.ping = time.AfterFunc(w.pingInterval, w.pingTimer)
	w.mu.Unlock()
	w.Kick()
}

// Kick starts the writer unless it runs, has finished, or may not run yet; whoever gives
// it work (a message queued, the goodbye asked) kicks it after.
func (w *WSWriter[T]) Kick() {
	w.mu.Lock()
	start := w.serving && !w.writing && !w.finished
	w.writing = w.writing || start
	w.mu.Unlock()
	if start {
		go w.loop()
	}
}

// Close asks the writer to say goodbye with code and text, once: flush what is queued
// (dropped instead when code is 1008, a slow consumer's), send the close frame and close
// the connection. Later calls change nothing.
func (w *WSWriter[T]) Close(code int, text string) {
	w.closeOnce.Do(func() {
		w.closeCode, w.closeText = code, text
		close(w.closing)
		w.Kick()
	})
}

// Closing is closed once Close has been called.
func (w *WSWriter[T]) Closing() <-chan struct{} { return w.closing }

// Done is closed once the writer has closed the connection for good.
func (w *WSWriter[T]) Done() <-chan struct{} { return w.done }

// pingTimer asks the writer for a ping and arms the next one.
func (w *WSWriter[T]) pingTimer() {
	w.mu.Lock()
	if w.finished {
		w.mu.Unlock()
		return
	}
	w.pingDue = true
	w.ping.Reset(w.pingInterval)
	w.mu.Unlock()
	w.Kick()
}

// loop writes what is queued, then a due ping, and exits when there is nothing left — or
// says goodbye and closes the connection once closing is closed, or fails it when a write
// fails.
func (w *WSWriter[T]) loop() {
	for {
		select {
		case <-w.closing: // a close (a slow consumer's above all) goes before what is queued
			w.goodbye()
			w.finish()
			return
		default:
		}
		if msg, ok := w.send.Pop(); ok {
			if w.writeOne(msg) != nil {
				w.gone()
				w.finish()
				return
			}
			continue
		}
		w.mu.Lock()
		ping := w.pingDue
		w.pingDue = false
		if !ping && w.send.Len() == 0 && !isClosed(w.closing) {
			w.writing = false // under mu: a kick after this starts a new writer
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		if ping && w.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(w.writeTimeout)) != nil {
			w.gone()
			w.finish()
			return
		}
	}
}

func (w *WSWriter[T]) writeOne(msg T) error {
	_ = w.conn.SetWriteDeadline(time.Now().Add(w.writeTimeout))
	return w.write(w.conn, msg)
}

// goodbye flushes what is queued (unless the connection failed as a slow consumer) and
// sends the close frame.
func (w *WSWriter[T]) goodbye() {
	if w.closeCode == websocket.ClosePolicyViolation {
		w.send.Drop()
	} else {
		for {
			msg, ok := w.send.Pop()
			if !ok || w.writeOne(msg) != nil {
				break
			}
		}
	}
	_ = w.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(w.closeCode, w.closeText),
		time.Now().Add(w.writeTimeout))
}

// finish closes the connection for good: no writer runs again and no ping is due.
func (w *WSWriter[T]) finish() {
	w.mu.Lock()
	w.finished = true
	w.ping.Stop()
	w.mu.Unlock()
	_ = w.conn.Close()
	close(w.done)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// CloseCode returns the code and text Close was called with; valid once Closing is closed.
func (w *WSWriter[T]) CloseCode() (int, string) { return w.closeCode, w.closeText }

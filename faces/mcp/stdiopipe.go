package mcpface

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"
)

// stdioPipe stands between the client's streams and mcp-go's stdio server. It follows the
// requests read and the responses written, so that at the end of the input the requests in
// flight can be answered before the input is reported closed (mcp-go cancels whatever is
// still running as soon as it sees the end of its input).
//
// It also routes: a line that is not MCP (route says so) does not reach mcp-go but is
// served by serve, on a goroutine of its own, which writes its answers with writeLine.
type stdioPipe struct {
	in    io.Reader
	out   io.Writer
	grace time.Duration
	limit int64 // longest line followed or routed; longer ones go to mcp-go unless their method is routed

	ctx context.Context // ends the wait for answers (a signal)
	eof bool            // the input ended; reported after the answers
	err error           // the input's error other than its end; reported once fwd is read

	route func(line []byte) bool // whether a whole line goes to serve rather than mcp-go; nil: none does
	serve func(line []byte)      // serves a routed line (its own copy) and writes its answers
	big   func()                 // answers a routed line over the limit

	raw  []byte       // what was last read from in
	cur  []byte       // the line being read, while it is within the limit
	mode lineMode     // what becomes of the rest of the line being read
	fwd  bytes.Buffer // read and waiting for mcp-go

	writeMu sync.Mutex // mcp-go writes responses and its own requests from several goroutines
	outLine lineSplitter
	closed  bool // no more writes: ServeStdio has returned (guarded by writeMu)

	mu      sync.Mutex
	pending map[string]struct{} // ids of requests read and not answered yet
	serving int                 // routed lines being served
	drained chan struct{}       // signalled when pending becomes empty or a routed line is served
	running sync.WaitGroup      // the goroutines serving routed lines
	slots   chan struct{}       // one per routed line being served: a full channel holds the reader back
}

// lineMode is what becomes of the line being read.
type lineMode uint8

const (
	modeCollect lineMode = iota // kept in cur, within the limit
	modeForward                 // over the limit, passed on to mcp-go as it comes
	modeDiscard                 // over the limit and routed: answered already, the rest dropped
)

// newStdioPipe returns a pipe whose wait for answers also ends with ctx.
func newStdioPipe(ctx context.Context, in io.Reader, out io.Writer, grace time.Duration, limit int64) *stdioPipe {
	return &stdioPipe{in: in, out: out, grace: grace, limit: limit, ctx: ctx, raw: make([]byte, 32<<10),
		pending: map[string]struct{}{}, drained: make(chan struct{}, 1)}
}

// Read hands mcp-go the client's input, less the routed lines; at its end it waits for
// the answers to every request read, up to the grace period, before reporting io.EOF.
func (p *stdioPipe) Read(b []byte) (int, error) {
	for p.fwd.Len() == 0 {
		if p.err != nil {
			return 0, p.err
		}
		if p.eof {
			p.awaitAnswers()
			return 0, io.EOF
		}
		n, err := p.in.Read(p.raw)
		p.split(p.raw[:n])
		switch {
		case errors.Is(err, io.EOF):
			p.eof = true
			if p.mode == modeCollect && len(p.cur) > 0 {
				p.line(p.cur) // a last line without its newline
			}
			p.cur, p.mode = p.cur[:0], modeCollect
		case err != nil:
			p.err = err
		}
	}
	return p.fwd.Read(b)
}

// split cuts what was read into lines, forwarding those for mcp-go and serving the others.
func (p *stdioPipe) split(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		switch p.mode {
		case modeForward:
			p.fwd.Write(chunk)
		case modeDiscard:
		default:
			if int64(len(p.cur)+len(chunk)) <= p.limit {
				p.cur = append(p.cur, chunk...)
			} else {
				p.overlong(chunk)
			}
		}
		if i < 0 {
			return
		}
		switch p.mode {
		case modeCollect:
			p.line(p.cur)
		case modeForward:
			p.fwd.WriteByte('\n')
		default:
		}
		p.cur, p.mode, b = p.cur[:0], modeCollect, b[i+1:]
	}
}

// line handles one whole line within the limit.
func (p *stdioPipe) line(line []byte) {
	if p.route == nil || !p.route(line) {
		p.request(line)
		p.fwd.Write(line)
		p.fwd.WriteByte('\n')
		return
	}
	p.mu.Lock()
	p.serving++
	p.mu.Unlock()
	line = bytes.Clone(line)
	if p.slots != nil {
		p.slots <- struct{}{} // at most cap(slots) at once: the reading of stdin waits for a slot
	}
	p.running.Go(func() {
		defer func() {
			if p.slots != nil {
				<-p.slots
			}
		}()
		defer p.served()
		p.serve(line)
	})
}

// overlong decides what becomes of a line found over the limit, chunk being what was read
// of it past cur: a line whose method, read from its beginning, is routed is answered by
// big and dropped; any other goes on to mcp-go, unfollowed, as it comes.
func (p *stdioPipe) overlong(chunk []byte) {
	head := append(p.cur, chunk...)
	if p.route != nil && routedPrefix(head, p.route) {
		p.mode = modeDiscard
		p.mu.Lock()
		p.serving++
		p.mu.Unlock()
		p.running.Go(func() {
			defer p.served()
			p.big()
		})
		return
	}
	p.mode = modeForward
	p.fwd.Write(head)
}

// routedPrefix reports whether head, the beginning of an object, names a method (before
// any member it cannot read whole) that route sends away from mcp-go.
func routedPrefix(head []byte, route func([]byte) bool) bool {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		if key, _ := t.(string); key == "method" {
			var m string
			if dec.Decode(&m) != nil {
				return false
			}
			probe, err := json.Marshal(map[string]string{"method": m})
			return err == nil && route(probe)
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
}

// served notes that a routed line has been answered.
func (p *stdioPipe) served() {
	p.mu.Lock()
	p.serving--
	p.mu.Unlock()
	p.signal()
}

func (p *stdioPipe) signal() {
	select {
	case p.drained <- struct{}{}:
	default:
	}
}

// Write writes mcp-go's output to the client, noting the responses.
func (p *stdioPipe) Write(b []byte) (int, error) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if p.closed {
		return 0, errPipeClosed
	}
	n, err := p.out.Write(b)
	p.outLine.feed(b[:n], p.limit, p.response)
	return n, err
}

// writeLine writes msg, a whole message of a routed line's, as one line. mcp-go's pending
// requests are not looked at: their ids may be those of routed requests too.
func (p *stdioPipe) writeLine(msg []byte) error {
	msg = append(msg, '\n')
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if p.closed {
		return errPipeClosed
	}
	_, err := p.out.Write(msg)
	return err
}

// close ends the writes to the client; the routed lines still being served are cancelled
// by their context, and close waits for them.
func (p *stdioPipe) close() {
	p.writeMu.Lock()
	p.closed = true
	p.writeMu.Unlock()
	p.running.Wait()
}

var errPipeClosed = errors.New("stdio: serving has ended")

// rpcHead is what the pipe reads of a message: whether it is a request or a response, and
// its id.
type rpcHead struct {
	ID     any     `json:"id"`
	Method *string `json:"method"`
}

func headOf(line []byte) (rpcHead, string, bool) {
	var h rpcHead
	if json.Unmarshal(line, &h) != nil || h.ID == nil {
		return h, "", false
	}
	id, err := json.Marshal(h.ID) // a canonical form: 1.0 and 1 are one id
	return h, string(id), err == nil
}

func (p *stdioPipe) request(line []byte) {
	if h, id, ok := headOf(line); ok && h.Method != nil {
		p.mu.Lock()
		p.pending[id] = struct{}{}
		p.mu.Unlock()
	}
}

func (p *stdioPipe) response(line []byte) {
	h, id, ok := headOf(line)
	if !ok || h.Method != nil {
		return
	}
	p.mu.Lock()
	delete(p.pending, id)
	empty := len(p.pending) == 0
	p.mu.Unlock()
	if empty {
		p.signal()
	}
}

// awaitAnswers waits until no request read is unanswered and no routed line is being
// served, the grace period passes, or the pipe's context ends.
func (p *stdioPipe) awaitAnswers() {
	timer := time.NewTimer(p.grace)
	defer timer.Stop()
	for {
		p.mu.Lock()
		n := len(p.pending) + p.serving
		p.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-p.drained:
		case <-timer.C:
			return
		case <-p.ctx.Done():
			return
		}
	}
}

// lineSplitter cuts a byte stream into lines, keeping at most limit bytes of one.
type lineSplitter struct {
	buf      []byte
	overlong bool
}

// feed hands every complete line of b (with what came before) to fn; a line longer than
// limit is skipped.
func (l *lineSplitter) feed(b []byte, limit int64, fn func([]byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if !l.overlong && int64(len(l.buf)+len(chunk)) <= limit {
			l.buf = append(l.buf, chunk...)
		} else {
			l.overlong, l.buf = true, l.buf[:0]
		}
		if i < 0 {
			return
		}
		if !l.overlong {
			fn(l.buf)
		}
		l.buf, l.overlong, b = l.buf[:0], false, b[i+1:]
	}
}

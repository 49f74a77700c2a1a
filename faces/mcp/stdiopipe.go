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
type stdioPipe struct {
	in    io.Reader
	out   io.Writer
	grace time.Duration
	limit int64 // longest line followed; the ids of longer ones are not tracked

	ctx    context.Context // ends the wait for answers (a signal)
	eof    bool            // the input ended; reported after the answers
	inLine lineSplitter

	writeMu sync.Mutex // mcp-go writes responses and its own requests from several goroutines
	outLine lineSplitter

	mu      sync.Mutex
	pending map[string]struct{} // ids of requests read and not answered yet
	drained chan struct{}       // signalled when pending becomes empty
}

// newStdioPipe returns a pipe whose wait for answers also ends with ctx.
func newStdioPipe(ctx context.Context, in io.Reader, out io.Writer, grace time.Duration, limit int64) *stdioPipe {
	return &stdioPipe{in: in, out: out, grace: grace, limit: limit, ctx: ctx,
		pending: map[string]struct{}{}, drained: make(chan struct{}, 1)}
}

// Read reads the client's input; at its end it waits for the answers to every request
// read, up to the grace period, before reporting io.EOF.
func (p *stdioPipe) Read(b []byte) (int, error) {
	if p.eof {
		p.awaitAnswers()
		return 0, io.EOF
	}
	n, err := p.in.Read(b)
	p.inLine.feed(b[:n], p.limit, p.request)
	if errors.Is(err, io.EOF) {
		p.eof = true
		if n > 0 {
			return n, nil // let the last line be handled before the end is reported
		}
		p.awaitAnswers()
	}
	return n, err
}

// Write writes mcp-go's output to the client, noting the responses.
func (p *stdioPipe) Write(b []byte) (int, error) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	n, err := p.out.Write(b)
	p.outLine.feed(b[:n], p.limit, p.response)
	return n, err
}

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
		select {
		case p.drained <- struct{}{}:
		default:
		}
	}
}

// awaitAnswers waits until no request read is unanswered, the grace period passes, or the
// pipe's context ends.
func (p *stdioPipe) awaitAnswers() {
	timer := time.NewTimer(p.grace)
	defer timer.Stop()
	for {
		p.mu.Lock()
		n := len(p.pending)
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

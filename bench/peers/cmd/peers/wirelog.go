package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"slices"
	"strings"
	"sync"
)

// wireLog wraps the MCP upstream's handler to show what its clients send it: how many HTTP
// requests of each kind (HTTP method, MCP method, protocol version, Accept, answer's
// Content-Type and status), their bytes, and the first requests of each kind whole. It is
// for finding out what a front makes the upstream do per call, not for the figures: it
// costs the upstream CPU.
type wireLog struct {
	next  http.Handler
	out   io.Writer
	mu    sync.Mutex
	kinds map[string]*wireKind
	conns map[string]bool // remote addresses seen: new connections show as new ones
}

type wireKind struct {
	n, reqBytes, respBytes int64
}

// wireLogSamples is how many requests of each kind are logged whole.
const wireLogSamples = 2

func newWireLog(next http.Handler, out io.Writer) *wireLog {
	return &wireLog{next: next, out: out, kinds: map[string]*wireKind{}, conns: map[string]bool{}}
}

type countingWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (l *wireLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &msg)
	dump, _ := httputil.DumpRequest(r, false)
	cw := &countingWriter{ResponseWriter: w}
	l.next.ServeHTTP(cw, r)
	kind := fmt.Sprintf("%s %q version=%q meta=%d session=%t accept=%q -> %d %q",
		r.Method, msg.Method, r.Header.Get("Mcp-Protocol-Version"), len(msg.Params.Meta), r.Header.Get("Mcp-Session-Id") != "",
		r.Header.Get("Accept"), cw.status, cw.Header().Get("Content-Type"))
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.conns[r.RemoteAddr] {
		l.conns[r.RemoteAddr] = true
	}
	k := l.kinds[kind]
	if k == nil {
		k = &wireKind{}
		l.kinds[kind] = k
	}
	k.n++
	k.reqBytes += int64(len(body))
	k.respBytes += cw.n
	if k.n <= wireLogSamples {
		_, _ = fmt.Fprintf(l.out, "wire: %s\n%s%s\n\n", kind, dump, body)
	}
}

// report prints the counts.
func (l *wireLog) report() {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.kinds))
	for k := range l.kinds {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "wire: %d client connections\n", len(l.conns))
	for _, k := range keys {
		c := l.kinds[k]
		fmt.Fprintf(&b, "wire: %8d × %s (request %d B, answer %d B each)\n", c.n, k, c.reqBytes/c.n, c.respBytes/c.n)
	}
	_, _ = io.WriteString(l.out, b.String())
}

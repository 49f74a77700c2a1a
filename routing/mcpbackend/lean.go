package mcpbackend

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The lean tools/call path. mcp-go's client sends a tools/call through three layers that
// each re-encode the request — the typed params, the 2026-07-28 request metadata (marshal,
// unmarshal to a map, marshal _meta again), the standard headers (marshal the params once
// more to read the name back) — and decodes the whole result into typed content the bridge
// does not use: it relays the raw result. On a streamable HTTP session on the stateless
// revision (2026-07-28) the bridge sends tools/call itself instead: the body is built once
// with _meta written in place, the headers are those mcp-go's client and transport would
// set (standard headers, protocol version, the configured headers, the hop headers), and
// the response — JSON, or an event stream — is read for its result as raw JSON, on the
// session's own HTTP client.
//
// What it does not own goes to mcp-go, unchanged:
//   - sessions on a handshake revision (session IDs, resumable streams,
//     notifications/cancelled), stdio and the legacy SSE transport;
//   - tools whose definition mirrors arguments into Mcp-Param-* headers (x-mcp-header);
//   - a result that asks for input (resultType "input_required", multi round-trip): the
//     call is sent again through mcp-go's client, whose loop fulfils the input requests
//     with the session's handlers. The first round only asked for input, so the server
//     did no work that the second send repeats.
//
// A request the server sends on the call's response stream (sampling, elicitation, roots)
// is answered by the very handler mcp-go's transport would call (wire.handle), and the
// answer is posted back as mcp-go's transport posts it; notifications on the stream
// (progress, log messages) reach the handler mcp-go's client would give them to.

// leanIDBase offsets the lean path's request IDs from those of mcp-go's client on the
// same session, so that no two requests of a session share an ID.
const leanIDBase = 1 << 40

// leanServerRequestTimeout bounds the answer to a request the server sends on a call's
// stream, as mcp-go's transport bounds it.
const leanServerRequestTimeout = 30 * time.Second

// errLeanFallback is the lean path handing a call to mcp-go's client.
var errLeanFallback = errors.New("lean tools/call: handed to the mcp-go client")

// leanSession is what the lean path needs of a session, fixed when it starts.
type leanSession struct {
	url    string
	modern bool        // the stateless revision: request metadata and standard headers, no session ID
	header http.Header // the headers every tools/call carries, hop headers and Mcp-Name aside
	// setName: Mcp-Name is the transport's to set (no configured header overrides it).
	setName bool
	// meta is the fixed part of params._meta: client capabilities, client info, and
	// the protocol version, as members without braces, in mcp-go's (sorted) order around
	// logLevel, which goes between client info and the protocol version.
	metaHead, metaTail []byte
	// named holds, per tool name, header with Mcp-Name set as setName asks: the
	// headers of a call that carries no hop headers, shared read-only by its requests
	// (net/http does not modify a request's headers), so that such a call does not
	// copy the map. Its keys are the upstream's tool names, which its catalog bounds.
	named sync.Map // string → http.Header
}

// headerFor returns the headers of a tools/call of the tool name without hop headers.
// The map is shared: it must not be modified.
func (l *leanSession) headerFor(name string) http.Header {
	if h, ok := l.named.Load(name); ok {
		return h.(http.Header)
	}
	h := l.header.Clone()
	if l.setName {
		if v, ok := mcp.EncodeHeaderValue(name); ok {
			h.Set(mcp.HeaderName, v)
		}
	}
	l.named.Store(name, h)
	return h
}

// leanFor returns the lean path's state for a session that can use it, or nil.
func leanFor(s *session) *leanSession {
	cfg := s.up.cfg.HTTP
	if cfg == nil || s.hc == nil {
		return nil
	}
	l := &leanSession{url: cfg.URL, header: http.Header{}, modern: mcp.IsModernProtocol(s.version)}
	// The order mcp-go sets them in: standard headers, then the transport's own, then
	// the configured ones (which may replace any of them), then the hop headers per call.
	if mcp.RequiresStandardHeaders(s.version) {
		l.header.Set(mcp.HeaderMethod, string(mcp.MethodToolsCall))
		l.setName = true
	}
	l.header.Set("Content-Type", "application/json")
	l.header.Set("Accept", "application/json, text/event-stream")
	if id := s.wire.GetSessionId(); id != "" && !l.modern {
		l.header.Set(transport.HeaderKeySessionID, id)
	}
	if s.version != "" {
		l.header.Set(transport.HeaderKeyProtocolVersion, s.version)
	}
	for k, v := range cfg.Headers {
		l.header.Set(k, v)
		if http.CanonicalHeaderKey(k) == mcp.HeaderName {
			l.setName = false
		}
	}
	if !l.modern {
		return l
	}
	caps, err := json.Marshal(s.up.clientCapabilities())
	if err != nil {
		return nil
	}
	info, err := json.Marshal(mcp.Implementation{Name: "gatehouse", Version: clientVersion})
	if err != nil {
		return nil
	}
	version, _ := json.Marshal(s.version)
	l.metaHead = fmt.Appendf(nil, `%q:%s,%q:%s`, mcp.MetaKeyClientCapabilities, caps, mcp.MetaKeyClientInfo, info)
	l.metaTail = fmt.Appendf(nil, `%q:%s`, mcp.MetaKeyProtocolVersion, version)
	return l
}

// leanCall is one tools/call on the lean path.
type leanCall struct {
	name     string          // the tool's name on the upstream
	args     json.RawMessage // a JSON object, or nil
	token    string          // progress token, or ""
	logLevel string          // the per-request log level, or ""
}

// body is the JSON-RPC request of c with ID id: params in mcp-go's member order (_meta,
// arguments, name), _meta in its order too.
func (l *leanSession) body(c *leanCall, id int64) []byte {
	b := make([]byte, 0, 160+len(l.metaHead)+len(l.metaTail)+len(c.args)+len(c.name)+len(c.token))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/call","params":{`...)
	switch {
	case l.modern:
		b = append(b, `"_meta":{`...)
		b = append(b, l.metaHead...)
		b = append(b, ',')
		if c.logLevel != "" {
			b = appendMember(b, mcp.MetaKeyLogLevel, c.logLevel)
			b = append(b, ',')
		}
		b = append(b, l.metaTail...)
		if c.token != "" {
			b = append(b, ',')
			b = appendMember(b, "progressToken", c.token)
		}
		b = append(b, "},"...)
	case c.token != "":
		b = append(b, `"_meta":{`...)
		b = appendMember(b, "progressToken", c.token)
		b = append(b, "},"...)
	}
	b = appendMember(b, "name", c.name)
	if c.args != nil {
		b = append(b, `,"arguments":`...)
		b = append(b, c.args...)
	}
	return append(b, "}}"...)
}

// appendMember appends "key":"value" with value escaped as encoding/json escapes it.
func appendMember(b []byte, key, value string) []byte {
	b = strconv.AppendQuote(b, key) // keys are the bridge's own ASCII constants
	b = append(b, ':')
	if isPlainJSONString(value) {
		b = append(b, '"')
		b = append(b, value...)
		return append(b, '"')
	}
	v, _ := json.Marshal(value) // a string always encodes
	return append(b, v...)
}

// isPlainJSONString reports whether s encodes as a JSON string by quoting alone, as
// encoding/json writes it (no escapes, no HTML characters).
func isPlainJSONString(s string) bool {
	for i := range len(s) {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// callToolLean sends c on s and records the outcome in x as mcp-go's path does. It
// returns errLeanFallback when the call is mcp-go's to make after all.
func (s *session) callToolLean(ctx context.Context, l *leanSession, c *leanCall, x *exchange) error {
	id := leanIDBase + s.leanIDs.Add(1)
	ctx, span := s.wire.startSpan(ctx, transport.JSONRPCRequest{Method: string(mcp.MethodToolsCall), Params: mcp.CallToolParams{Name: c.name}})
	msg, err := s.postLean(ctx, l, c, id)
	if err != nil && ctx.Err() != nil && !l.modern {
		// Before 2026-07-28 ending the HTTP request does not cancel the call: the server
		// is told, as the wire tells it for mcp-go's requests.
		s.wire.sendCancelled(ctx, mcp.NewRequestId(id))
	}
	if span != nil {
		var resp *transport.JSONRPCResponse
		if err == nil {
			resp = &transport.JSONRPCResponse{Result: msg.Result, Error: msg.Error}
		}
		endSpan(span, resp, err)
	}
	if x != nil {
		x.requests++
		if err == nil {
			x.result, x.rpcErr = msg.Result, msg.Error
		}
	}
	switch {
	case err != nil:
		return err
	case msg.Error != nil:
		return msg.Error.AsError()
	case needsInput(msg.Result):
		if x != nil {
			x.result = nil
		}
		return errLeanFallback
	}
	return nil
}

// needsInput reports whether a tools/call result is a multi round-trip request for input.
func needsInput(result json.RawMessage) bool {
	if !bytes.Contains(result, []byte(`"input_required"`)) {
		return false
	}
	var r struct {
		ResultType mcp.ResultType `json:"resultType"`
	}
	return json.Unmarshal(result, &r) == nil && r.ResultType == mcp.ResultTypeInputRequired
}

// postLean posts the request and reads its response. Errors are those mcp-go's client
// returns for the same failures (transport.Error around them), so callError maps them
// alike.
func (s *session) postLean(ctx context.Context, l *leanSession, c *leanCall, id int64) (*leanMessage, error) {
	// A session closed under the call ends it, as mcp-go's transport ends its requests.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	if err := ctx.Err(); err != nil {
		return nil, transport.NewError(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(l.body(c, id)))
	if err != nil {
		return nil, transport.NewError(fmt.Errorf("failed to create request: %w", err))
	}
	if hop := s.up.hopHeaders(ctx); len(hop) == 0 {
		req.Header = l.headerFor(c.name)
	} else {
		req.Header = l.header.Clone()
		if l.setName {
			if v, ok := mcp.EncodeHeaderValue(c.name); ok {
				req.Header.Set(mcp.HeaderName, v)
			}
		}
		for k, v := range hop {
			req.Header.Set(k, v)
		}
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, s.leanError(fmt.Errorf("failed to send request: %w", err))
	}
	defer func() { cancel(); _ = resp.Body.Close() }()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusAccepted:
	case http.StatusNotFound:
		return nil, transport.NewError(fmt.Errorf("failed to send request: %w", transport.ErrSessionTerminated))
	case http.StatusUnauthorized:
		return nil, transport.NewError(&transport.AuthorizationRequiredError{})
	default:
		body, _ := io.ReadAll(resp.Body)
		if m, err := parseLeanMessage(body); err == nil && !m.isRequest() {
			return m, nil
		}
		return nil, transport.NewError(fmt.Errorf("request failed with status %d: %s", resp.StatusCode, body))
	}
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	switch ct = strings.TrimSpace(ct); {
	case strings.EqualFold(ct, "application/json"):
		body, err := readBody(resp)
		if err != nil {
			return nil, s.leanError(fmt.Errorf("failed to read response: %w", err))
		}
		m, err := parseLeanMessage(body)
		if err != nil {
			return nil, transport.NewError(fmt.Errorf("failed to decode response: %w", err))
		}
		if !m.hasID() {
			return nil, transport.NewError(errors.New("response should contain RPC id"))
		}
		return m, nil
	case strings.EqualFold(ct, "text/event-stream"):
		return s.readLeanStream(ctx, l, bufio.NewReader(resp.Body))
	}
	return nil, transport.NewError(fmt.Errorf("unexpected content type: %s", resp.Header.Get("Content-Type")))
}

// leanError wraps a failure to reach the server: a session closed under the call is
// transport.ErrTransportClosed, as mcp-go reports it.
func (s *session) leanError(err error) error {
	if s.ctx.Err() != nil {
		return transport.NewError(fmt.Errorf("%w: %w", transport.ErrTransportClosed, err))
	}
	return transport.NewError(err)
}

// readBody reads a response body, in one allocation when its length is known.
func readBody(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n < 64<<20 {
		b := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(resp.Body)
}

// readLeanStream reads a call's event stream up to its response: notifications go to the
// session's notification handler, requests are answered, and the first response is the
// call's.
func (s *session) readLeanStream(ctx context.Context, l *leanSession, r *bufio.Reader) (*leanMessage, error) {
	var out *leanMessage
	handle := func(data []byte) bool {
		m, err := parseLeanMessage(data)
		if err != nil {
			s.up.log.Info("failed to unmarshal message (non-fatal)", "err", err, "message_len", len(data))
			return false
		}
		switch {
		case m.isNotification():
			var n mcp.JSONRPCNotification
			if err := json.Unmarshal(data, &n); err != nil {
				s.up.log.Error("failed to unmarshal notification", "err", err)
				return false
			}
			s.up.notification(s, n)
		case m.isRequest():
			var req transport.JSONRPCRequest
			if err := json.Unmarshal(data, &req); err != nil {
				return false
			}
			s.answerLean(ctx, l, req)
		default:
			// The event's data is readSSE's buffer: the message keeps copies.
			m.ID, m.Result = bytes.Clone(m.ID), bytes.Clone(m.Result)
			out = m
			return true
		}
		return false
	}
	var cursor *sseCursor
	if !l.modern {
		cursor = &sseCursor{}
	}
	err := readSSE(r, cursor, handle)
	// Before 2026-07-28 a server may end the stream before the response once it has
	// sent an event ID, and the client resumes it (SEP-1699), as mcp-go does.
	for out == nil && err == nil && ctx.Err() == nil && cursor != nil && cursor.lastEventID != "" {
		var ended bool
		if ended, err = s.resumeLean(ctx, l, cursor, handle); err != nil {
			return nil, transport.NewError(fmt.Errorf("failed to resume the SSE stream for the response: %w", err))
		}
		if !ended {
			break
		}
	}
	switch {
	case out != nil:
		return out, nil
	case ctx.Err() != nil:
		return nil, s.leanError(ctx.Err())
	case err != nil:
		return nil, s.leanError(fmt.Errorf("reading the response stream: %w", err))
	}
	return nil, transport.NewError(errors.New("unexpected nil response"))
}

// resumeLean waits the reconnection time, reopens the stream with a GET carrying
// Last-Event-ID and reads it, as mcp-go's transport does (resumeSSE); ended reports
// whether the server ended this stream too (rather than it breaking off).
func (s *session) resumeLean(ctx context.Context, l *leanSession, cursor *sseCursor, handle func([]byte) bool) (ended bool, err error) {
	delay := time.Second
	if cursor.hasRetry {
		delay = max(cursor.retry, 10*time.Millisecond)
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.url, nil)
	if err != nil {
		return false, err
	}
	req.Header = l.header.Clone()
	req.Header.Del(mcp.HeaderMethod)
	req.Header.Del("Content-Type")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", cursor.lastEventID)
	for k, v := range s.up.hopHeaders(ctx) {
		req.Header.Set(k, v)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return false, err
	}
	defer func() { cancel(); _ = resp.Body.Close() }()
	switch ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); {
	case resp.StatusCode == http.StatusNotFound:
		return false, transport.ErrSessionTerminated
	case resp.StatusCode != http.StatusOK:
		return false, fmt.Errorf("unexpected status %d", resp.StatusCode)
	case !strings.EqualFold(strings.TrimSpace(ct), "text/event-stream"):
		return false, fmt.Errorf("unexpected content type %q", resp.Header.Get("Content-Type"))
	}
	if err := readSSE(bufio.NewReader(resp.Body), cursor, handle); err != nil {
		return false, nil // a stream that broke off is not resumed again, as in mcp-go
	}
	return true, nil
}

// answerLean answers a request the server sent on a call's stream with the handler
// mcp-go's transport would call, and posts the answer as it would (streamable_http.go's
// handleIncomingRequest and sendResponseToServer).
func (s *session) answerLean(ctx context.Context, l *leanSession, req transport.JSONRPCRequest) {
	rctx, cancel := context.WithTimeout(ctx, leanServerRequestTimeout)
	defer cancel()
	resp, err := s.wire.handle(rctx, req)
	if err != nil {
		code, msg := mcp.INTERNAL_ERROR, err.Error()
		switch {
		case errors.Is(err, context.Canceled):
			code, msg = mcp.REQUEST_INTERRUPTED, "request was cancelled"
		case errors.Is(err, context.DeadlineExceeded):
			code, msg = mcp.REQUEST_INTERRUPTED, "request timed out"
		case req.Method == string(mcp.MethodSamplingCreateMessage):
			msg = "sampling request failed: " + msg
		}
		resp = transport.NewJSONRPCErrorResponse(req.ID, code, msg, nil)
	}
	if resp == nil {
		return
	}
	body, err := json.Marshal(resp)
	if err != nil {
		s.up.log.Error("failed to marshal response", "err", err)
		return
	}
	hr, err := http.NewRequestWithContext(rctx, http.MethodPost, l.url, bytes.NewReader(body))
	if err != nil {
		return
	}
	hr.Header = l.header.Clone()
	hr.Header.Del(mcp.HeaderMethod) // a response carries no method
	for k, v := range s.up.hopHeaders(rctx) {
		hr.Header.Set(k, v)
	}
	r, err := s.hc.Do(hr)
	if err != nil {
		s.up.log.Error("failed to send response to server", "err", err)
		return
	}
	defer func() { _ = r.Body.Close() }()
	if r.StatusCode != http.StatusOK && r.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(r.Body)
		s.up.log.Error("server rejected response", "status", r.StatusCode, "body_len", len(b))
	}
}

// leanMessage is one JSON-RPC message as the lean path reads it: which kind it is, and a
// response's result or error.
type leanMessage struct {
	ID     json.RawMessage          `json:"id"`
	Method string                   `json:"method"`
	Result json.RawMessage          `json:"result"`
	Error  *mcp.JSONRPCErrorDetails `json:"error"`
}

func (m *leanMessage) hasID() bool { return len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null")) }

// isNotification: a method and no ID.
func (m *leanMessage) isNotification() bool { return !m.hasID() && m.Method != "" }

// isRequest: a method and an ID.
func (m *leanMessage) isRequest() bool { return m.hasID() && m.Method != "" }

// parseLeanMessage decodes one JSON-RPC message; it must be a JSON object. The message's
// ID and Result may share data's bytes.
func parseLeanMessage(data []byte) (*leanMessage, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, errors.New("a JSON-RPC message must be a JSON object")
	}
	if m, ok := scanLeanResult(data); ok {
		return m, nil
	}
	m := &leanMessage{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, err
	}
	return m, nil
}

// sseCursor is what resuming a stream takes (SEP-1699, before 2026-07-28): the ID of the
// last event dispatched and the reconnection time the server asked for.
type sseCursor struct {
	lastEventID string
	retry       time.Duration
	hasRetry    bool
}

// readSSE reads server-sent events from r, calling fn with each event's data (its data
// lines joined by "\n", as the SSE rules say), until fn returns true, the stream ends
// (nil) or a read fails. An event cut short by the end of the stream is dispatched, as
// mcp-go does. With a cursor, event IDs (once their event is dispatched, data or not)
// and retry fields are recorded in it; event names are not needed.
func readSSE(r *bufio.Reader, cursor *sseCursor, fn func(data []byte) bool) error {
	var data []byte
	var id []byte
	hasID := false
	for {
		line, err := readLine(r)
		if err != nil {
			if errors.Is(err, io.EOF) {
				if len(data) > 0 {
					fn(data)
				}
				return nil
			}
			return err
		}
		if len(line) == 0 {
			if cursor != nil && hasID {
				cursor.lastEventID = string(id)
			}
			hasID = false
			if len(data) > 0 && fn(data) {
				return nil
			}
			data = data[:0]
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v, _ = bytes.CutPrefix(v, []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		} else if v, ok := bytes.CutPrefix(line, []byte("id:")); ok {
			if v, _ = bytes.CutPrefix(v, []byte(" ")); bytes.IndexByte(v, 0) < 0 { // an ID with NUL is ignored
				id, hasID = append(id[:0], v...), true
			}
		} else if v, ok := bytes.CutPrefix(line, []byte("retry:")); ok && cursor != nil {
			v, _ = bytes.CutPrefix(v, []byte(" "))
			if ms, err := strconv.ParseUint(string(v), 10, 31); err == nil && len(v) > 0 && len(bytes.Trim(v, "0123456789")) == 0 {
				cursor.retry, cursor.hasRetry = time.Duration(ms)*time.Millisecond, true
			}
		}
	}
}

// readLine returns the next line of r without its line ending ("\n", "\r\n"). The line is
// valid until the next read. At the end of the stream a last line without an ending is
// returned before io.EOF.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = r.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil && (err != io.EOF || len(line) == 0) {
		return nil, err
	}
	line = bytes.TrimRight(line, "\r\n")
	return line, nil
}

// scanLeanResult reads the common answer to a call — a valid JSON object whose members
// are a result, a non-null id and anything leanMessage does not hold (jsonrpc), each
// named exactly, without escapes — into a leanMessage that encoding/json would decode
// alike, its ID and Result sharing data's bytes. ok is false for anything else (an
// error, a method, a null id or result, a member name that only matches one of
// leanMessage's case-insensitively or holds an escape, invalid JSON): the caller
// decodes it with encoding/json. It saves that decoder's second pass over the body and
// its allocations.
func scanLeanResult(data []byte) (_ *leanMessage, ok bool) {
	if !json.Valid(data) {
		return nil, false
	}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	var m leanMessage
	for i = skipSpace(data, i+1); i < len(data) && data[i] != '}'; {
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		end := skipString(data, i)
		key := data[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, false
		}
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // the colon
		start := i
		i = skipValue(data, i)
		v := data[start:i]
		i = skipSpace(data, i)
		switch k := string(key); {
		case k == "id":
			m.ID = v
		case k == "result":
			m.Result = v
		case strings.EqualFold(k, "id"), strings.EqualFold(k, "result"), strings.EqualFold(k, "method"), strings.EqualFold(k, "error"):
			return nil, false // a method, an error, or a name encoding/json matches case-insensitively
		}
	}
	if !m.hasID() || m.Result == nil || bytes.Equal(m.Result, []byte("null")) {
		return nil, false
	}
	return &m, true
}

// skipSpace returns the index of the first byte at or after i that is not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the JSON string starting at b[i] ('"'). b is
// valid JSON.
func skipString(b []byte, i int) int {
	for i++; i < len(b); {
		switch b[i] {
		case '\\':
			i += 2
		case '"':
			return i + 1
		default:
			i++
		}
	}
	return i
}

// skipValue returns the index just past the JSON value starting at b[i]. b is valid JSON.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) { // a number, true, false or null
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

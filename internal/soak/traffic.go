package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Faces are the kinds of call the traffic mixes, in the order of the mix.
var Faces = []string{"rpc", "batch", "ws", "mcp", "delegate", "a2a", "session"}

// sha256Hello is what the agent's sha256 operator answers for "hello".
const sha256Hello = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"

// caller makes the calls of every face on the replicas.
type caller struct {
	p      *Platform
	client *http.Client
	budget time.Duration
	bound  time.Duration
	// revoked is set once the victim token is revoked (its calls may then be refused).
	ws  []*wsConn
	mcp []*mcpSession
}

func newCaller(p *Platform, budget, bound time.Duration) *caller {
	tr := &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second}
	c := &caller{p: p, client: &http.Client{Transport: tr}, budget: budget, bound: bound}
	for range p.replicas {
		c.ws = append(c.ws, &wsConn{pending: map[int64]chan wsReply{}})
		c.mcp = append(c.mcp, &mcpSession{})
	}
	return c
}

// call makes one call of face on replica i and records how it ended.
func (c *caller) call(face string, i int, seq int64) Result {
	r := Result{Face: face, Replica: i, Start: time.Now(), Budget: c.budget}
	ctx, cancel := context.WithTimeout(context.Background(), c.budget+c.bound)
	defer cancel()
	rep := c.p.replicas[i]
	a, b := int(seq%1000), int(seq%7)
	switch face {
	case "rpc":
		method := "subtract"
		if seq%2 == 1 {
			method = "calc.subtract"
		}
		tok := c.p.Token
		if seq%10 == 3 {
			tok = c.p.Victim
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"minuend":%d,"subtrahend":%d}}`, seq, method, a, b)
		c.jsonRPC(ctx, &r, rep.base()+"/rpc", tok, body, nil, func(res json.RawMessage) string {
			return want(res, strconv.Itoa(a-b))
		})
	case "batch":
		body := fmt.Sprintf(`[{"jsonrpc":"2.0","id":1,"method":"subtract","params":{"minuend":%d,"subtrahend":%d}},`+
			`{"jsonrpc":"2.0","id":2,"method":"sum","params":[%d,%d,1]},`+
			`{"jsonrpc":"2.0","id":3,"method":"calc.subtract","params":{"minuend":%d,"subtrahend":%d}}]`, a, b, a, b, b, a)
		c.batch(ctx, &r, rep.base()+"/rpc", body, map[int]string{1: strconv.Itoa(a - b), 2: strconv.Itoa(a + b + 1), 3: strconv.Itoa(b - a)})
	case "ws":
		c.ws[i].call(ctx, c, &r, rep, seq, a, b)
	case "mcp":
		c.mcpCall(ctx, &r, i, seq)
	case "delegate":
		c.delegate(ctx, &r, rep, seq)
	case "a2a":
		c.a2a(ctx, &r, rep, seq, a, b)
	case "session":
		c.session(ctx, &r, rep, seq, a, b)
	default:
		r.Wrong = "unknown face " + face
	}
	r.Took = time.Since(r.Start)
	if ctx.Err() != nil && r.Transport != nil {
		r.TimedOut = true
	}
	return r
}

// want compares a JSON result with the expected JSON text.
func want(res json.RawMessage, expect string) string {
	if strings.TrimSpace(string(res)) != expect {
		return fmt.Sprintf("result %s, want %s", clip(res), expect)
	}
	return ""
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// post sends a body with the run's headers (deadline, bearer) and returns the response.
func (c *caller) post(ctx context.Context, r *Result, url, tok, body string, hdr map[string]string) *http.Response {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		r.Wrong = err.Error()
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Deadline-Ms", strconv.FormatInt(r.Start.Add(r.Budget).UnixMilli(), 10))
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		r.Transport = err
		return nil
	}
	return resp
}

// readAll reads a response body; a failure is a transport error.
func readAll(r *Result, resp *http.Response) []byte {
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.Transport = err
		return nil
	}
	return b
}

// typedHTTP records a refusal an HTTP status and challenge make explicit (401/403 with
// WWW-Authenticate, 429/503 with Retry-After); anything else is untyped.
func typedHTTP(r *Result, resp *http.Response, body []byte) {
	var rep rpcReply
	if json.Unmarshal(body, &rep) == nil && rep.Error != nil && rep.Error.Code != 0 {
		r.Code = rep.Error.Code
		r.Msg = rep.Error.Message + " " + clip(rep.Error.Data)
		return
	}
	switch {
	case (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && resp.Header.Get("WWW-Authenticate") != "":
		r.Name = "http_" + strconv.Itoa(resp.StatusCode)
	case (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) && resp.Header.Get("Retry-After") != "":
		r.Name = "http_" + strconv.Itoa(resp.StatusCode)
	default:
		r.Wrong = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, clip(body))
	}
}

// jsonRPC makes a single call (with the extra headers, if any) and checks its result.
func (c *caller) jsonRPC(ctx context.Context, r *Result, url, tok, body string, headers map[string]string, check func(json.RawMessage) string) {
	resp := c.post(ctx, r, url, tok, body, headers) //nolint:bodyclose // closed by readAll or sseEvents
	if resp == nil {
		return
	}
	b := readAll(r, resp)
	if r.Transport != nil {
		return
	}
	if resp.StatusCode != http.StatusOK {
		typedHTTP(r, resp, b)
		return
	}
	var rep rpcReply
	if err := json.Unmarshal(b, &rep); err != nil {
		r.Wrong = "not a JSON-RPC response: " + clip(b)
		return
	}
	fromReply(r, rep, check)
}

func fromReply(r *Result, rep rpcReply, check func(json.RawMessage) string) {
	switch {
	case rep.Error != nil && rep.Error.Code != 0:
		r.Code = rep.Error.Code
		r.Msg = rep.Error.Message + " " + clip(rep.Error.Data)
	case rep.Error != nil:
		r.Wrong = "error without a code: " + rep.Error.Message
	case rep.Result == nil:
		r.Wrong = "neither result nor error"
	default:
		r.Wrong = check(rep.Result)
	}
}

// batch sends a batch and checks each member by id.
func (c *caller) batch(ctx context.Context, r *Result, url, body string, expect map[int]string) {
	resp := c.post(ctx, r, url, c.p.Token, body, nil) //nolint:bodyclose // closed by readAll or sseEvents
	if resp == nil {
		return
	}
	b := readAll(r, resp)
	if r.Transport != nil {
		return
	}
	if resp.StatusCode != http.StatusOK {
		typedHTTP(r, resp, b)
		return
	}
	var reps []rpcReply
	if err := json.Unmarshal(b, &reps); err != nil {
		// A batch refused as a whole answers one error object.
		var rep rpcReply
		if json.Unmarshal(b, &rep) == nil && rep.Error != nil && rep.Error.Code != 0 {
			r.Code = rep.Error.Code
			return
		}
		r.Wrong = "not a batch response: " + clip(b)
		return
	}
	if len(reps) != len(expect) {
		r.Wrong = fmt.Sprintf("%d members answered, want %d", len(reps), len(expect))
		return
	}
	for _, m := range reps {
		id, _ := strconv.Atoi(string(m.ID))
		exp, ok := expect[id]
		if !ok {
			r.Wrong = "a member with id " + string(m.ID)
			return
		}
		var one Result
		fromReply(&one, m, func(res json.RawMessage) string { return want(res, exp) })
		if one.Wrong != "" {
			r.Wrong = "member " + string(m.ID) + ": " + one.Wrong
			return
		}
		if one.Code != 0 && r.Code == 0 {
			r.Code = one.Code
		}
	}
}

// sseEvents reads an event stream and calls each with (event, data) until it returns true
// or the stream ends.
func sseEvents(r *Result, resp *http.Response, each func(event, data string) bool) bool {
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var event string
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 || event != "" {
				if each(event, data.String()) {
					return true
				}
			}
			event = ""
			data.Reset()
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(line[len("data:"):], " "))
		}
	}
	if err := sc.Err(); err != nil {
		r.Transport = err
	} else {
		r.Transport = io.ErrUnexpectedEOF
	}
	return false
}

// delegate runs nekte.delegate of the agent's sha256 operator and reads its stream.
func (c *caller) delegate(ctx context.Context, r *Result, rep *replica, seq int64) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"nekte.delegate","params":{"task":{"id":"soak-%d-%d","desc":"hash","timeout_ms":%d,`+
		`"budget":{"max_tokens":500,"detail_level":"compact"},"cap":"agent.sha256","in":{"text":"hello"}}}}`,
		seq, time.Now().UnixNano(), seq, c.budget.Milliseconds())
	resp := c.post(ctx, r, rep.base()+"/rpc", c.p.Token, body, map[string]string{"Accept": "text/event-stream"}) //nolint:bodyclose // closed by readAll or sseEvents
	if resp == nil {
		return
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b := readAll(r, resp)
		if r.Transport == nil {
			typedHTTP(r, resp, b)
			if r.Wrong == "" && r.Code == 0 && r.Name == "" {
				r.Wrong = "delegate answered " + clip(b)
			}
		}
		return
	}
	sseEvents(r, resp, func(event, data string) bool {
		switch event {
		case "complete":
			if !strings.Contains(data, sha256Hello) {
				r.Wrong = "complete without the hash: " + clip([]byte(data))
			}
			return true
		case "error", "cancelled":
			var e struct {
				Code int `json:"code"`
			}
			_ = json.Unmarshal([]byte(data), &e)
			r.Msg = clip([]byte(data))
			if e.Code == 0 {
				r.Name = "task_" + event
			}
			r.Code = e.Code
			return true
		}
		return false
	})
}

// a2a sends an A2A 1.0 SendMessage running the subtract skill.
func (c *caller) a2a(ctx context.Context, r *Result, rep *replica, seq int64, a, b int) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":{"messageId":"m%d-%d","role":"ROLE_USER",`+
		`"parts":[{"data":{"minuend":%d,"subtrahend":%d}}],"metadata":{"skill":"subtract"}}}}`, seq, time.Now().UnixNano(), seq, a, b)
	c.jsonRPC(ctx, r, rep.base()+"/a2a", c.p.A2A[int(seq)%len(c.p.A2A)], body, map[string]string{"A2A-Version": "1.0"}, func(res json.RawMessage) string {
		s := string(res)
		switch {
		case strings.Contains(s, "TASK_STATE_COMPLETED"):
			if !strings.Contains(s, strconv.Itoa(a-b)) {
				return "completed without the difference: " + clip(res)
			}
			return ""
		case strings.Contains(s, "TASK_STATE_FAILED"), strings.Contains(s, "TASK_STATE_REJECTED"):
			r.Name, r.Msg = "a2a_task_failed", clip(res)
			return ""
		case strings.Contains(s, "TASK_STATE_SUBMITTED"), strings.Contains(s, "TASK_STATE_WORKING"):
			// A task answered as it stands (A2A: the client polls GetTask).
			r.Name, r.Msg = "a2a_task_not_ended", clip(res)
			return ""
		}
		return "task neither completed nor failed: " + clip(res)
	})
}

// session runs one chat.start on the calc route over HTTP+SSE.
func (c *caller) session(ctx context.Context, r *Result, rep *replica, seq int64, a, b int) {
	body := fmt.Sprintf(`{"id":"rpc_%d","type":"chat.start","payload":{"message":"calc","arguments":{"minuend":%d,"subtrahend":%d}}}`, seq, a, b)
	resp := c.post(ctx, r, rep.base()+"/session/chat?route=calc", c.p.Token, body, nil) //nolint:bodyclose // closed by readAll or sseEvents
	if resp == nil {
		return
	}
	if resp.StatusCode != http.StatusOK {
		raw := readAll(r, resp)
		if r.Transport == nil {
			typedHTTP(r, resp, raw)
		}
		return
	}
	sseEvents(r, resp, func(event, data string) bool {
		var m struct {
			Type    string `json:"type"`
			Payload struct {
				Text    string `json:"text"`
				ErrorID string `json:"errorId"`
				Code    int    `json:"code"`
			} `json:"payload"`
		}
		if json.Unmarshal([]byte(data), &m) != nil {
			return false
		}
		switch m.Type {
		case "chat.done":
			if m.Payload.Text != strconv.Itoa(a-b) {
				r.Wrong = "chat.done " + clip([]byte(data))
			}
			return true
		case "chat.error", "error":
			r.Name, r.Code, r.Msg = m.Payload.ErrorID, m.Payload.Code, clip([]byte(data))
			if r.Name == "" && r.Code == 0 {
				r.Wrong = "untyped " + clip([]byte(data))
			}
			return true
		}
		return false
	})
}

// mcpSession is one MCP session on a replica's /mcp, opened on first use and again when the
// replica forgets it.
type mcpSession struct {
	mu sync.Mutex
	id string
}

// mcpPost posts one MCP message and returns the JSON-RPC response in it (JSON or SSE).
func (c *caller) mcpPost(ctx context.Context, r *Result, url, sid, body string) (*http.Response, []byte) {
	hdr := map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
	if sid != "" {
		hdr["Mcp-Session-Id"] = sid
	}
	resp := c.post(ctx, r, url, c.p.Token, body, hdr)
	if resp == nil {
		return nil, nil
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var out []byte
		sseEvents(r, resp, func(_, data string) bool {
			if strings.Contains(data, `"result"`) || strings.Contains(data, `"error"`) {
				if !strings.Contains(data, `"method"`) {
					out = []byte(data)
					return true
				}
			}
			return false
		})
		if out != nil {
			r.Transport = nil
		}
		return resp, out
	}
	return resp, readAll(r, resp)
}

// mcpCall calls the demo MCP server's test_simple_text tool through the MCP face.
func (c *caller) mcpCall(ctx context.Context, r *Result, i int, seq int64) {
	s := c.mcp[i]
	url := c.p.replicas[i].base() + "/mcp"
	s.mu.Lock()
	sid := s.id
	if sid == "" {
		resp, b := c.mcpPost(ctx, r, url, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"soak","version":"1"}}}`) //nolint:bodyclose // closed by readAll or sseEvents
		if resp == nil || r.Transport != nil {
			s.mu.Unlock()
			return
		}
		if resp.StatusCode != http.StatusOK {
			typedHTTP(r, resp, b)
			s.mu.Unlock()
			return
		}
		sid = resp.Header.Get("Mcp-Session-Id")
		if sid == "" {
			r.Wrong = "initialize without a session id: " + clip(b)
			s.mu.Unlock()
			return
		}
		resp, b = c.mcpPost(ctx, r, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`) //nolint:bodyclose // mcpPost closes it
		if resp == nil || r.Transport != nil {
			s.mu.Unlock()
			return
		}
		if resp.StatusCode/100 != 2 {
			typedHTTP(r, resp, b)
			s.mu.Unlock()
			return
		}
		s.id = sid
	}
	s.mu.Unlock()
	resp, b := c.mcpPost(ctx, r, url, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`, seq)) //nolint:bodyclose // mcpPost closes it
	if resp == nil || r.Transport != nil {
		return
	}
	if resp.StatusCode == http.StatusNotFound {
		// The session is gone (MCP: the client opens a new one): a typed end.
		s.mu.Lock()
		if s.id == sid {
			s.id = ""
		}
		s.mu.Unlock()
		r.Name = "mcp_session_gone"
		return
	}
	if resp.StatusCode != http.StatusOK {
		typedHTTP(r, resp, b)
		return
	}
	var rep rpcReply
	if err := json.Unmarshal(b, &rep); err != nil {
		r.Wrong = "not a JSON-RPC response: " + clip(b)
		return
	}
	fromReply(r, rep, func(res json.RawMessage) string {
		var tr struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(res, &tr); err != nil {
			return "tool result " + clip(res)
		}
		if tr.IsError {
			r.Name = "tool_is_error"
			return ""
		}
		if len(tr.Content) != 1 || !strings.Contains(tr.Content[0].Text, "simple text response") {
			return "tool result " + clip(res)
		}
		return ""
	})
}

// wsConn is one WebSocket connection to a replica's /ws, opened on first use and again after
// it broke; calls on it are matched to their responses by id.
type wsConn struct {
	mu      sync.Mutex
	conn    *websocket.Conn
	pending map[int64]chan wsReply
	wmu     sync.Mutex
}

type wsReply struct {
	rep rpcReply
	err error
}

func (w *wsConn) get(ctx context.Context, c *caller, rep *replica) (*websocket.Conn, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn != nil {
		return w.conn, nil
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+c.p.Token)
	d := websocket.Dialer{HandshakeTimeout: c.budget}
	conn, resp, err := d.DialContext(ctx, "ws://"+rep.boundary+"/ws", h)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	w.conn = conn
	go w.read(conn)
	return conn, nil
}

// read dispatches responses until the connection breaks, then fails every pending call.
func (w *wsConn) read(conn *websocket.Conn) {
	for {
		_, b, err := conn.ReadMessage()
		if err != nil {
			w.mu.Lock()
			if w.conn == conn {
				w.conn = nil
			}
			for id, ch := range w.pending {
				ch <- wsReply{err: err}
				delete(w.pending, id)
			}
			w.mu.Unlock()
			_ = conn.Close()
			return
		}
		var rep rpcReply
		if json.Unmarshal(b, &rep) != nil {
			continue
		}
		id, err := strconv.ParseInt(string(rep.ID), 10, 64)
		if err != nil {
			continue // a notification
		}
		w.mu.Lock()
		ch, ok := w.pending[id]
		delete(w.pending, id)
		w.mu.Unlock()
		if ok {
			ch <- wsReply{rep: rep}
		}
	}
}

func (w *wsConn) call(ctx context.Context, c *caller, r *Result, rep *replica, seq int64, a, b int) {
	conn, err := w.get(ctx, c, rep)
	if err != nil {
		r.Transport = err
		return
	}
	ch := make(chan wsReply, 1)
	w.mu.Lock()
	w.pending[seq] = ch
	w.mu.Unlock()
	method := "subtract"
	if seq%2 == 1 {
		method = "calc.subtract"
	}
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"minuend":%d,"subtrahend":%d,"deadline_ms":%d}}`,
		seq, method, a, b, r.Start.Add(r.Budget).UnixMilli())
	w.wmu.Lock()
	_ = conn.SetWriteDeadline(time.Now().Add(c.budget))
	err = conn.WriteMessage(websocket.TextMessage, []byte(msg))
	w.wmu.Unlock()
	if err != nil {
		w.mu.Lock()
		delete(w.pending, seq)
		w.mu.Unlock()
		_ = conn.Close()
		r.Transport = err
		return
	}
	select {
	case got := <-ch:
		if got.err != nil {
			r.Transport = got.err
			return
		}
		fromReply(r, got.rep, func(res json.RawMessage) string { return want(res, strconv.Itoa(a-b)) })
	case <-ctx.Done():
		w.mu.Lock()
		delete(w.pending, seq)
		w.mu.Unlock()
		r.Transport = ctx.Err()
	}
}

// close closes every WebSocket connection.
func (c *caller) close() {
	for _, w := range c.ws {
		w.mu.Lock()
		if w.conn != nil {
			_ = w.conn.Close()
		}
		w.mu.Unlock()
	}
	c.client.CloseIdleConnections()
}

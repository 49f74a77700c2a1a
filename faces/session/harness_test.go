package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	wire "github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/resilience"
	"github.com/gatehouse-dev/gatehouse/routing/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// testGateway is a gateway of one configuration: its pipeline dispatches by method to the
// test's targets, and its authenticator knows the bearer tokens of tokens.
type testGateway struct {
	cfg      *Config
	pipe     *faces.Pipeline
	tokens   map[string]gateway.Principal
	draining atomic.Bool
}

func (g *testGateway) Acquire() Runtime { return testRuntime{g} }
func (g *testGateway) Draining() bool   { return g.draining.Load() }

type testRuntime struct{ g *testGateway }

func (r testRuntime) Pipeline() *faces.Pipeline            { return r.g.pipe }
func (r testRuntime) Authenticator() gateway.Authenticator { return r }
func (r testRuntime) Release()                             {}
func (r testRuntime) Session() *Config                     { return r.g.cfg }

func (r testRuntime) Authenticate(_ context.Context, c gateway.Credentials) (gateway.Principal, error) {
	if c.Bearer == "" {
		return gateway.Principal{Subject: "anonymous", Anonymous: true}, nil
	}
	if p, ok := r.g.tokens[c.Bearer]; ok {
		return p, nil
	}
	return gateway.Principal{}, gateway.NewError(schemas.CodeAuthentication).With("reason", "invalid")
}

// scriptTarget is a session target whose stream plays the frames its script names (the
// chat.start message): every stream it opens is counted, and closed streams are counted,
// so a test can tell that none is left open.
type scriptTarget struct {
	opened, closed atomic.Int64
	cancelled      chan string // the message of a slow request whose context was cancelled
}

var scripts = map[string][]string{
	"ok": {
		`{"type":"chat.event","payload":{"type":"status","status":"thinking"}}`,
		`{"type":"chat.event","payload":{"type":"reasoning","text":"hmm"}}`,
		`{"type":"chat.event","payload":{"type":"tool-call","id":"c1","name":"search","args":{"q":"x"}}}`,
		`{"type":"chat.event","payload":{"type":"tool-output","id":"c1","output":"partial"}}`,
		`{"type":"chat.event","payload":{"type":"tool-result","id":"c1","success":true,"result":{"n":1}}}`,
		`{"type":"chat.event","payload":{"type":"text-delta","text":"hel"}}`,
		`{"type":"chat.event","payload":{"type":"text-delta","text":"lo"}}`,
		`{"type":"chat.event","payload":{"type":"usage","inputTokens":3,"outputTokens":2,"cachedTokens":1}}`,
		`{"type":"chat.event","payload":{"type":"checklist","groupId":"g","title":"Plan","items":[{"text":"a","done":true}]}}`,
		`{"type":"chat.event","payload":{"type":"from-the-future","extra":{"kept":true}}}`,
		`{"type":"chat.done","payload":{"text":"hello","usage":{"inputTokens":3,"outputTokens":2},"extra":"passed"}}`,
	},
	"tool-error": {
		`{"type":"chat.event","payload":{"type":"tool-call","id":"c1","name":"x","args":{}}}`,
		`{"type":"chat.event","payload":{"type":"tool-result","id":"c1","success":false,"error":{"code":"E","message":"no"}}}`,
		`{"type":"chat.error","payload":{"errorId":"model_failed","message":"the model gave up","code":1000}}`,
	},
	"broken": {
		`{"type":"chat.event","payload":{"type":"text-delta","text":"a"}}`,
		`{"type":"chat.event","payload":{"type":"tool-output","id":"nope","output":"x"}}`,
		`{"type":"chat.done","payload":{"text":"never"}}`,
	},
	"no-terminal": {`{"type":"chat.event","payload":{"type":"text-delta","text":"a"}}`},
	"bad-frame":   {`{"type":"chat.started","payload":{}}`},
	"not-json":    {`{"type":`},
}

func (t *scriptTarget) Name() string { return "script" }

func (t *scriptTarget) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	var p wire.StartPayload
	if err := json.Unmarshal(call.Params, &p); err != nil {
		return nil, gateway.NewError(schemas.CodeInvalidParams)
	}
	switch {
	case p.Message == "fail":
		return nil, gateway.Errorf(schemas.CodeUnavailable, "backend down").With("backend", "script")
	case p.Message == "stream-fail":
		t.opened.Add(1)
		return &gateway.Result{Stream: &frameStream{t: t, frames: scripts["ok"][:2], fail: true}}, nil
	case strings.HasPrefix(p.Message, "slow"):
		t.opened.Add(1)
		return &gateway.Result{Stream: &frameStream{t: t, frames: scripts["ok"][:1], block: p.Message, cancelled: t.cancelled}}, nil
	case strings.HasPrefix(p.Message, "sleep:"):
		d, _ := time.ParseDuration(strings.TrimPrefix(p.Message, "sleep:"))
		t.opened.Add(1)
		return &gateway.Result{Stream: &frameStream{t: t, frames: scripts["ok"], delay: d}}, nil
	}
	if n, ok := strings.CutPrefix(p.Message, "events:"); ok {
		t.opened.Add(1)
		return &gateway.Result{Stream: &frameStream{t: t, frames: eventFrames(n)}}, nil
	}
	frames, ok := scripts[p.Message]
	if !ok {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "no script %q", p.Message)
	}
	t.opened.Add(1)
	return &gateway.Result{Stream: &frameStream{t: t, frames: frames}}, nil
}

var (
	eventFramesMu sync.Mutex
	eventFramesOf = map[string][]string{}
)

// eventFrames returns n text-delta events and a chat.done (n as the decimal text).
func eventFrames(n string) []string {
	eventFramesMu.Lock()
	defer eventFramesMu.Unlock()
	if f, ok := eventFramesOf[n]; ok {
		return f
	}
	var count int
	_, _ = fmt.Sscan(n, &count)
	f := make([]string, 0, count+1)
	for range count {
		f = append(f, `{"type":"chat.event","payload":{"type":"text-delta","text":"a token of text"}}`)
	}
	f = append(f, `{"type":"chat.done","payload":{"text":"done","usage":{"inputTokens":1,"outputTokens":1}}}`)
	eventFramesOf[n] = f
	return f
}

// frameStream plays frames, then blocks (block) until its context ends, or fails (fail).
type frameStream struct {
	t         *scriptTarget
	frames    []string
	i         int
	fail      bool
	block     string
	delay     time.Duration
	cancelled chan string
	closeOnce sync.Once
}

func (s *frameStream) Recv(ctx context.Context) ([]byte, error) {
	if s.i < len(s.frames) {
		if s.delay > 0 {
			select {
			case <-time.After(s.delay):
			case <-ctx.Done():
				return nil, gateway.AsError(ctx.Err())
			}
		}
		s.i++
		return []byte(s.frames[s.i-1]), nil
	}
	switch {
	case s.fail:
		return nil, gateway.Errorf(schemas.CodeUnavailable, "the stream broke")
	case s.block != "":
		<-ctx.Done()
		if s.cancelled != nil {
			s.cancelled <- s.block
		}
		return nil, gateway.AsError(ctx.Err())
	}
	return nil, io.EOF
}

func (s *frameStream) Close() error {
	s.closeOnce.Do(func() { s.t.closed.Add(1) })
	return nil
}

// toolTarget is an ordinary method (a capability route's): it reports progress and
// answers an MCP tool result, or fails for message "fail".
func toolHandler(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	var p struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(call.Params, &p)
	if p.Message == "fail" {
		return nil, gateway.Errorf(schemas.CodeToolFailed, "the tool failed")
	}
	if sink := gateway.ProgressFrom(ctx); sink != nil {
		total := 2.0
		sink(gateway.Progress{Progress: 1, Total: &total, Message: "half"})
		sink(gateway.Progress{Progress: 2, Total: &total})
	}
	if p.Message == "plain" {
		return gateway.NewResult([]byte(`{"sum":3}`)), nil
	}
	out, _ := json.Marshal(map[string]any{"content": []map[string]any{{"type": "text", "text": "echo: " + p.Message}}})
	return gateway.NewResult(out), nil
}

type env struct {
	t      testing.TB
	face   *Face
	gw     *testGateway
	srv    *httptest.Server
	target *scriptTarget
}

// newEnv starts the face with routes "script" (a session target) and "tool" (a capability
// route), adjusted by tweak.
func newEnv(t testing.TB, tweak func(*Config)) *env {
	t.Helper()
	cfg := Config{Routes: []sessionrpc.RouteConfig{
		{Name: "script", Upstream: &sessionrpc.UpstreamConfig{URL: "ws://127.0.0.1:1/session"}}, // served by scriptTarget
		{Name: "tool", Capability: &sessionrpc.CapabilityConfig{Method: "tool.echo"}},
	}}
	if tweak != nil {
		tweak(&cfg)
	}
	cfg = cfg.WithDefaults(1 << 20)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	target := &scriptTarget{cancelled: make(chan string, 64)}
	gw := &testGateway{cfg: &cfg, tokens: map[string]gateway.Principal{
		"alice": {Subject: "alice"},
		"bob":   {Subject: "bob"},
	}}
	gw.pipe = &faces.Pipeline{
		Limits:            jsonrpc.Limits{MaxDepth: 32, MaxStringBytes: 1 << 16, MaxBatch: 10},
		MaxBodyBytes:      1 << 20,
		MaxCollectedBytes: 1 << 20,
		Deadline:          resilience.DeadlineConfig{Default: 30 * time.Second, Max: 5 * time.Minute},
		Now:               time.Now,
		Log:               slog.New(slog.DiscardHandler),
		Handler: func(ctx context.Context, c *gateway.Call) (*gateway.Result, error) {
			switch c.Method {
			case "session.script":
				return target.Invoke(ctx, c)
			case "tool.echo":
				return toolHandler(ctx, c)
			}
			return nil, gateway.NewError(schemas.CodeMethodNotFound)
		},
	}
	f := New(gw, slog.New(slog.DiscardHandler))
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, f)
	mux.HandleFunc("POST "+PathChat, f.ServeChat)
	mux.HandleFunc("POST "+PathAbort, f.ServeAbort)
	mux.HandleFunc("POST "+PathTask, f.ServeTask)
	mux.HandleFunc("POST "+PathStatus, f.ServeStatus)
	srv := httptest.NewServer(mux)
	e := &env{t: t, face: f, gw: gw, srv: srv, target: target}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := f.Drain(ctx); err != nil {
			t.Errorf("drain: %v", err)
		}
		srv.Close()
		e.waitSettled()
	})
	return e
}

// waitSettled waits for every accepted request to have ended and every stream a target
// opened to be closed.
func (e *env) waitSettled() {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if e.face.Pending() == 0 && e.target.opened.Load() == e.target.closed.Load() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.t.Errorf("not settled: %d requests pending, %d of %d streams closed", e.face.Pending(), e.target.closed.Load(), e.target.opened.Load())
}

// msg is one message a client received.
type msg struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

func (m msg) field(name string) any {
	var v map[string]any
	_ = json.Unmarshal(m.Payload, &v)
	return v[name]
}

// client is one session client over either transport: send writes an envelope, and every
// message the gateway sends back (over the WebSocket, an event stream, or an HTTP answer)
// arrives on msgs.
type client interface {
	send(id, typ string, payload any)
	msgs() <-chan msg
	close()
}

type wsClient struct {
	c   *websocket.Conn
	ch  chan msg
	wg  sync.WaitGroup
	err error // why reading ended, once ch is closed
}

func (e *env) dialWS(query string, header http.Header) (*wsClient, *http.Response, error) {
	u := "ws" + strings.TrimPrefix(e.srv.URL, "http") + Path + query
	c, resp, err := websocket.DefaultDialer.Dial(u, header)
	if err != nil {
		return nil, resp, err
	}
	wc := &wsClient{c: c, ch: make(chan msg, 1024)}
	wc.wg.Go(func() {
		defer close(wc.ch)
		for {
			_, data, err := c.ReadMessage()
			if err != nil {
				wc.err = err
				return
			}
			var m msg
			if json.Unmarshal(data, &m) == nil {
				wc.ch <- m
			}
		}
	})
	return wc, resp, nil
}

func (c *wsClient) send(id, typ string, payload any) {
	b, _ := json.Marshal(map[string]any{"id": id, "type": typ, "payload": payload})
	_ = c.c.WriteMessage(websocket.TextMessage, b)
}
func (c *wsClient) msgs() <-chan msg { return c.ch }
func (c *wsClient) close() {
	_ = c.c.Close()
	c.wg.Wait()
}

// sseClient speaks HTTP+SSE: chat.starts are POSTs whose event streams are read by a
// goroutine each; the other messages are POSTs answered with JSON.
type sseClient struct {
	e       *env
	session string
	route   string
	token   string
	ch      chan msg
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	streams map[string]context.CancelFunc // chat.start id → its stream's cancel (a disconnect)
}

func (e *env) sse(session, route string) *sseClient {
	ctx, cancel := context.WithCancel(context.Background())
	return &sseClient{e: e, session: session, route: route, ch: make(chan msg, 1024), ctx: ctx, cancel: cancel, streams: map[string]context.CancelFunc{}}
}

func (c *sseClient) post(ctx context.Context, path string, body []byte) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.e.srv.URL+path, bytes.NewReader(body))
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return http.DefaultClient.Do(req)
}

func (c *sseClient) send(id, typ string, payload any) {
	if m, ok := payload.(map[string]any); ok && c.session != "" {
		m["sessionId"] = c.session
	}
	body, _ := json.Marshal(map[string]any{"id": id, "type": typ, "payload": payload})
	path := map[string]string{wire.TypeChatStart: PathChat, wire.TypeChatAbort: PathAbort, wire.TypeTaskStatus: PathTask, wire.TypeStatusGet: PathStatus}[typ]
	if typ == wire.TypeChatStart {
		if c.route != "" {
			path += "?route=" + c.route
		}
		ctx, cancel := context.WithCancel(c.ctx)
		c.mu.Lock()
		c.streams[id] = cancel
		c.mu.Unlock()
		started := make(chan struct{})
		c.wg.Go(func() {
			defer cancel()
			resp, err := c.post(ctx, path, body)
			close(started)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if resp.Header.Get("Content-Type") != "text/event-stream" {
				var m msg
				if json.NewDecoder(resp.Body).Decode(&m) == nil {
					c.ch <- m
				}
				return
			}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<16), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				if data, ok := strings.CutPrefix(line, "data: "); ok {
					var m msg
					if json.Unmarshal([]byte(data), &m) == nil {
						c.ch <- m
					}
				}
			}
		})
		<-started // requests reach the gateway in the order they were sent
		return
	}
	resp, err := c.post(c.ctx, path, body)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var m msg
	if json.NewDecoder(resp.Body).Decode(&m) == nil {
		c.ch <- m
	}
}

// disconnect drops the event stream of chat.start id.
func (c *sseClient) disconnect(id string) {
	c.mu.Lock()
	cancel := c.streams[id]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (c *sseClient) msgs() <-chan msg { return c.ch }
func (c *sseClient) close() {
	c.cancel()
	c.wg.Wait()
}

// recorder sorts what a client receives by request id and checks the contract as it
// goes.
type recorder struct {
	t    *testing.T
	c    client
	byID map[string][]msg
}

func newRecorder(t *testing.T, c client) *recorder {
	return &recorder{t: t, c: c, byID: map[string][]msg{}}
}

func isTerminal(m msg) bool { return m.Type == wire.TypeChatDone || m.Type == wire.TypeChatError }

// until reads messages until pred holds for the messages of id.
func (r *recorder) until(id string, what string, pred func([]msg) bool) []msg {
	r.t.Helper()
	timeout := time.After(10 * time.Second)
	for !pred(r.byID[id]) {
		select {
		case m, ok := <-r.c.msgs():
			if !ok {
				r.t.Fatalf("connection closed waiting for %s of %s; got %s", what, id, r.dump(id))
			}
			r.byID[m.ID] = append(r.byID[m.ID], m)
		case <-timeout:
			r.t.Fatalf("timed out waiting for %s of %s; got %s", what, id, r.dump(id))
		}
	}
	return r.byID[id]
}

func (r *recorder) dump(id string) string {
	var b strings.Builder
	for _, m := range r.byID[id] {
		fmt.Fprintf(&b, "\n  %s %s", m.Type, m.Payload)
	}
	return b.String()
}

// terminal waits for the terminal message of id.
func (r *recorder) terminal(id string) []msg {
	r.t.Helper()
	return r.until(id, "the terminal message", func(ms []msg) bool { return len(ms) > 0 && isTerminal(ms[len(ms)-1]) })
}

// has waits for a message of type typ (and, when set, payload member k = v) for id.
func (r *recorder) has(id, typ string, kv ...any) msg {
	r.t.Helper()
	var found msg
	r.until(id, typ, func(ms []msg) bool {
		for _, m := range ms {
			if m.Type != typ {
				continue
			}
			if len(kv) == 2 && fmt.Sprint(m.field(kv[0].(string))) != fmt.Sprint(kv[1]) {
				continue
			}
			found = m
			return true
		}
		return false
	})
	return found
}

// checkRequest checks the contract on the messages of one chat.start: chat.accepted with a
// task id first; chat.queued (1-based) and one chat.started before any event; events that
// pass the Checker; exactly one terminal, last, naming the task.
func checkRequest(ms []msg) error {
	if len(ms) == 0 {
		return errors.New("no messages")
	}
	if ms[0].Type != wire.TypeChatAccepted {
		if len(ms) == 1 && ms[0].Type == wire.TypeChatError {
			return nil // refused before acceptance (queue full, unknown route)
		}
		return fmt.Errorf("first message %s", ms[0].Type)
	}
	task, _ := ms[0].field("taskId").(string)
	if !strings.HasPrefix(task, "task_") {
		return fmt.Errorf("task id %q", task)
	}
	var chk wire.Checker
	started, terminals := false, 0
	for i, m := range ms[1:] {
		if terminals > 0 {
			return fmt.Errorf("%s after the terminal message", m.Type)
		}
		switch m.Type {
		case wire.TypeChatQueued:
			if started {
				return errors.New("chat.queued after chat.started")
			}
			if pos, _ := m.field("position").(float64); pos < 1 || m.field("taskId") != task {
				return fmt.Errorf("chat.queued %s", m.Payload)
			}
		case wire.TypeChatStarted:
			if started {
				return errors.New("chat.started twice")
			}
			started = true
		case wire.TypeChatEvent:
			if !started {
				return errors.New("an event before chat.started")
			}
			if _, err := chk.Check(wire.Frame{Type: m.Type, Payload: m.Payload}); err != nil {
				return fmt.Errorf("event %d: %w", i, err)
			}
		case wire.TypeChatDone, wire.TypeChatError:
			terminals++
			if m.field("taskId") != task {
				return fmt.Errorf("terminal names task %v, want %s", m.field("taskId"), task)
			}
			if m.Type == wire.TypeChatError {
				if id, _ := m.field("errorId").(string); id == "" {
					return fmt.Errorf("chat.error without errorId: %s", m.Payload)
				}
			}
		default:
			return fmt.Errorf("unexpected %s", m.Type)
		}
	}
	if terminals != 1 {
		return fmt.Errorf("%d terminal messages", terminals)
	}
	return nil
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

func causeOf(c *wsConn) error { return context.Cause(c.ctx) }

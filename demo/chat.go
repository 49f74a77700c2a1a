package demo

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Members and states the chat writes more than once.
const (
	keyTaskID    = "taskId"
	keyErrorID   = "errorId"
	keyType      = "type"
	keyMessage   = "message"
	keyText      = "text"
	stateDone    = "done"
	stateError   = "error"
	stateAborted = "aborted"
	stateQueued  = "queued"
	stateRunning = "running"
)

// Defaults of ChatOptions.
const (
	DefaultChatMaxMessageBytes = 1 << 20
	DefaultChatMaxQueued       = 16
	DefaultChatMaxTasks        = 1024
	// ChatMaxRepeat bounds the options.repeat of one chat.start.
	ChatMaxRepeat = 1_000_000
	// chatWriteTimeout bounds one write to a client.
	chatWriteTimeout = 10 * time.Second
)

// ChatOptions configures the demo chat agent (Chat).
type ChatOptions struct {
	// Token, when set, is the bearer credential every client must present:
	// "Authorization: Bearer <token>" on HTTP and on the WebSocket upgrade, or the
	// subprotocol "bearer.<token>" on WebSocket. Without it the server refuses with 401.
	Token string
	// Delay is waited between two events of a reply, so a demo can be watched and aborted.
	Delay time.Duration
	// MCP is an initialized MCP client whose server offers the demo fixtures
	// (test_tool_with_progress); the reply's tool call runs there. Nil: NewChat connects
	// to an in-process demo MCP server (NewMCP) of its own. The Chat does not close a
	// client it was given.
	MCP *client.Client
	// Logger receives connection errors; nil discards them.
	Logger *slog.Logger
	// MaxMessageBytes bounds one client message (default DefaultChatMaxMessageBytes).
	MaxMessageBytes int64
	// MaxQueued bounds the requests queued behind the running one per connection or
	// session id (default DefaultChatMaxQueued); a chat.start beyond it gets chat.error
	// "queue_full".
	MaxQueued int
	// MaxTasks bounds the tasks task.status remembers (default DefaultChatMaxTasks); the
	// oldest finished ones are forgotten first.
	MaxTasks int
}

func (o ChatOptions) withDefaults() ChatOptions {
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultChatMaxMessageBytes
	}
	if o.MaxQueued <= 0 {
		o.MaxQueued = DefaultChatMaxQueued
	}
	if o.MaxTasks <= 0 {
		o.MaxTasks = DefaultChatMaxTasks
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// ChatStats counts what a Chat has seen, for tests that check what reached it.
type ChatStats struct {
	// Started counts the requests that started running.
	Started int64
	// Completed counts the requests that ended with chat.done.
	Completed int64
	// AbortMessages counts the chat.abort messages received.
	AbortMessages int64
	// Aborted counts the requests that ended because of an abort or a disconnect.
	Aborted int64
	// AbortedByMessage counts the requests of Aborted that a chat.abort ended (not a
	// disconnect or the chat closing).
	AbortedByMessage int64
	// Refused counts the connections and requests refused for a missing or wrong token.
	Refused int64
}

// Chat is `gatehouse demo-chat`: a small, deterministic agent server speaking session RPC
// (docs/session.md) over WebSocket (GET /session) and HTTP+SSE (POST /session/chat,
// /session/abort, /session/status, /session/task). Each chat.start gets a scripted
// reply: status, reasoning, a real tool call against the demo MCP server
// (test_tool_with_progress: its progress becomes tool-output), text deltas, usage and a
// checklist, then chat.done. One request runs per WebSocket connection (per session id
// on HTTP); the others queue; chat.abort stops a running request at its next event.
type Chat struct {
	opts     ChatOptions
	mcp      *client.Client
	ownMCP   bool
	upgrader websocket.Upgrader

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // connection handlers and request runners

	seq      atomic.Uint64
	progMu   sync.Mutex
	progress map[string]chan string // progress token → the tool-output sink of a call

	mu       sync.Mutex
	sessions map[string]*chatSession // HTTP sessions by session id
	loose    map[string]*chatSession // HTTP requests without a session id, by request id
	conns    map[*websocket.Conn]struct{}
	tasks    map[string]*chatRequest
	order    []string // task ids, oldest first
	closed   bool

	started, completed, abortMsgs, aborted, abortedByMsg, refused atomic.Int64
}

// NewChat returns the demo chat agent. Close releases it.
func NewChat(ctx context.Context, opts ChatOptions) (*Chat, error) {
	opts = opts.withDefaults()
	c := &Chat{opts: opts, mcp: opts.MCP, progress: map[string]chan string{},
		sessions: map[string]*chatSession{}, loose: map[string]*chatSession{}, conns: map[*websocket.Conn]struct{}{}, tasks: map[string]*chatRequest{}}
	c.upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	if c.mcp == nil {
		mc, err := client.NewInProcessClient(NewMCP(MCPOptions{Logger: opts.Logger}).MCPServer())
		if err != nil {
			return nil, fmt.Errorf("demo MCP client: %w", err)
		}
		if err := InitializeMCPClient(ctx, mc); err != nil {
			_ = mc.Close()
			return nil, err
		}
		c.mcp, c.ownMCP = mc, true
	}
	c.mcp.OnNotification(c.onNotification)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Stats returns what the chat has seen so far.
func (c *Chat) Stats() ChatStats {
	return ChatStats{Started: c.started.Load(), Completed: c.completed.Load(), AbortMessages: c.abortMsgs.Load(),
		Aborted: c.aborted.Load(), AbortedByMessage: c.abortedByMsg.Load(), Refused: c.refused.Load()}
}

// Handler returns the chat's HTTP handler: GET /session and POST /session/{chat,abort,status,task}.
func (c *Chat) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /session", c.serveWebSocket)
	mux.HandleFunc("POST /session/chat", c.serveChat)
	mux.HandleFunc("POST /session/abort", c.serveAbort)
	mux.HandleFunc("POST /session/status", c.serveStatus)
	mux.HandleFunc("POST /session/task", c.serveTask)
	return mux
}

// Serve serves the chat on ln until ctx is done, then closes the chat.
func (c *Chat) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: c.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		c.Close()
		return err
	}
	c.Close() // ends the WebSocket connections and the SSE streams
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close ends every connection and request and waits for them; it closes the MCP client
// the chat made itself.
func (c *Chat) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	for conn := range c.conns {
		_ = conn.Close()
	}
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	if c.ownMCP {
		_ = c.mcp.Close()
	}
}

// InitializeMCPClient starts mc and runs the MCP handshake as the demo chat agent.
func InitializeMCPClient(ctx context.Context, mc *client.Client) error {
	if err := mc.Start(ctx); err != nil {
		return fmt.Errorf("starting the MCP client: %w", err)
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "gatehouse-demo-chat", Version: "1"}
	if _, err := mc.Initialize(ctx, init); err != nil {
		return fmt.Errorf("MCP initialize: %w", err)
	}
	return nil
}

// authorized reports whether r carries the chat's token (always, without one); the
// second result is the subprotocol to echo on a WebSocket upgrade.
func (c *Chat) authorized(r *http.Request) (bool, string) {
	var proto string
	for _, p := range websocket.Subprotocols(r) {
		if strings.HasPrefix(p, "bearer.") {
			proto = p
			break
		}
	}
	if c.opts.Token == "" {
		return true, proto
	}
	if h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && tokenEqual(h, c.opts.Token) {
		return true, proto
	}
	if proto != "" && tokenEqual(strings.TrimPrefix(proto, "bearer."), c.opts.Token) {
		return true, proto
	}
	c.refused.Add(1)
	return false, ""
}

func tokenEqual(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// register makes a handler goroutine known to Close; false when the chat is closed.
func (c *Chat) register() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

// newID returns a fresh id with prefix.
func (c *Chat) newID(prefix string) string {
	return prefix + strconv.FormatUint(c.seq.Add(1), 10)
}

// remember records a task for task.status, forgetting the oldest finished ones.
func (c *Chat) remember(r *chatRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tasks[r.taskID] = r
	c.order = append(c.order, r.taskID)
	for len(c.order) > c.opts.MaxTasks {
		old := c.tasks[c.order[0]]
		if old != nil && !old.finished() {
			break
		}
		delete(c.tasks, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *Chat) task(id string) *chatRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tasks[id]
}

// statusResult is the payload of status.result.
func statusResult() json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"versions": []string{sessionrpc.Version}, "version": sessionrpc.Version,
		"features": []string{"queue", "abort", "task-status", "tool-calls", "checklist", "usage"},
		"agent":    "gatehouse demo-chat",
	})
	return b
}

// envelope encodes a server message.
func envelope(id, typ string, payload any) []byte {
	var raw json.RawMessage
	switch p := payload.(type) {
	case json.RawMessage:
		raw = p
	case nil:
	default:
		raw, _ = json.Marshal(p)
	}
	b, _ := json.Marshal(sessionrpc.Envelope{ID: id, Type: typ, Payload: raw})
	return b
}

// protocolError is the payload of an error message or a chat.error.
func protocolError(errorID, message string, code schemas.Code) map[string]any {
	return map[string]any{keyErrorID: errorID, keyMessage: message, "code": code}
}

// chatSession is one queue: a WebSocket connection's, or an HTTP session id's.
type chatSession struct {
	c       *Chat
	key     string // session id for HTTP, "" for a WebSocket connection
	mu      sync.Mutex
	running *chatRequest
	queue   []*chatRequest
	byID    map[string]*chatRequest // requests queued or running, by request id
	users   int                     // HTTP handlers using the session (under Chat.mu)
	looseID string                  // the request id of a session without a session id
}

func newChatSession(c *Chat, key string) *chatSession {
	return &chatSession{c: c, key: key, byID: map[string]*chatRequest{}}
}

// chatRequest is one chat.start.
type chatRequest struct {
	id, taskID string
	start      chatStartPayload
	send       func([]byte) // delivers a server message to the client
	ctx        context.Context
	cancel     context.CancelFunc

	mu       sync.Mutex
	state    string // queued, running, done, error, aborted
	position int
	abortBy  bool // ended by chat.abort (not a disconnect)
	end      chan struct{}
}

func (r *chatRequest) setState(s string, pos int) {
	r.mu.Lock()
	r.state, r.position = s, pos
	r.mu.Unlock()
}

func (r *chatRequest) snapshot() (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state, r.position
}

func (r *chatRequest) finished() bool {
	s, _ := r.snapshot()
	return s == stateDone || s == stateError || s == stateAborted
}

// chatStartPayload is what the demo reads of a chat.start payload.
type chatStartPayload struct {
	Message   string `json:"message"`
	SessionID string `json:"sessionId"`
	Options   struct {
		// Repeat adds this many text-delta events to the reply (a long stream, for benchmarks).
		Repeat int `json:"repeat"`
		// NoTool skips the tool call.
		NoTool bool `json:"noTool"`
	} `json:"options"`
}

// start queues or runs a new request; it sends chat.accepted and chat.queued.
func (s *chatSession) start(id string, payload json.RawMessage, send func([]byte), parent context.Context) (*chatRequest, bool) {
	var p chatStartPayload
	if len(payload) == 0 || json.Unmarshal(payload, &p) != nil {
		send(envelope(id, sessionrpc.TypeChatError, protocolError("invalid_request", "chat.start needs a payload object", schemas.CodeInvalidParams)))
		return nil, false
	}
	if p.Options.Repeat < 0 || p.Options.Repeat > ChatMaxRepeat {
		send(envelope(id, sessionrpc.TypeChatError, protocolError("invalid_request", "options.repeat is out of range", schemas.CodeInvalidParams)))
		return nil, false
	}
	r := &chatRequest{id: id, taskID: s.c.newID("task_"), start: p, send: send, end: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(parent)
	s.mu.Lock()
	if _, dup := s.byID[id]; dup {
		s.mu.Unlock()
		r.cancel()
		send(envelope(id, sessionrpc.TypeChatError, protocolError("duplicate_request", "a request with this id is already queued or running", schemas.CodeInvalidRequest)))
		return nil, false
	}
	if len(s.queue) >= s.c.opts.MaxQueued {
		s.mu.Unlock()
		r.cancel()
		send(envelope(id, sessionrpc.TypeChatError, protocolError("queue_full", "too many requests are queued", schemas.CodeOverloaded)))
		return nil, false
	}
	run := s.running == nil
	if run && !s.c.register() {
		s.mu.Unlock()
		r.cancel()
		send(envelope(id, sessionrpc.TypeChatError, protocolError("shutting_down", "the agent is shutting down", schemas.CodeShuttingDown)))
		return nil, false
	}
	s.byID[id] = r
	if run {
		s.running = r
		r.setState(stateRunning, 0)
	} else {
		s.queue = append(s.queue, r)
		r.setState(stateQueued, len(s.queue))
	}
	// Sent under the lock, so a request's accepted and queued come before its started.
	send(envelope(id, sessionrpc.TypeChatAccepted, map[string]any{keyTaskID: r.taskID}))
	if !run {
		send(envelope(id, sessionrpc.TypeChatQueued, map[string]any{keyTaskID: r.taskID, "position": len(s.queue)}))
	}
	s.mu.Unlock()
	s.c.remember(r)
	if run {
		go s.run(r)
	}
	return r, true
}

// run runs r and then the next queued request.
func (s *chatSession) run(r *chatRequest) {
	defer s.c.wg.Done()
	for r != nil {
		s.c.started.Add(1)
		r.send(envelope(r.id, sessionrpc.TypeChatStarted, map[string]any{keyTaskID: r.taskID}))
		done, err := s.c.reply(r)
		s.finish(r, done, err)
		r = s.next()
	}
}

// finish sends r's terminal message.
func (s *chatSession) finish(r *chatRequest, done map[string]any, err error) {
	defer close(r.end)
	defer r.cancel()
	switch {
	case err == nil:
		s.c.completed.Add(1)
		done[keyTaskID] = r.taskID
		r.setState(stateDone, 0)
		r.send(envelope(r.id, sessionrpc.TypeChatDone, done))
	case r.ctx.Err() != nil:
		s.c.aborted.Add(1)
		r.mu.Lock()
		if r.abortBy {
			s.c.abortedByMsg.Add(1)
		}
		r.mu.Unlock()
		r.setState(stateAborted, 0)
		e := protocolError("aborted", "the request was aborted", schemas.CodeCancelled)
		e[keyTaskID] = r.taskID
		r.send(envelope(r.id, sessionrpc.TypeChatError, e))
	default:
		r.setState(stateError, 0)
		e := protocolError("agent_failed", err.Error(), schemas.CodeAgentExecution)
		e[keyTaskID] = r.taskID
		r.send(envelope(r.id, sessionrpc.TypeChatError, e))
	}
}

// next takes the finished running request off and starts the first queued one; the
// others are told their new positions.
func (s *chatSession) next() *chatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != nil {
		delete(s.byID, s.running.id)
	}
	s.running = nil
	if len(s.queue) == 0 || s.c.ctx.Err() != nil {
		for _, q := range s.queue { // the chat is closing: end them
			s.endQueued(q)
		}
		s.queue = nil
		return nil
	}
	r := s.queue[0]
	s.queue = s.queue[1:]
	s.running = r
	r.setState(stateRunning, 0)
	s.reemit()
	return r
}

// reemit sends every queued request its position (under s.mu).
func (s *chatSession) reemit() {
	for i, q := range s.queue {
		q.setState(stateQueued, i+1)
		q.send(envelope(q.id, sessionrpc.TypeChatQueued, map[string]any{keyTaskID: q.taskID, "position": i + 1}))
	}
}

// endQueued ends a queued request as aborted (under s.mu).
func (s *chatSession) endQueued(q *chatRequest) {
	delete(s.byID, q.id)
	q.cancel()
	q.setState(stateAborted, 0)
	s.c.aborted.Add(1)
	e := protocolError("aborted", "the request was aborted", schemas.CodeCancelled)
	e[keyTaskID] = q.taskID
	q.send(envelope(q.id, sessionrpc.TypeChatError, e))
	close(q.end)
}

// abort aborts request id; it reports whether there was one to abort and its state.
func (s *chatSession) abort(id string) (bool, string) {
	s.c.abortMsgs.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.byID[id]
	if r == nil {
		if t := s.c.findByRequest(id); t != nil {
			st, _ := t.snapshot()
			return false, st
		}
		return false, "unknown"
	}
	if s.running == r {
		r.mu.Lock()
		r.abortBy = true
		r.mu.Unlock()
		r.cancel() // the runner ends it at its next step
		return true, stateRunning
	}
	s.c.abortedByMsg.Add(1)
	s.removeQueued(r)
	return true, stateQueued
}

// closeAll aborts every request of s (its connection ended) and waits for them.
func (s *chatSession) closeAll() {
	s.mu.Lock()
	var running *chatRequest
	if s.running != nil {
		running = s.running
		running.cancel()
	}
	for _, q := range s.queue {
		s.endQueued(q)
	}
	s.queue = nil
	s.mu.Unlock()
	if running != nil {
		<-running.end
	}
}

// findByRequest returns a remembered request with id, nil for none.
func (c *Chat) findByRequest(id string) *chatRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, taskID := range slices.Backward(c.order) {
		if r := c.tasks[taskID]; r != nil && r.id == id {
			return r
		}
	}
	return nil
}

// taskStatus answers task.status.
func (c *Chat) taskStatus(id string, payload json.RawMessage) []byte {
	var p struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(payload, &p)
	r := c.task(p.TaskID)
	if r == nil {
		return envelope(id, sessionrpc.TypeError, protocolError("task_not_found", "no such task", schemas.CodeTaskNotFound))
	}
	st, pos := r.snapshot()
	res := map[string]any{keyTaskID: r.taskID, "requestId": r.id, "state": st}
	if st == stateQueued {
		res["position"] = pos
	}
	return envelope(id, sessionrpc.TypeTaskStatusResult, res)
}

// abortResult is the payload of chat.abort.result.
func abortResult(requestID string, aborted bool, state string) map[string]any {
	return map[string]any{"requestId": requestID, "aborted": aborted, "state": state}
}

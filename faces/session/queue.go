package session

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	wire "github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// sink is where the messages concerning one request go: the connection (WebSocket), or
// the request's own event stream (SSE).
type sink interface {
	// send queues msg, waiting for room up to half session.write_timeout; false when the
	// consumer is gone or was cut off as too slow.
	send(msg []byte) bool
	// offer queues msg only if that needs no wait (progress reports: advisory).
	offer(msg []byte) bool
	// final queues the request's last message; the sink may end after it.
	final(msg []byte)
}

// Errors a request's context is cancelled with (its cause): what ends it.
var (
	errAborted = errors.New("aborted by the client")
	errGone    = errors.New("the client is gone")
	errSlow    = errors.New("slow consumer")
)

// request is one chat.start, from its acceptance to its one terminal message.
type request struct {
	id, taskID string
	route      sessionrpc.RouteConfig
	payload    []byte // the chat.start payload, owned
	out        sink
	proto      gateway.Protocol
	// principal is the check before the request runs: its caller's credential.
	principal func() (gateway.Principal, error)

	ctx    context.Context
	cancel context.CancelCauseFunc

	// Under the session's mu.
	state string
	ended bool
}

// session is one queue: a WebSocket connection's, or an SSE session id's. One request
// runs at a time; the others wait in order.
type session struct {
	f   *Face
	cfg Config
	ctx context.Context // cancelled when the connection is gone (WebSocket); never for SSE

	mu        sync.Mutex
	running   *request
	waiting   []*request
	active    map[string]*request // queued and running, by request id
	tasks     map[string]*request // every remembered task, by task id
	taskOrder []string            // task ids, oldest first
	closed    bool
	idleSince time.Time // when the queue last emptied (SSE sessions expire after session_idle)

	runs sync.WaitGroup
}

func newSession(ctx context.Context, f *Face, cfg Config) *session {
	return &session{f: f, cfg: cfg, ctx: ctx, idleSince: time.Now()} // maps made at the first request: an idle connection holds none
}

// errorMsg is a chat.error (or error) envelope for id.
func errorMsg(id, typ, taskID, errorID string, err *gateway.Error, detail map[string]any) []byte {
	p := wire.ErrorPayload{TaskID: taskID, ErrorID: errorID, Message: err.Message(), Code: int(err.Code()), Detail: detail}
	if p.Detail == nil && len(err.Data()) > 0 {
		p.Detail = err.Data()
	}
	payload, mErr := json.Marshal(p)
	if mErr != nil { // data a backend sent that does not marshal: drop the detail
		p.Detail = nil
		payload, _ = json.Marshal(p)
	}
	return wire.AppendEnvelope(nil, id, typ, payload)
}

// start accepts a chat.start: chat.accepted, then chat.started when nothing runs, or
// chat.queued with its position.
func (s *session) start(id string, route sessionrpc.RouteConfig, payload []byte, out sink, proto gateway.Protocol, principal func() (gateway.Principal, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		out.final(errorMsg(id, wire.TypeChatError, "", wire.ErrorShuttingDown, gateway.NewError(schemas.CodeShuttingDown), nil))
		return
	case s.active[id] != nil:
		out.final(errorMsg(id, wire.TypeChatError, "", wire.ErrorDuplicateID,
			gateway.Errorf(schemas.CodeInvalidRequest, "A request with this id is still queued or running"), nil))
		return
	case s.running != nil && len(s.waiting) >= s.cfg.MaxQueued:
		out.final(errorMsg(id, wire.TypeChatError, "", wire.ErrorQueueFull,
			gateway.Errorf(schemas.CodeOverloaded, "Too many requests queued").With("limit", "max_queued").With("max", s.cfg.MaxQueued), nil))
		return
	}
	r := &request{id: id, taskID: s.f.newTaskID(), route: route, payload: payload, out: out, proto: proto, principal: principal}
	r.ctx, r.cancel = context.WithCancelCause(s.ctx)
	s.f.started.Add(1)
	if s.active == nil {
		s.active, s.tasks = make(map[string]*request), make(map[string]*request)
	}
	s.active[id] = r
	s.remember(r)
	out.send(wire.AppendEnvelope(nil, id, wire.TypeChatAccepted, wire.AppendTask(nil, r.taskID)))
	if s.running == nil {
		s.run(r)
		return
	}
	r.state = wire.StateQueued
	s.waiting = append(s.waiting, r)
	out.send(wire.AppendEnvelope(nil, id, wire.TypeChatQueued, wire.AppendQueued(nil, r.taskID, len(s.waiting))))
}

// remember records r's task, forgetting the oldest finished tasks past max_tasks.
func (s *session) remember(r *request) {
	s.tasks[r.taskID] = r
	s.taskOrder = append(s.taskOrder, r.taskID)
	for i := 0; len(s.tasks) > s.cfg.MaxTasks && i < len(s.taskOrder); {
		old := s.tasks[s.taskOrder[i]]
		if old != nil && !old.ended {
			i++
			continue
		}
		delete(s.tasks, s.taskOrder[i])
		s.taskOrder = append(s.taskOrder[:i], s.taskOrder[i+1:]...)
	}
}

// run makes r the running request; s.mu is held.
func (s *session) run(r *request) {
	s.running = r
	r.state = wire.StateRunning
	r.out.send(wire.AppendEnvelope(nil, r.id, wire.TypeChatStarted, wire.AppendTask(nil, r.taskID)))
	s.runs.Add(1)
	go s.f.execute(s, r)
}

// end ends r with its terminal message msg (nil: the consumer is gone, nothing is sent),
// in state; the next queued request starts. It runs once per request; later calls do
// nothing.
func (s *session) end(r *request, state string, msg []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLocked(r, state, msg)
}

// endLocked is end with s.mu held.
func (s *session) endLocked(r *request, state string, msg []byte) {
	if r.ended {
		return
	}
	r.ended = true
	r.state = state
	r.cancel(nil)
	delete(s.active, r.id)
	s.f.ended.Add(1)
	if msg != nil {
		r.out.final(msg)
	}
	if s.running == r {
		s.running = nil
		if len(s.waiting) > 0 && !s.closed {
			next := s.waiting[0]
			s.waiting = s.waiting[1:]
			s.run(next)
			s.repositionLocked()
		}
	} else if i := indexOf(s.waiting, r); i >= 0 {
		s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
		s.repositionLocked()
	}
	if s.running == nil && len(s.waiting) == 0 {
		s.idleSince = time.Now()
	}
}

func indexOf(rs []*request, r *request) int {
	for i, x := range rs {
		if x == r {
			return i
		}
	}
	return -1
}

// repositionLocked re-emits chat.queued with its position to every queued request.
func (s *session) repositionLocked() {
	for i, w := range s.waiting {
		w.out.send(wire.AppendEnvelope(nil, w.id, wire.TypeChatQueued, wire.AppendQueued(nil, w.taskID, i+1)))
	}
}

// abort serves chat.abort for requestID: a queued request ends at once with chat.error
// "aborted" (the others are repositioned); a running one has its call context cancelled,
// and ends with chat.error "aborted" once its target has stopped.
func (s *session) abort(requestID string) wire.AbortResult {
	s.mu.Lock()
	r := s.active[requestID]
	if r == nil {
		state := wire.StateUnknown
		for _, t := range s.tasks {
			if t.id == requestID {
				state = t.state
			}
		}
		s.mu.Unlock()
		return wire.AbortResult{RequestID: requestID, State: state}
	}
	// Decided and done under one hold of the lock: a queued request ended here cannot have
	// been started in between (its events would then follow its chat.error).
	if s.running == r {
		s.mu.Unlock()
		r.cancel(errAborted)
		return wire.AbortResult{RequestID: requestID, Aborted: true, State: wire.StateRunning}
	}
	s.endLocked(r, wire.StateAborted, abortedMsg(r))
	s.mu.Unlock()
	return wire.AbortResult{RequestID: requestID, Aborted: true, State: wire.StateQueued}
}

func abortedMsg(r *request) []byte {
	return errorMsg(r.id, wire.TypeChatError, r.taskID, wire.ErrorAborted,
		gateway.Errorf(schemas.CodeCancelled, "The request was aborted"), nil)
}

// stop ends r for cause: a running r has its call cancelled (it ends once its target has
// stopped), a queued one ends at once — with its chat.error when notify, else silently
// (its consumer left).
func (s *session) stop(r *request, cause error, notify bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == r { // decided and done under one hold of the lock, as abort
		r.cancel(cause)
		return
	}
	var msg []byte
	if notify {
		msg = causeMsg(r, cause)
	}
	s.endLocked(r, wire.StateAborted, msg)
}

// status serves task.status.
func (s *session) status(taskID string) (wire.TaskStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.tasks[taskID]
	if r == nil {
		return wire.TaskStatus{}, false
	}
	st := wire.TaskStatus{TaskID: taskID, RequestID: r.id, State: r.state}
	if r.state == wire.StateQueued {
		st.Position = indexOf(s.waiting, r) + 1
	}
	return st, true
}

// dropQueued ends every queued request with chat.error for cause and refuses new ones;
// the running request goes on.
func (s *session) dropQueued(cause error) {
	s.mu.Lock()
	s.closed = true
	waiting := append([]*request(nil), s.waiting...)
	s.mu.Unlock()
	for _, r := range waiting {
		s.end(r, wire.StateAborted, causeMsg(r, cause))
	}
}

// close ends every request for cause: queued ones at once (with their message when the
// consumer can still hear it), the running one by cancelling its call. It returns once the
// running request has ended.
func (s *session) close(cause error, notify bool) {
	s.mu.Lock()
	s.closed = true
	waiting := append([]*request(nil), s.waiting...)
	running := s.running
	s.mu.Unlock()
	if running != nil {
		running.cancel(cause)
	}
	for _, r := range waiting {
		var msg []byte
		if notify {
			msg = causeMsg(r, cause)
		}
		s.end(r, wire.StateAborted, msg)
	}
	s.runs.Wait()
}

// idle reports whether nothing is queued or running, and since when.
func (s *session) idle() (bool, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running == nil && len(s.waiting) == 0, s.idleSince
}

// causeMsg is the chat.error of a request ended by cause (its context's).
func causeMsg(r *request, cause error) []byte {
	switch {
	case errors.Is(cause, errAborted):
		return abortedMsg(r)
	case errors.Is(cause, errShutdown):
		return errorMsg(r.id, wire.TypeChatError, r.taskID, wire.ErrorShuttingDown, gateway.NewError(schemas.CodeShuttingDown), nil)
	case errors.Is(cause, errSlow):
		return errorMsg(r.id, wire.TypeChatError, r.taskID, wire.ErrorSlowConsumer, gateway.Errorf(schemas.CodeOverloaded, "Slow consumer: the send queue is full"), nil)
	}
	ge := gateway.AsError(cause)
	if ge.Code() == schemas.CodeAuthentication {
		return errorMsg(r.id, wire.TypeChatError, r.taskID, wire.ErrorCredential, ge, nil)
	}
	return errorMsg(r.id, wire.TypeChatError, r.taskID, errorID(ge), ge, nil)
}

package sessions

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
)

// sessionMaxQueued is session.max_queued; the reloader moves it to one more and back.
const sessionMaxQueued = 2

func sessionConfig(maxQueued int) string {
	return fmt.Sprintf(`server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  demo_grpc: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  anonymous: {}
session:
  max_queued: %d
  request_timeout: 60s
  routes:
    - name: count
      grpc:
        method: calc.count
        request:
          from: {value: 1}
          to: {from: options.to, default: 3}
          interval: {from: options.interval}
        events:
          - {type: text-delta, templates: {text: "{value} "}}
        done: {text: true}
routing:
  grpc:
    - name: calculator
      address: 127.0.0.1:0
      descriptors: {reflection: true}
      services:
        - {service: calculator.v1.CalculatorService, prefix: "calc.", naming: snake}
`, maxQueued)
}

type sessionMsg struct {
	ID      string         `json:"id"`
	Type    string         `json:"type"`
	Payload map[string]any `json:"payload"`
}

// turn is one chat.start in the model: long ones count until aborted, short ones end by
// themselves within a few tens of milliseconds.
type turn struct {
	id     string
	long   bool
	state  string // queued, running, ended
	taskID string
	msgs   chan sessionMsg // everything concerning it, in order
	dup    chan sessionMsg // the refusal of a chat.start that reused its id
}

// sessionModel is one connection: the turn running, the ones queued behind it, in order,
// and max_queued between queueLo and queueHi while the reloader moves it.
type sessionModel struct {
	running          *turn
	queue            []*turn
	queueLo, queueHi int
}

// apply returns what a chat.start of a long turn may get after chat.accepted: started
// when nothing runs, queued at the next position while the queue has room, queue_full
// when it has none.
func (m *sessionModel) apply(op string) outcomes {
	switch op {
	case "start":
		n := len(m.queue)
		switch {
		case m.running == nil:
			return allow("started")
		case n < m.queueLo:
			return allow(fmt.Sprintf("queued %d", n+1))
		case n >= m.queueHi:
			return allow("error queue_full")
		}
		return allow(fmt.Sprintf("queued %d", n+1), "error queue_full")
	case "abort-live":
		return allow("aborted true")
	case "abort-ended", "abort-unknown":
		return allow("aborted false")
	case "duplicate":
		return allow("error duplicate_id")
	case "status-unknown":
		return allow("error unknown_task")
	}
	panic("unknown op " + op)
}

// dequeue moves the model on when the running turn ends: the first queued one runs.
func (m *sessionModel) dequeue() {
	m.running = nil
	if len(m.queue) > 0 {
		m.running, m.queue = m.queue[0], m.queue[1:]
		m.running.state = "running"
	}
}

// sessionConn is one /session WebSocket connection and its reader.
type sessionConn struct {
	t    *testing.T
	name string
	c    *websocket.Conn
	h    *history

	mu      sync.Mutex
	turns   map[string]*turn
	answers map[string]chan sessionMsg // chat.abort.result, task.status.result, error, by request id
	done    chan struct{}
	next    int
}

func dialSession(t *testing.T, g *hardening.Gateway, name string, h *history) *sessionConn {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(g.Base, "http")+"/session?route=count", nil)
	if err != nil {
		t.Fatalf("dial /session: %v", err)
	}
	_ = resp.Body.Close()
	s := &sessionConn{t: t, name: name, c: c, h: h, turns: map[string]*turn{}, answers: map[string]chan sessionMsg{}, done: make(chan struct{})}
	go s.read()
	return s
}

// read routes each message to its turn, checking the invariants of docs/session.md as it
// goes: every message of a turn comes after chat.accepted, events only after
// chat.started, exactly one chat.done or chat.error, nothing after it.
func (s *sessionConn) read() {
	defer close(s.done)
	type seen struct{ accepted, started, ended bool }
	state := map[string]*seen{}
	for {
		_, data, err := s.c.ReadMessage()
		if err != nil {
			return
		}
		var m sessionMsg
		if err := json.Unmarshal(data, &m); err != nil {
			s.t.Errorf("%s: unreadable message %.200s", s.name, data)
			continue
		}
		if l := hardening.Leaks(string(data)); len(l) != 0 {
			s.t.Errorf("%s: a message leaks %q: %.300s", s.name, l, data)
		}
		s.mu.Lock()
		tr, answer := s.turns[m.ID], s.answers[m.ID]
		s.mu.Unlock()
		switch {
		case m.Type == "chat.abort.result" || m.Type == "task.status.result" || m.Type == "error":
			if answer == nil {
				s.t.Errorf("%s: an answer to nothing asked: %.200s", s.name, data)
				continue
			}
			answer <- m
			continue
		case tr == nil:
			s.t.Errorf("%s: a message of no request: %.200s", s.name, data)
			continue
		case m.Type == "chat.error" && m.Payload["errorId"] == "duplicate_id":
			tr.dup <- m
			continue
		}
		st := state[m.ID]
		if st == nil {
			st = &seen{}
			state[m.ID] = st
		}
		bad := ""
		switch {
		case st.ended:
			bad = "after its chat.done or chat.error"
		case m.Type == "chat.accepted":
			if st.accepted {
				bad = "accepted twice"
			}
			st.accepted = true
		case !st.accepted && m.Payload["errorId"] != "queue_full":
			bad = "before chat.accepted"
		case m.Type == "chat.started":
			st.started = true
		case m.Type == "chat.event" && !st.started:
			bad = "an event before chat.started"
		case m.Type == "chat.done" || m.Type == "chat.error":
			st.ended = true
		}
		if bad != "" {
			s.t.Errorf("%s: %s of %s %s (replay: %s=%d)", s.name, m.Type, m.ID, bad, seedEnv, s.h.seed)
		}
		tr.msgs <- m
	}
}

func (s *sessionConn) send(id, typ, payload string) {
	if err := s.c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"id":%q,"type":%q,"payload":%s}`, id, typ, payload)); err != nil {
		s.t.Errorf("%s: send %s: %v", s.name, typ, err)
	}
}

const sessionWithin = 30 * time.Second

// next is the next message of tr, skipping chat.queued position updates and events
// unless keep says otherwise.
func (s *sessionConn) nextOf(ch chan sessionMsg, skip ...string) sessionMsg {
	deadline := time.After(sessionWithin)
	for {
		select {
		case m := <-ch:
			if !strings.Contains(strings.Join(skip, " "), m.Type) {
				return m
			}
		case <-s.done:
			return sessionMsg{Type: "connection ended"}
		case <-deadline:
			return sessionMsg{Type: "nothing within " + sessionWithin.String()}
		}
	}
}

func sessionKind(m sessionMsg) string {
	switch m.Type {
	case "chat.started":
		return "started"
	case "chat.queued":
		return fmt.Sprintf("queued %v", m.Payload["position"])
	case "chat.error", "error":
		return fmt.Sprintf("error %v", m.Payload["errorId"])
	case "chat.done":
		return "done"
	case "chat.abort.result":
		return fmt.Sprintf("aborted %v", m.Payload["aborted"])
	}
	return m.Type
}

// ask sends a message answered by a result of its own id and returns the answer.
func (s *sessionConn) ask(typ, payload string) sessionMsg {
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf("rpc_q%d", s.next)
	ch := make(chan sessionMsg, 4)
	s.answers[id] = ch
	s.mu.Unlock()
	s.send(id, typ, payload)
	return s.nextOf(ch)
}

// TestSessionRPCModel: connections to /session run interleaved turns of the count route —
// long ones that hold the connection's queue, short ones whose end races an abort, a
// second and third turn while one runs (max_queued ± 1), aborts of queued, running,
// ended and unknown turns, reused request ids, task.status of unknown tasks — and end by
// aborting what is left or by dropping the connection (then resuming on a new one), while
// the reloader moves max_queued; every answer is checked against sessionModel and the
// invariants of docs/session.md, and goroutines, open files and state keys come back.
func TestSessionRPCModel(t *testing.T) {
	rng, seed := seeded(t)
	g := hardening.Start(t, sessionConfig(sessionMaxQueued))
	h := newHistory(seed)
	warm := dialSession(t, g, "warm", newHistory(seed))
	sessionTurn(t, warm, &sessionModel{queueLo: sessionMaxQueued, queueHi: sessionMaxQueued + 1}, "short", fork(rng))
	_ = warm.c.Close()
	<-warm.done
	base := hardening.Take(g.State.Len)
	t.Logf("baseline: %s", base)

	ops := hardening.Iterations(t, 240)
	const workers = 3
	stop := make(chan struct{})
	reloads := reloader(t, g, fork(rng), []string{sessionConfig(sessionMaxQueued), sessionConfig(sessionMaxQueued + 1)}, stop)
	var wg sync.WaitGroup
	for n := range workers {
		r := fork(rng)
		wg.Go(func() {
			left := ops / workers
			for c := 0; left > 0 && !t.Failed(); c++ {
				per := 4 + r.IntN(16)
				left -= per
				sessionConnection(t, g, fmt.Sprintf("s%d.%d", n, c), h, r, per)
			}
		})
	}
	wg.Wait()
	close(stop)
	t.Logf("%d operations, %d reloads", ops, <-reloads)
	h.log(t)
	base.Check(t, 20*time.Second, hardening.Slack{Goroutines: 4, FDs: 2})
}

func sessionConnection(t *testing.T, g *hardening.Gateway, name string, h *history, r *rand.Rand, per int) {
	s := dialSession(t, g, name, h)
	m := &sessionModel{queueLo: sessionMaxQueued, queueHi: sessionMaxQueued + 1}
	var ended []*turn
	for range per {
		if t.Failed() {
			break
		}
		switch op := []string{"long", "long", "short", "abort", "abort", "abort-race", "duplicate", "status"}[r.IntN(8)]; op {
		case "abort-race":
			// A short turn on an idle connection, aborted while it runs or as it ends: the
			// abort's answer and the turn's end agree.
			if m.running != nil {
				continue
			}
			tr := sessionStart(t, s, m, "short", r)
			if tr == nil || tr.state != "running" {
				continue
			}
			time.Sleep(time.Duration(r.IntN(60)) * time.Millisecond)
			got := sessionKind(s.ask("chat.abort", fmt.Sprintf(`{"requestId":%q}`, tr.id)))
			if !h.check(t, name, op, got, allow("aborted true", "aborted false")) {
				continue
			}
			end := map[string]string{"aborted true": "error aborted", "aborted false": "done"}[got]
			h.check(t, name, op+" end", sessionKind(s.nextOf(tr.msgs, "chat.event")), allow(end))
			tr.state = "ended"
			m.dequeue()
			ended = append(ended, tr)
		case "long":
			if tr := sessionTurn(t, s, m, "long", r); tr != nil && tr.state == "ended" {
				ended = append(ended, tr)
			}
		case "short":
			if m.running != nil { // a short turn's end is only predictable on an idle connection
				continue
			}
			if tr := sessionTurn(t, s, m, "short", r); tr != nil {
				ended = append(ended, tr)
			}
		case "abort":
			live := append([]*turn{}, m.queue...)
			if m.running != nil {
				live = append(live, m.running)
			}
			var target *turn
			kind := "abort-unknown"
			switch x := r.IntN(4); {
			case x < 2 && len(live) > 0:
				target, kind = live[r.IntN(len(live))], "abort-live"
			case x == 2 && len(ended) > 0:
				target, kind = ended[r.IntN(len(ended))], "abort-ended"
			}
			id := fmt.Sprintf("rpc_nobody%d", r.IntN(1000))
			if target != nil {
				id = target.id
			}
			what := kind
			if target != nil && target.state != "ended" {
				what += " " + target.state
			}
			got := sessionKind(s.ask("chat.abort", fmt.Sprintf(`{"requestId":%q}`, id)))
			h.check(t, name, what, got, m.apply(kind))
			if kind == "abort-live" && got == "aborted true" {
				h.check(t, name, "aborted turn's end", sessionKind(s.nextOf(target.msgs, "chat.queued", "chat.event", "chat.started")), allow("error aborted"))
				target.state = "ended"
				ended = append(ended, target)
				if target == m.running {
					m.dequeue()
					if m.running != nil {
						h.check(t, name, "dequeued", sessionKind(s.nextOf(m.running.msgs, "chat.queued")), allow("started"))
					}
				} else {
					for i, q := range m.queue {
						if q == target {
							m.queue = append(m.queue[:i], m.queue[i+1:]...)
							break
						}
					}
				}
			}
		case "duplicate":
			if m.running == nil {
				continue
			}
			tr := m.running
			if len(m.queue) > 0 && r.IntN(2) == 0 {
				tr = m.queue[r.IntN(len(m.queue))]
			}
			s.send(tr.id, "chat.start", `{"message":"again","options":{"to":2}}`)
			h.check(t, name, "duplicate "+tr.state, sessionKind(s.nextOf(tr.dup)), m.apply(op))
		case "status":
			got := sessionKind(s.ask("task.status", fmt.Sprintf(`{"taskId":"task_nobody%d"}`, r.IntN(1000))))
			h.check(t, name, "status-unknown", got, m.apply("status-unknown"))
		}
	}
	if r.IntN(2) == 0 {
		h.note(name, fmt.Sprintf("drop (running %v, %d queued)", m.running != nil, len(m.queue)))
		_ = s.c.UnderlyingConn().Close()
		<-s.done
		return
	}
	// Abort what is left, the running turn last: each ends with chat.error aborted.
	for len(m.queue) > 0 || m.running != nil {
		target := m.running
		if len(m.queue) > 0 {
			target = m.queue[len(m.queue)-1]
			m.queue = m.queue[:len(m.queue)-1]
		} else {
			m.running = nil
		}
		h.check(t, name, "abort-live (at the end)", sessionKind(s.ask("chat.abort", fmt.Sprintf(`{"requestId":%q}`, target.id))), allow("aborted true"))
		h.check(t, name, "aborted turn's end", sessionKind(s.nextOf(target.msgs, "chat.queued", "chat.event", "chat.started")), allow("error aborted"))
	}
	_ = s.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(5*time.Second))
	select {
	case <-s.done:
	case <-time.After(sessionWithin):
		t.Errorf("%s: the connection stayed open after the close frame", name)
	}
	_ = s.c.Close()
}

// sessionTurn starts a turn and checks its start against the model; a short one (on an
// idle connection) is also followed to its chat.done.
func sessionTurn(t *testing.T, s *sessionConn, m *sessionModel, kind string, r *rand.Rand) *turn {
	tr := sessionStart(t, s, m, kind, r)
	if tr != nil && !tr.long && tr.state == "running" {
		s.h.check(t, s.name, "short turn's end", sessionKind(s.nextOf(tr.msgs, "chat.event")), allow("done"))
		tr.state = "ended"
		m.dequeue()
	}
	return tr
}

// sessionStart sends a chat.start and checks what follows chat.accepted against the model.
func sessionStart(t *testing.T, s *sessionConn, m *sessionModel, kind string, r *rand.Rand) *turn {
	s.mu.Lock()
	s.next++
	tr := &turn{id: fmt.Sprintf("rpc_%d", s.next), long: kind == "long", msgs: make(chan sessionMsg, 4096), dup: make(chan sessionMsg, 4)}
	s.turns[tr.id] = tr
	s.mu.Unlock()
	options := `{"to":3,"interval":"0.01s"}`
	if tr.long {
		options = `{"to":1000,"interval":"1s"}`
	}
	allowed := m.apply("start")
	s.send(tr.id, "chat.start", `{"message":"count","options":`+options+`}`)
	first := s.nextOf(tr.msgs)
	if first.Type == "chat.accepted" {
		tr.taskID, _ = first.Payload["taskId"].(string)
		first = s.nextOf(tr.msgs)
	}
	got := sessionKind(first)
	if !s.h.check(t, s.name, "start "+kind, got, allowed) {
		return nil
	}
	switch {
	case got == "started":
		tr.state = "running"
		m.running = tr
	case strings.HasPrefix(got, "queued"):
		tr.state = "queued"
		m.queue = append(m.queue, tr)
	default:
		tr.state = "ended"
	}
	_ = r
	return tr
}

package sessions

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
)

// sseModel is one HTTP+SSE session (a sessionId): idle, a turn running on an open event
// stream, or that turn's client gone (its stream closed: the gateway aborts the turn).
type sseModel struct{ state string }

// apply returns what op may get in the model's state.
func (m *sseModel) apply(op string) outcomes {
	switch op {
	case "start-long":
		m.state = "running"
		return allow("started") // the session is idle: the previous turn ended
	case "status-after-disconnect":
		// The gateway aborts the turn when its stream goes; the status may still say
		// running if it is asked before the abort lands.
		return allow("state aborted", "state running")
	case "abort-after-disconnect":
		m.state = "idle"
		return allow("aborted false aborted", "aborted true running")
	case "resume":
		return allow("started done")
	case "status-unknown-session":
		return allow("404 unknown_task")
	}
	panic("unknown op " + op)
}

// sseSession is one worker's session over POST /session/chat, /session/task and
// /session/abort.
type sseSession struct {
	t   *testing.T
	g   *hardening.Gateway
	hc  *http.Client
	h   *history
	sid string
	m   sseModel
}

func (s *sseSession) post(path, body string) (int, sessionMsg) {
	resp, err := s.hc.Post(s.g.Base+path, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, sessionMsg{Type: "transport error " + err.Error()}
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if l := hardening.Leaks(string(b)); len(l) != 0 {
		s.t.Errorf("%s: %s leaks %q: %s", s.sid, path, l, b)
	}
	var m sessionMsg
	if err := json.Unmarshal(b, &m); err != nil {
		m.Type = fmt.Sprintf("unreadable %.100q", b)
	}
	return resp.StatusCode, m
}

// chat starts a turn and reads its stream: until chat.started when stopAtStart (then the
// client goes away), else to its end; it returns the kinds seen after chat.accepted (no
// events) and the task id.
func (s *sseSession) chat(ctx context.Context, id, options string, stopAtStart bool) ([]string, string) {
	body := fmt.Sprintf(`{"id":%q,"type":"chat.start","payload":{"message":"count","sessionId":%q,"options":%s}}`, id, s.sid, options)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.g.Base+"/session/chat?route=count", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		return []string{"transport error"}, ""
	}
	defer func() { _ = resp.Body.Close() }()
	var kinds []string
	var task string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m sessionMsg
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			s.t.Errorf("%s: unreadable event %.200s", s.sid, data)
			continue
		}
		if m.ID != id {
			s.t.Errorf("%s: an event of %s on the stream of %s", s.sid, m.ID, id)
		}
		switch m.Type {
		case "chat.accepted":
			task, _ = m.Payload["taskId"].(string)
			continue
		case "chat.event":
			continue
		}
		kinds = append(kinds, sessionKind(m))
		if stopAtStart && m.Type == "chat.started" {
			return kinds, task
		}
	}
	return kinds, task
}

// TestSessionSSEResumeModel: HTTP+SSE sessions, one per worker, each cycle: a long turn
// whose client goes away once it started, task.status and chat.abort of it afterwards, a
// new turn on the same session (the resume), and task.status under an unknown session —
// while the reloader moves max_queued; checked against sseModel, then the baseline.
func TestSessionSSEResumeModel(t *testing.T) {
	rng, seed := seeded(t)
	g := hardening.Start(t, sessionConfig(sessionMaxQueued))
	h := newHistory(seed)
	hc := &http.Client{Transport: &http.Transport{}, Timeout: sessionWithin}
	warm := &sseSession{t: t, g: g, hc: hc, h: newHistory(seed), sid: "warm"}
	if kinds, _ := warm.chat(context.Background(), "rpc_warm", `{"to":2,"interval":"0.01s"}`, false); strings.Join(kinds, " ") != "started done" {
		t.Fatalf("warm-up turn: %v", kinds)
	}
	hc.CloseIdleConnections()
	base := hardening.Take(g.State.Len)
	t.Logf("baseline: %s", base)

	cycles := hardening.Iterations(t, 45)
	const workers = 3
	stop := make(chan struct{})
	reloads := reloader(t, g, fork(rng), []string{sessionConfig(sessionMaxQueued), sessionConfig(sessionMaxQueued + 1)}, stop)
	var wg sync.WaitGroup
	for w := range workers {
		r := fork(rng)
		s := &sseSession{t: t, g: g, hc: hc, h: h, sid: fmt.Sprintf("sse-%d-%d", w, r.IntN(1e6)), m: sseModel{state: "idle"}}
		wg.Go(func() {
			for c := range cycles / workers {
				if t.Failed() {
					return
				}
				s.cycle(c, r.IntN(50))
			}
		})
	}
	wg.Wait()
	close(stop)
	t.Logf("%d cycles, %d reloads", cycles, <-reloads)
	h.log(t)
	hc.CloseIdleConnections()
	base.Check(t, 20*time.Second, hardening.Slack{Goroutines: 4, FDs: 2})
}

func (s *sseSession) cycle(c, pauseMs int) {
	long := fmt.Sprintf("rpc_long%d", c)
	allowed := s.m.apply("start-long")
	ctx, cancel := context.WithCancel(context.Background())
	kinds, task := s.chat(ctx, long, `{"to":1000,"interval":"1s"}`, true)
	cancel() // the client goes away
	s.h.check(s.t, s.sid, "start-long", strings.Join(kinds, " "), allowed)
	time.Sleep(time.Duration(pauseMs) * time.Millisecond)

	allowed = s.m.apply("status-after-disconnect")
	_, st := s.post("/session/task", fmt.Sprintf(`{"id":"rpc_s%d","type":"task.status","payload":{"taskId":%q,"sessionId":%q}}`, c, task, s.sid))
	s.h.check(s.t, s.sid, "status-after-disconnect", fmt.Sprintf("state %v", st.Payload["state"]), allowed)

	allowed = s.m.apply("abort-after-disconnect")
	_, ab := s.post("/session/abort", fmt.Sprintf(`{"id":"rpc_a%d","type":"chat.abort","payload":{"requestId":%q,"sessionId":%q}}`, c, long, s.sid))
	s.h.check(s.t, s.sid, "abort-after-disconnect", fmt.Sprintf("aborted %v %v", ab.Payload["aborted"], ab.Payload["state"]), allowed)

	// Once aborted by the disconnect, the turn's status is final; an abort that found it
	// still running ends it as the call unwinds: the status says aborted within a bound.
	status := func() string {
		_, st := s.post("/session/task", fmt.Sprintf(`{"id":"rpc_s%d","type":"task.status","payload":{"taskId":%q,"sessionId":%q}}`, c, task, s.sid))
		return fmt.Sprintf("state %v", st.Payload["state"])
	}
	got := status()
	if ab.Payload["aborted"] == true {
		for deadline := time.Now().Add(sessionWithin); got == "state running" && time.Now().Before(deadline); got = status() {
			time.Sleep(20 * time.Millisecond)
		}
	}
	s.h.check(s.t, s.sid, "status-after-abort", got, allow("state aborted"))

	allowed = s.m.apply("resume")
	kinds, _ = s.chat(context.Background(), fmt.Sprintf("rpc_short%d", c), `{"to":2,"interval":"0.01s"}`, false)
	s.h.check(s.t, s.sid, "resume", strings.Join(kinds, " "), allowed)

	allowed = s.m.apply("status-unknown-session")
	code, un := s.post("/session/task", fmt.Sprintf(`{"id":"rpc_u%d","type":"task.status","payload":{"taskId":%q,"sessionId":"nobody-%d"}}`, c, task, c))
	s.h.check(s.t, s.sid, "status-unknown-session", fmt.Sprintf("%d %v", code, un.Payload["errorId"]), allowed)
}

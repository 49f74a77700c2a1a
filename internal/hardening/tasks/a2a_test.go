package tasks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/hardening"
)

// a2aTaskTTL is a2a.task_ttl: short, so that a run's records are gone before its baseline
// check (the NEKTE task's own record follows nekte.tasks.record_ttl, shorter).
const a2aTaskTTL = 2 * time.Second

// a2aConfig serves the demo methods as skills, each call taking 150ms, to two subjects.
var a2aConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
` + jwtAuth + `routing:
  demo: {delay: 150ms}
nekte:
  tasks: {record_ttl: ` + nekteRecordTTL.String() + `, poll_interval: 50ms}
a2a: {task_ttl: ` + a2aTaskTTL.String() + `}
`

// The A2A error codes the model expects (docs/a2a.md, Errors).
const (
	a2aTaskNotFound         = -32001
	a2aTaskNotCancelable    = -32002
	a2aUnsupportedOperation = -32004
)

// a2aStates maps the A2A task states onto NEKTE's (docs/a2a.md, How a task runs).
var a2aStates = map[string]state{
	"TASK_STATE_SUBMITTED": accepted, "TASK_STATE_WORKING": running, "TASK_STATE_COMPLETED": completed,
	"TASK_STATE_FAILED": failed, "TASK_STATE_CANCELED": cancelled,
}

// a2aOp is one A2A operation on a task and its outcome: the task's state it answered
// (get, cancel), the first and last states a subscription streamed, or an error code.
type a2aOp struct {
	kind      string // get, cancel, subscribe, send (SendMessage naming the task), other, unknown
	st, first state
	code      int
	raw       string
}

func (o a2aOp) String() string {
	if o.code != 0 {
		return fmt.Sprintf("%s → error %d", o.kind, o.code)
	}
	if o.kind == "subscribe" {
		return fmt.Sprintf("subscribe → %s … %s", o.first, o.st)
	}
	return fmt.Sprintf("%s → %s", o.kind, o.st)
}

func terminalOf(may stateSet) stateSet {
	out := stateSet{}
	for x := range may {
		if x.terminal() {
			out[x] = true
		}
	}
	return out
}

// a2aApply checks o's outcome against a task that may be in any state of may.
func a2aApply(m *taskModel, may stateSet, o a2aOp) (stateSet, error) {
	if o.kind == "other" || o.kind == "unknown" {
		if o.code != a2aTaskNotFound {
			return nil, fmt.Errorf("%s: another caller's or an unknown task must be TaskNotFound (%s)", o, o.raw)
		}
		return may, nil
	}
	if o.code == a2aTaskNotFound && m.expiring {
		return setOf(gone), nil
	}
	if may[gone] && len(may) == 1 && o.kind == "send" && o.code == a2aUnsupportedOperation {
		return may, nil // the A2A record (a2a.task_ttl from creation) may outlive the NEKTE task's
	}
	if may[gone] && len(may) == 1 {
		return nil, fmt.Errorf("%s: the task's record has expired, every call must be TaskNotFound", o)
	}
	switch o.kind {
	case "get":
		if o.code != 0 || !may[o.st] {
			return nil, fmt.Errorf("%s: the task may be %s (%s)", o, may, o.raw)
		}
		return m.closure(setOf(o.st)), nil
	case "send":
		if o.code != a2aUnsupportedOperation {
			return nil, fmt.Errorf("%s: a message naming a task is UnsupportedOperation (%s)", o, o.raw)
		}
		return may, nil
	case "cancel":
		ended := terminalOf(may)
		switch {
		case o.code == 0 && o.st == cancelled && len(ended) < len(may):
			return setOf(cancelled), nil
		case o.code == a2aTaskNotCancelable && len(ended) > 0:
			return ended, nil
		}
		return nil, fmt.Errorf("%s: the task may be %s (%s)", o, may, o.raw)
	case "subscribe":
		ended := terminalOf(may)
		switch {
		case o.code == a2aUnsupportedOperation && len(ended) > 0:
			return ended, nil
		case o.code == 0 && may[o.first] && !o.first.terminal() && m.closure(setOf(o.first))[o.st] && o.st.terminal():
			return setOf(o.st), nil
		case o.code == 0 && may[o.first] && o.first.terminal() && o.st == o.first:
			// the task ended between the subscription's check and its first event
			return setOf(o.st), nil
		}
		return nil, fmt.Errorf("%s: the task may be %s (%s)", o, may, o.raw)
	}
	return nil, fmt.Errorf("unknown operation %q", o.kind)
}

// a2aRace checks two operations that ran at the same time: some order must explain both.
func a2aRace(m *taskModel, may stateSet, a, b a2aOp) (stateSet, error) {
	out := stateSet{}
	var errs []error
	for _, order := range [][2]a2aOp{{a, b}, {b, a}} {
		s1, err := a2aApply(m, may, order[0])
		if err == nil {
			var s2 stateSet
			if s2, err = a2aApply(m, m.closure(s1), order[1]); err == nil {
				for x := range s2 {
					out[x] = true
				}
				continue
			}
		}
		errs = append(errs, err)
	}
	if len(out) == 0 {
		// A subscription spans the cancel: it saw the task before it and its end after.
		for _, pair := range [][2]a2aOp{{a, b}, {b, a}} {
			c, sub := pair[0], pair[1]
			if c.kind != "cancel" || sub.kind != "subscribe" || sub.code != 0 || !may[sub.first] {
				continue
			}
			if after, err := a2aApply(m, may, c); err == nil && after[sub.st] {
				return setOf(sub.st), nil
			}
		}
		return nil, fmt.Errorf("no order explains the race: %w", errors.Join(errs...))
	}
	return out, nil
}

// a2aClient calls the A2A face (1.0 binding) for one subject.
type a2aClient struct {
	p     *poster
	token string
}

func a2aRequest(method string, params any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	return string(b)
}

func a2aMessage(skill, data, taskID string) map[string]any {
	msg := map[string]any{"messageId": "m-" + skill, "role": "ROLE_USER", "parts": []any{map[string]any{"data": json.RawMessage(data)}},
		"metadata": map[string]any{"skill": skill}}
	if taskID != "" {
		msg["taskId"] = taskID
	}
	return map[string]any{"message": msg, "configuration": map[string]any{"returnImmediately": true}}
}

// taskState decodes a JSON-RPC answer whose result is {"task": …} or the task itself.
func taskState(body []byte) (state, int, error) {
	var r reply
	if err := json.Unmarshal(body, &r); err != nil {
		return "", 0, fmt.Errorf("%s: %w", body, err)
	}
	if r.Error != nil {
		if l := hardening.Leaks(r.Error.Message + string(r.Error.Data)); len(l) > 0 {
			return "", 0, fmt.Errorf("%s leaks %q", body, l)
		}
		return "", r.Error.Code, nil
	}
	var res struct {
		Task *struct {
			Status struct{ State string } `json:"status"`
		} `json:"task"`
		StatusUpdate *struct {
			Status struct{ State string } `json:"status"`
		} `json:"statusUpdate"`
		ArtifactUpdate json.RawMessage        `json:"artifactUpdate"`
		Status         struct{ State string } `json:"status"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return "", 0, fmt.Errorf("%s: %w", body, err)
	}
	if res.ArtifactUpdate != nil {
		return "", 0, nil // no state: the caller skips it
	}
	name := res.Status.State
	switch {
	case res.Task != nil:
		name = res.Task.Status.State
	case res.StatusUpdate != nil:
		name = res.StatusUpdate.Status.State
	}
	s, ok := a2aStates[name]
	if !ok {
		return "", 0, fmt.Errorf("unknown task state %q in %s", name, body)
	}
	return s, 0, nil
}

func (c *a2aClient) simple(kind, method string, params any) (a2aOp, error) {
	_, body, err := c.p.post(a2aRequest(method, params), c.token, false)
	if err != nil {
		return a2aOp{}, err
	}
	o := a2aOp{kind: kind, raw: string(body)}
	o.st, o.code, err = taskState(body)
	return o, err
}

// subscribe reads SubscribeToTask's stream to its end: the first and the last state.
func (c *a2aClient) subscribe(kind, id string) (a2aOp, error) {
	req, _ := http.NewRequest(http.MethodPost, c.p.url, strings.NewReader(a2aRequest("SubscribeToTask", map[string]any{"id": id})))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("A2A-Version", "1.0")
	resp, err := c.p.c.Do(req)
	if err != nil {
		return a2aOp{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	o := a2aOp{kind: kind}
	var buf bytes.Buffer
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	n := 0
	for sc.Scan() {
		line := sc.Bytes()
		if resp.Header.Get("Content-Type") != "text/event-stream" {
			buf.Write(line)
			continue
		}
		d, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		s, code, err := taskState(d)
		if err != nil {
			return o, err
		}
		if code != 0 {
			o.code = code
			return o, nil
		}
		if s == "" {
			continue
		}
		if n == 0 {
			o.first = s
		} else if (o.st.terminal() && s != o.st) || (o.st != accepted && s == accepted) {
			return o, fmt.Errorf("subscription moved %s → %s", o.st, s) // never back, never out of an end
		}
		o.st = s
		n++
	}
	if err := sc.Err(); err != nil {
		return o, err
	}
	if buf.Len() > 0 {
		o.raw = buf.String()
		_, o.code, err = taskState(buf.Bytes())
		return o, err
	}
	if n == 0 {
		return o, errors.New("an empty subscription")
	}
	return o, nil
}

// TestA2ATaskModel drives A2A tasks with GetTask, CancelTask racing the task's end and each
// other, SubscribeToTask before and after the end, SendMessage naming an existing task,
// and another caller's and unknown ids, checking each answer against the task model; a
// reload runs all the while.
func TestA2ATaskModel(t *testing.T) {
	g := hardening.Start(t, a2aConfig)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	defer hc.CloseIdleConnections()
	p := &poster{c: hc, url: g.Base + "/a2a", hdr: map[string]string{"A2A-Version": "1.0"}}
	alice, bob := &a2aClient{p: p, token: token(t, "alice")}, &a2aClient{p: p, token: token(t, "bob")}
	if _, body, err := p.post(a2aRequest("SendMessage", a2aMessage("get_data", `{}`, "")), alice.token, false); err != nil {
		t.Fatalf("warm-up: %v %s", err, body)
	}
	hc.CloseIdleConnections()
	base := hardening.Take(func() int { return g.State.Len() })
	t.Log(base)

	r, h := seeded(t)
	var tally counts
	runs := hardening.Iterations(t, 3)
	const workers, tasksPerWorker = 4, 4
	for run := range runs {
		stop := reloader(t, g, a2aConfig)
		seeds := make([]uint64, workers)
		for i := range seeds {
			seeds[i] = r.Uint64()
		}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				wr := rand.New(rand.NewPCG(seeds[w], uint64(w)))
				for range tasksPerWorker {
					if err := a2aTask(wr, alice, bob, h, &tally); err != nil {
						t.Errorf("run %d: %v\n%s", run, err, h)
						return
					}
				}
			})
		}
		wg.Wait()
		reloads := stop()
		if t.Failed() {
			return
		}
		t.Logf("run %d: %d reloads", run, reloads)
		hc.CloseIdleConnections()
		base.Check(t, a2aTaskTTL+15*time.Second, hardening.Slack{Goroutines: 4, FDs: 4})
	}
	t.Logf("outcomes over %d runs: %s", runs, tally.String())
}

// a2aTask starts one task and runs 2–7 operations on it, some racing, then cancels it if
// it has not ended and reads it until it has.
func a2aTask(r *rand.Rand, alice, bob *a2aClient, h *history, tally *counts) error {
	m, in := &taskModel{ends: completed}, `{"minuend":5,"subtrahend":3}`
	if r.IntN(4) == 0 {
		m.ends, in = failed, `{"minuend":"five","subtrahend":3}`
	}
	started := time.Now()
	_, body, err := alice.p.post(a2aRequest("SendMessage", a2aMessage("subtract", in, "")), alice.token, false)
	if err != nil {
		return err
	}
	var res struct {
		Result struct {
			Task struct {
				ID     string
				Status struct{ State string }
			}
		}
	}
	if err := json.Unmarshal(body, &res); err != nil || res.Result.Task.ID == "" {
		return fmt.Errorf("SendMessage: %s (%w)", body, err)
	}
	id := res.Result.Task.ID
	s0, ok := a2aStates[res.Result.Task.Status.State]
	if !ok {
		return fmt.Errorf("SendMessage: state %q", res.Result.Task.Status.State)
	}
	may := m.closure(setOf(s0))
	h.addf("%s send (%s) → %s", id, m.ends, s0)
	one := func(kind string) (a2aOp, error) {
		switch kind {
		case "get":
			return alice.simple(kind, "GetTask", map[string]any{"id": id})
		case "cancel":
			return alice.simple(kind, "CancelTask", map[string]any{"id": id})
		case "subscribe":
			return alice.subscribe(kind, id)
		case "send":
			return alice.simple(kind, "SendMessage", a2aMessage("subtract", in, id))
		case "unknown":
			return alice.simple(kind, "GetTask", map[string]any{"id": id + "x"})
		default: // another caller, any operation
			switch r.IntN(4) {
			case 0:
				return bob.simple(kind, "CancelTask", map[string]any{"id": id})
			case 1:
				return bob.subscribe(kind, id)
			case 2:
				return bob.simple(kind, "SendMessage", a2aMessage("subtract", in, id))
			}
			return bob.simple(kind, "GetTask", map[string]any{"id": id})
		}
	}
	kinds := []string{"get", "cancel", "subscribe", "send", "other", "unknown"}
	for range 2 + r.IntN(6) {
		time.Sleep(time.Duration(r.IntN(60)) * time.Millisecond)
		if r.IntN(3) == 0 { // cancel racing something (and the task's own end)
			kb := kinds[r.IntN(3)]
			var a, b a2aOp
			var ea, eb error
			var wg sync.WaitGroup
			wg.Go(func() { a, ea = one("cancel") })
			wg.Go(func() { b, eb = one(kb) })
			wg.Wait()
			if err := errors.Join(ea, eb); err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			m.expiring = time.Since(started) > nekteRecordTTL
			h.addf("%s race: %s | %s", id, a, b)
			tally.inc("race cancel/" + kb)
			if may, err = a2aRace(m, may, a, b); err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			continue
		}
		o, err := one(kinds[r.IntN(len(kinds))])
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		m.expiring = time.Since(started) > nekteRecordTTL
		h.addf("%s %s", id, o)
		tally.inc(fmt.Sprintf("%s %d", o.kind, o.code))
		if may, err = a2aApply(m, may, o); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
	}
	for _, kind := range []string{"cancel", "subscribe"} { // end it, then see it ended
		o, err := one(kind)
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		m.expiring = time.Since(started) > nekteRecordTTL
		h.addf("%s final %s", id, o)
		if may, err = a2aApply(m, may, o); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
	}
	for x := range may {
		if !x.terminal() && x != gone {
			return fmt.Errorf("%s: not ended after a cancel: %s", id, may)
		}
		tally.inc("ended " + string(x))
	}
	return nil
}

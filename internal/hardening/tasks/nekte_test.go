package tasks

import (
	"bufio"
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

// nekteRecordTTL is how long a finished task's record is kept: short, so that a run's
// records are gone before its baseline check.
const nekteRecordTTL = time.Second

// nekteConfig runs the demo methods as capabilities, each call taking 150ms, so that moves
// race the end of a run; two subjects authenticate with bearer JWTs.
var nekteConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
` + jwtAuth + `routing:
  demo: {delay: 150ms}
nekte:
  tasks: {record_ttl: ` + nekteRecordTTL.String() + `, poll_interval: 50ms}
`

// nekteClient calls the NEKTE face for one subject.
type nekteClient struct {
	p     *poster
	token string
}

// call sends method with params and decodes the answer into an op of kind.
func (c *nekteClient) call(kind, method string, params any) (op, error) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	_, body, err := c.p.post(string(b), c.token, false)
	if err != nil {
		return op{}, err
	}
	var r reply
	if err := json.Unmarshal(body, &r); err != nil {
		return op{}, fmt.Errorf("%s: %w", body, err)
	}
	o := op{kind: kind, raw: string(body)}
	if r.Error != nil {
		o.errCode = r.Error.Code
		var d struct {
			Status state `json:"status"`
		}
		_ = json.Unmarshal(r.Error.Data, &d)
		o.errStatus = d.Status
		if l := hardening.Leaks(r.Error.Message + string(r.Error.Data)); len(l) > 0 {
			return o, fmt.Errorf("%s leaks %q", body, l)
		}
		return o, nil
	}
	var res struct {
		Status   state `json:"status"`
		Previous state `json:"previous_status"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return o, fmt.Errorf("%s: %w", body, err)
	}
	o.okStatus, o.prev = res.Status, res.Previous
	return o, nil
}

// delegation is a delegate call's stream, read in the background.
type delegation struct {
	started chan struct{} // closed at the first event
	done    chan struct{} // closed when the stream ends
	events  [][2]string
	refused *rpcError // a refusal before the stream (a plain JSON-RPC answer)
	err     error
}

func (c *nekteClient) delegate(id, capID, in string) *delegation {
	d := &delegation{started: make(chan struct{}), done: make(chan struct{})}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"nekte.delegate","params":{"task":{"id":%q,"desc":"level 3","cap":%q,"in":%s}}}`, id, capID, in)
	go func() {
		defer close(d.done)
		startedOnce := sync.OnceFunc(func() { close(d.started) })
		defer startedOnce()
		req, _ := http.NewRequest(http.MethodPost, c.p.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := c.p.c.Do(req)
		if err != nil {
			d.err = err
			return
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.Header.Get("Content-Type") != "text/event-stream" {
			var r reply
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Error == nil {
				d.err = fmt.Errorf("delegate answered %s without an error (%w)", resp.Header.Get("Content-Type"), err)
			}
			d.refused = r.Error
			return
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		name := ""
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				d.events = append(d.events, [2]string{name, v})
				startedOnce()
			}
		}
		d.err = sc.Err()
	}()
	return d
}

// final checks a finished delegate stream against the state machine: every status_change
// is an allowed move from the state the previous one reached, nothing follows a terminal
// state, and the stream ends with the event of its final state. It returns that state.
func (d *delegation) final() (state, error) {
	if d.err != nil {
		return "", d.err
	}
	cur, last := state(""), ""
	for i, ev := range d.events {
		if last != "" && cur.terminal() {
			return "", fmt.Errorf("event %d %s after the final event %s", i, ev, last)
		}
		if ev[0] == "status_change" {
			var sc struct {
				From, To state
			}
			if err := json.Unmarshal([]byte(ev[1]), &sc); err != nil {
				return "", err
			}
			if cur.terminal() {
				return "", fmt.Errorf("move %s → %s after the terminal state %s", sc.From, sc.To, cur)
			}
			if (cur == "" && sc.From != pending) || (cur != "" && sc.From != cur) || !allowedMove(sc.From, sc.To) {
				return "", fmt.Errorf("move %s → %s after %q is not allowed", sc.From, sc.To, cur)
			}
			cur = sc.To
			continue
		}
		want := map[string]state{"complete": completed, "error": failed, "cancelled": cancelled}[ev[0]]
		if want != "" {
			if want != cur {
				return "", fmt.Errorf("event %s while %s", ev[0], cur)
			}
			last = ev[0]
		} else if cur.terminal() {
			return "", fmt.Errorf("event %d %s after the terminal state %s", i, ev, cur)
		}
	}
	want := map[state]string{completed: "complete", failed: "error", cancelled: "cancelled"}[cur]
	if want == "" || last != want {
		return "", fmt.Errorf("the stream ended in %q with event %q", cur, last)
	}
	return cur, nil
}

// TestNekteTaskModel drives delegated tasks with interleaved and racing status, cancel,
// suspend and resume calls, duplicate ids, unknown ids and another subject's calls, and
// checks each answer against taskModel; a reload runs all the while.
func TestNekteTaskModel(t *testing.T) {
	g := hardening.Start(t, nekteConfig)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	defer hc.CloseIdleConnections()
	p := &poster{c: hc, url: g.Base + "/rpc"}
	alice, bob := &nekteClient{p: p, token: token(t, "alice")}, &nekteClient{p: p, token: token(t, "bob")}

	warm := alice.delegate("warm", "subtract", `{"minuend":1,"subtrahend":1}`)
	<-warm.done
	if s, err := warm.final(); err != nil || s != completed {
		t.Fatalf("warm-up task: %s %v", s, err)
	}
	hc.CloseIdleConnections()
	base := hardening.Take(func() int { return g.State.Len() })
	t.Log(base)

	r, h := seeded(t)
	var tally counts
	runs := hardening.Iterations(t, 4)
	const workers, tasksPerWorker = 4, 4
	for run := range runs {
		stop := reloader(t, g, nekteConfig)
		seeds := make([]uint64, workers)
		for i := range seeds {
			seeds[i] = r.Uint64()
		}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				wr := rand.New(rand.NewPCG(seeds[w], uint64(w)))
				for n := range tasksPerWorker {
					if err := nekteTask(wr, fmt.Sprintf("r%d-w%d-%d", run, w, n), alice, bob, h, &tally); err != nil {
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
		base.Check(t, nekteRecordTTL+15*time.Second, hardening.Slack{Goroutines: 4, FDs: 4})
	}
	t.Logf("outcomes over %d runs: %s", runs, tally.String())
}

// nekteTask delegates one task and runs 2–8 operations on it, some racing, then cancels
// it if it has not ended and checks its stream.
func nekteTask(r *rand.Rand, id string, alice, bob *nekteClient, h *history, tally *counts) error {
	good := r.IntN(4) > 0
	in := `{"minuend":5,"subtrahend":3}`
	m := &taskModel{ends: completed}
	if !good {
		in, m.ends = `{"minuend":"five","subtrahend":3}`, failed
	}
	started := time.Now()
	d := alice.delegate(id, "subtract", in)
	select {
	case <-d.started:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s: no event within 30s", id)
	}
	select {
	case <-d.done: // a task that ended at once, or a refusal
		if d.refused != nil || (d.err != nil && len(d.events) == 0) {
			return fmt.Errorf("%s: delegate refused: %+v %w", id, d.refused, d.err)
		}
	default:
	}
	h.addf("%s delegate (%s)", id, m.ends)
	may := m.closure(setOf(accepted))
	kinds := []string{"status", "cancel", "suspend", "resume", "delegate", "other", "unknown"}
	one := func(kind string) (op, error) {
		switch kind {
		case "status":
			return alice.call(kind, "nekte.task.status", map[string]any{"task_id": id})
		case "cancel":
			return alice.call(kind, "nekte.task.cancel", map[string]any{"task_id": id, "reason": "level 3"})
		case "suspend":
			return alice.call(kind, "nekte.task.suspend", map[string]any{"task_id": id})
		case "resume":
			return alice.call(kind, "nekte.task.resume", map[string]any{"task_id": id})
		case "other":
			method := []string{"nekte.task.status", "nekte.task.cancel", "nekte.task.suspend", "nekte.task.resume", "nekte.task.stream"}[r.IntN(5)]
			return bob.call(kind, method, map[string]any{"task_id": id})
		case "unknown":
			o, err := alice.call(kind, "nekte.task.status", map[string]any{"task_id": id + "-unknown"})
			o.kind = "other" // the same answer as another subject's task
			return o, err
		default: // a duplicate delegate while the record is surely kept
			dup := alice.delegate(id, "subtract", in)
			<-dup.done
			o := op{kind: "delegate"}
			if dup.refused != nil {
				o.errCode, o.raw = dup.refused.Code, dup.refused.Message
			} else {
				o.raw = fmt.Sprintf("a stream of %d events (%v)", len(dup.events), dup.err)
			}
			return o, nil
		}
	}
	for range 2 + r.IntN(7) {
		time.Sleep(time.Duration(r.IntN(50)) * time.Millisecond)
		if r.IntN(3) == 0 { // two moves racing
			ka, kb := kinds[1+r.IntN(3)], kinds[1+r.IntN(3)]
			var a, b op
			var ea, eb error
			var wg sync.WaitGroup
			wg.Go(func() { a, ea = one(ka) })
			wg.Go(func() { b, eb = one(kb) })
			wg.Wait()
			if ea != nil || eb != nil {
				return fmt.Errorf("%s: %w", id, errors.Join(ea, eb))
			}
			m.expiring = time.Since(started) > nekteRecordTTL // measured once both have answered
			h.addf("%s race: %s | %s", id, a, b)
			tally.inc("race " + a.kind + "/" + b.kind)
			next, err := m.applyRace(may, a, b)
			if err != nil {
				return fmt.Errorf("%s from %s: %w", id, may, err)
			}
			may = next
			continue
		}
		kind := kinds[r.IntN(len(kinds))]
		if kind == "delegate" && time.Since(started) > nekteRecordTTL/2 {
			kind = "status" // the record may be gone: a duplicate id would be a new task
		}
		o, err := one(kind)
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		m.expiring = time.Since(started) > nekteRecordTTL
		h.addf("%s %s", id, o)
		tally.inc(outcomeName(o))
		next, err := m.apply(may, o)
		if err != nil {
			return fmt.Errorf("%s from %s: %w", id, may, err)
		}
		may = next
	}
	// End it: cancel it if it has not ended (a run ends by itself at any moment).
	o, err := alice.call("cancel", "nekte.task.cancel", map[string]any{"task_id": id})
	if err != nil {
		return err
	}
	m.expiring = time.Since(started) > nekteRecordTTL
	h.addf("%s final %s", id, o)
	if may, err = m.apply(may, o); err != nil {
		return fmt.Errorf("%s final cancel: %w", id, err)
	}
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s: the delegate stream did not end within 30s of the task's end", id)
	}
	fin, err := d.final()
	if err != nil {
		return fmt.Errorf("%s stream: %w (events %q)", id, err, d.events)
	}
	if !may[fin] && !may[gone] {
		return fmt.Errorf("%s: the stream ended %s, the model allows %s", id, fin, may)
	}
	tally.inc("ended " + string(fin))
	return nil
}

func outcomeName(o op) string {
	if o.errCode != 0 {
		return fmt.Sprintf("%s %d", o.kind, o.errCode)
	}
	return o.kind + " ok"
}

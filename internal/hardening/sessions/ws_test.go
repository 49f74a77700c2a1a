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

// wsMaxInFlight is websocket.max_in_flight; the reloader moves it to one more and back.
const wsMaxInFlight = 4

func wsConfig(maxInFlight int) string {
	return fmt.Sprintf(`server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  demo_grpc: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
websocket: {max_in_flight: %d, ping_interval: 30s}
auth:
  anonymous: {}
routing:
  demo: {}
  grpc:
    - name: calculator
      address: 127.0.0.1:0
      descriptors: {reflection: true}
      services:
        - {service: calculator.v1.CalculatorService, prefix: "calc.", naming: snake}
      unwrap: {calc.subtract: result}
`, maxInFlight)
}

// wsState is a connection's state in the model.
type wsState int

const (
	wsOpen    wsState = iota
	wsClosing         // the client sent its close frame
	wsClosed          // the connection ended
)

// wsModel is one connection: its state, and bounds on how many of its calls the gateway
// holds — upper counts every call sent and not answered (and every notification sent),
// lower the holds (long streams)
// known to run (their first message came) and not cancelled. max_in_flight is between
// limitLo and limitHi while the reloader moves it.
type wsModel struct {
	state            wsState
	upper, lower     int
	limitLo, limitHi int
}

// apply returns what a call sent now may get: a call the gateway must admit (fewer than
// limitLo calls can be in flight) is answered; one it must refuse (limitHi are known to
// run) is 5002; between, either.
func (m *wsModel) apply(op string) outcomes {
	if m.state != wsOpen {
		return allow("no answer")
	}
	switch op {
	case "call":
		switch {
		case m.lower >= m.limitHi:
			return allow("error 5002")
		case m.upper < m.limitLo:
			return allow("result")
		}
		return allow("result", "error 5002")
	case "hold":
		switch {
		case m.lower >= m.limitHi:
			return allow("error 5002")
		case m.upper < m.limitLo:
			return allow("running")
		}
		return allow("running", "error 5002")
	case "cancel-race":
		// The short stream ends by itself or by the cancel; refused when full.
		if m.lower >= m.limitHi {
			return allow("error 5002")
		}
		return allow("result", "cancelled", "error 5002")
	case "cancel":
		return allow("cancelled")
	}
	panic("unknown op " + op)
}

// wsAnswer is the one answer a request got.
type wsAnswer struct {
	kind string // "result", "error <code>"
	raw  string
}

// wsConn is one connection under test: requests by id, the answers and stream messages
// its reader saw.
type wsConn struct {
	t    *testing.T
	name string
	c    *websocket.Conn
	h    *history
	m    *wsModel
	r    *rand.Rand

	mu       sync.Mutex
	next     int
	waiting  map[int]chan wsAnswer // sent, not answered
	answered map[int]bool
	streamed map[int]chan struct{} // first $/stream message of a call
	pongs    chan string
	done     chan struct{} // the reader ended
	noAnswer map[int]bool  // sent after the client's close frame: never to be answered
}

func dialWSConn(t *testing.T, g *hardening.Gateway, name string, h *history, m *wsModel, r *rand.Rand) *wsConn {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(g.Base, "http")+"/ws", nil)
	if err != nil {
		t.Fatalf("dial /ws: %v", err)
	}
	_ = resp.Body.Close()
	w := &wsConn{t: t, name: name, c: c, h: h, m: m, r: r, waiting: map[int]chan wsAnswer{}, answered: map[int]bool{},
		streamed: map[int]chan struct{}{}, pongs: make(chan string, 16), done: make(chan struct{}), noAnswer: map[int]bool{}}
	c.SetPongHandler(func(data string) error {
		select {
		case w.pongs <- data:
		default:
		}
		return nil
	})
	go w.read()
	return w
}

// read dispatches every message: an answer to the one request waiting for it (a second
// answer, or one to a request never sent or sent after the close frame, fails the test),
// a $/stream message to its call.
func (w *wsConn) read() {
	defer close(w.done)
	for {
		_, data, err := w.c.ReadMessage()
		if err != nil {
			return
		}
		var msg struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Error  *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &msg); err != nil {
			w.t.Errorf("%s: unreadable message %.200s", w.name, data)
			continue
		}
		if msg.Method != "" {
			var p struct {
				ID int `json:"id"`
			}
			_ = json.Unmarshal(msg.Params, &p)
			w.mu.Lock()
			if ch := w.streamed[p.ID]; ch != nil && msg.Method == "$/stream" {
				close(ch)
				delete(w.streamed, p.ID)
			}
			w.mu.Unlock()
			continue
		}
		if l := hardening.Leaks(string(data)); len(l) != 0 {
			w.t.Errorf("%s: an answer leaks %q: %.300s", w.name, l, data)
		}
		a := wsAnswer{kind: "result", raw: string(data)}
		if msg.Error != nil {
			a.kind = fmt.Sprintf("error %d", msg.Error.Code)
		}
		if msg.ID == nil {
			w.t.Errorf("%s: an answer without an id: %.200s", w.name, data)
			continue
		}
		w.mu.Lock()
		ch, ok := w.waiting[*msg.ID]
		switch {
		case w.noAnswer[*msg.ID]:
			w.t.Errorf("%s: request %d, sent after the client's close frame, was answered: %.200s (replay: %s=%d)", w.name, *msg.ID, data, seedEnv, w.h.seed)
		case w.answered[*msg.ID]:
			w.t.Errorf("%s: request %d answered twice: %.200s (replay: %s=%d)", w.name, *msg.ID, data, seedEnv, w.h.seed)
		case !ok:
			w.t.Errorf("%s: an answer to request %d, never sent: %.200s", w.name, *msg.ID, data)
		}
		w.answered[*msg.ID] = true
		delete(w.waiting, *msg.ID)
		w.mu.Unlock()
		if ok {
			ch <- a
		}
	}
}

// send writes one request and returns its id and where its answer will come.
func (w *wsConn) send(method, params string) (int, chan wsAnswer, chan struct{}) {
	w.mu.Lock()
	w.next++
	id := w.next
	ch, st := make(chan wsAnswer, 1), make(chan struct{})
	w.waiting[id] = ch
	w.streamed[id] = st
	w.mu.Unlock()
	if err := w.c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)); err != nil {
		w.t.Errorf("%s: send %s: %v", w.name, method, err)
	}
	return id, ch, st
}

const wsAnswerWithin = 30 * time.Second

// await is the answer of a request: every request sent while the connection is open gets
// exactly one, or the connection ends.
func (w *wsConn) await(op string, ch chan wsAnswer) wsAnswer {
	select {
	case a := <-ch:
		return a
	case <-w.done:
		return wsAnswer{kind: "connection ended"}
	case <-time.After(wsAnswerWithin):
		return wsAnswer{kind: "no answer within " + wsAnswerWithin.String()}
	}
}

type wsHold struct {
	id      int
	ch      chan wsAnswer
	running bool
}

// TestWebSocketModel: connections to /ws run interleaved operations — calls, long
// streams that hold slots, calls at max_in_flight ± 1, $/cancelRequest of a running
// stream and racing a short one's completion, notifications, pings — and end by a close
// frame followed by more frames, or by dropping the TCP connection with calls in flight,
// while the reloader moves max_in_flight; every answer is checked against wsModel, every
// request gets exactly one answer (none after the close frame), and goroutines, open files
// and state keys come back to the baseline.
func TestWebSocketModel(t *testing.T) {
	rng, seed := seeded(t)
	g := hardening.Start(t, wsConfig(wsMaxInFlight))
	h := newHistory(seed)
	warm := dialWSConn(t, g, "warm", newHistory(seed), &wsModel{limitLo: wsMaxInFlight, limitHi: wsMaxInFlight + 1}, fork(rng))
	if _, ch, _ := warm.send("calc.subtract", `{"minuend":5,"subtrahend":3}`); warm.await("call", ch).kind != "result" {
		t.Fatal("no answer from calc.subtract")
	}
	_ = warm.c.Close()
	<-warm.done
	base := hardening.Take(g.State.Len)
	t.Logf("baseline: %s", base)

	ops := hardening.Iterations(t, 300)
	const workers = 3
	stop := make(chan struct{})
	reloads := reloader(t, g, fork(rng), []string{wsConfig(wsMaxInFlight), wsConfig(wsMaxInFlight + 1)}, stop)
	var wg sync.WaitGroup
	for n := range workers {
		r := fork(rng)
		wg.Go(func() {
			left := ops / workers
			for c := 0; left > 0 && !t.Failed(); c++ {
				per := 5 + r.IntN(20)
				left -= per
				wsConnection(t, g, fmt.Sprintf("w%d.%d", n, c), h, r, per)
			}
		})
	}
	wg.Wait()
	close(stop)
	t.Logf("%d operations, %d reloads", ops, <-reloads)
	h.log(t)
	base.Check(t, 20*time.Second, hardening.Slack{Goroutines: 4, FDs: 2})
}

// wsConnection runs one connection's life: per operations, then its end.
func wsConnection(t *testing.T, g *hardening.Gateway, name string, h *history, r *rand.Rand, per int) {
	m := &wsModel{limitLo: wsMaxInFlight, limitHi: wsMaxInFlight + 1}
	w := dialWSConn(t, g, name, h, m, r)
	var holds []*wsHold
	for range per {
		switch op := []string{"call", "call", "hold", "hold", "cancel", "cancel-race", "notify", "ping", "full"}[r.IntN(9)]; op {
		case "call":
			allowed := m.apply(op)
			m.upper++
			_, ch, _ := w.send("calc.subtract", `{"minuend":5,"subtrahend":3}`)
			a := w.await(op, ch)
			m.upper--
			if h.check(t, name, op, a.kind, allowed) && a.kind == "result" && !strings.Contains(a.raw, `"result":2`) {
				t.Errorf("%s: calc.subtract 5-3: %s", name, a.raw)
			}
		case "hold", "full":
			// full: fill the connection up to the upper limit, then one more.
			n := 1
			if op == "full" {
				n = max(1, m.limitHi+1-m.upper)
			}
			for range n {
				allowed := m.apply("hold")
				m.upper++
				id, ch, st := w.send("calc.count", `{"from":1,"to":1000,"interval":"1s"}`)
				var got string
				select {
				case <-st:
					got = "running"
				case a := <-ch:
					got = a.kind
					m.upper--
					if !allowed.has(got) {
						t.Logf("%s hold: answer %s (model: %+v)", name, a.raw, *m)
					}
				case <-time.After(wsAnswerWithin):
					got = "neither a stream message nor an answer"
				}
				h.check(t, name, "hold", got, allowed)
				if got == "running" {
					m.lower++
					holds = append(holds, &wsHold{id: id, ch: ch, running: true})
				}
			}
		case "cancel":
			if len(holds) == 0 {
				continue
			}
			i := r.IntN(len(holds))
			hd := holds[i]
			holds = append(holds[:i], holds[i+1:]...)
			_, cch, _ := w.send("$/cancelRequest", fmt.Sprintf(`{"id":%d}`, hd.id))
			h.check(t, name, "cancel-answer", w.await(op, cch).kind, allow("result"))
			m.lower--
			a := w.await(op, hd.ch)
			m.upper--
			h.check(t, name, op, classifyCancelled(a), m.apply(op))
		case "cancel-race":
			allowed := m.apply(op)
			m.upper++
			id, ch, _ := w.send("calc.count", `{"from":1,"to":3,"interval":"0.01s"}`)
			time.Sleep(time.Duration(r.IntN(40)) * time.Millisecond)
			_, cch, _ := w.send("$/cancelRequest", fmt.Sprintf(`{"id":%d}`, id))
			// true when it was still in flight, -32602 when it had ended.
			h.check(t, name, "cancel-race-answer", w.await(op, cch).kind, allow("result", "error -32602"))
			a := w.await(op, ch)
			m.upper--
			h.check(t, name, op, classifyCancelled(a), allowed)
		case "notify":
			if err := w.c.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","method":"notify_hello","params":["x"]}`)); err != nil {
				t.Errorf("%s: notify: %v", name, err)
			}
			// A notification holds a slot while it runs, and the client cannot see it end:
			// from now on the model counts it in upper for the rest of the connection.
			m.upper++
			h.note(name, op)
		case "ping":
			data := fmt.Sprintf("p%d", r.IntN(1000))
			if err := w.c.WriteControl(websocket.PingMessage, []byte(data), time.Now().Add(5*time.Second)); err != nil {
				t.Errorf("%s: ping: %v", name, err)
			}
			got := "no pong"
			// Pongs come to the reader, which runs the handler; skip stale ones.
			for deadline := time.After(wsAnswerWithin); got != "pong"; {
				select {
				case p := <-w.pongs:
					if p == data {
						got = "pong"
					}
				case <-deadline:
					got = "no pong"
				}
				if got == "no pong" {
					break
				}
			}
			h.check(t, name, op, got, allow("pong"))
		}
		if t.Failed() {
			break
		}
	}
	wsEnd(t, w, r, holds)
}

// classifyCancelled names the answer of a call that was cancelled or ran to its end.
func classifyCancelled(a wsAnswer) string {
	if a.kind == "result" || !strings.HasPrefix(a.kind, "error ") {
		return a.kind
	}
	if a.kind == "error 5002" {
		return a.kind
	}
	return "cancelled"
}

// wsEnd ends the connection: a close frame, then a request the gateway must not answer
// (written raw: the client library refuses to write after its close frame), the gateway's
// close frame and the end of the connection; or the TCP connection dropped at once.
func wsEnd(t *testing.T, w *wsConn, r *rand.Rand, holds []*wsHold) {
	w.m.state = wsClosing
	if r.IntN(2) == 0 {
		w.h.note(w.name, fmt.Sprintf("drop (%d in flight)", len(holds)))
		_ = w.c.UnderlyingConn().Close()
		<-w.done
		w.m.state = wsClosed
		return
	}
	_ = w.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), time.Now().Add(5*time.Second))
	w.mu.Lock()
	w.next++
	id := w.next
	w.noAnswer[id] = true
	w.mu.Unlock()
	_, _ = w.c.UnderlyingConn().Write(maskedText(r, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"calc.subtract","params":{"minuend":5,"subtrahend":3}}`, id)))
	got := "connection ended"
	select {
	case <-w.done:
	case <-time.After(wsAnswerWithin):
		got = "still open"
	}
	w.h.check(t, w.name, fmt.Sprintf("close+send (%d in flight)", len(holds)), got, allow("connection ended"))
	_ = w.c.Close()
	w.m.state = wsClosed
}

// maskedText is one client text frame (FIN, masked) carrying payload.
func maskedText(r *rand.Rand, payload string) []byte {
	b := []byte{0x81}
	n := len(payload)
	switch {
	case n < 126:
		b = append(b, 0x80|byte(n))
	default:
		b = append(b, 0x80|126, byte(n>>8), byte(n))
	}
	key := [4]byte{byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32())}
	b = append(b, key[:]...)
	for i := range n {
		b = append(b, payload[i]^key[i%4])
	}
	return b
}

// TestWebSocketSlotFreedWithAnswer: on a connection with max_in_flight 1, a client that
// sends each call as soon as the previous one's answer came is never refused: the slot is
// given back before the answer is sent (it used to be given back after, so that a quick
// client could be answered 5002 with nothing in flight).
func TestWebSocketSlotFreedWithAnswer(t *testing.T) {
	g := hardening.Start(t, wsConfig(1))
	w := dialWSConn(t, g, "serial", newHistory(0), &wsModel{limitLo: 1, limitHi: 1}, nil)
	refused := 0
	n := hardening.Iterations(t, 1000)
	for range n {
		_, ch, _ := w.send("calc.subtract", `{"minuend":5,"subtrahend":3}`)
		switch a := w.await("call", ch); a.kind {
		case "result":
		case "error 5002":
			refused++
		default:
			t.Fatalf("answer %s", a.raw)
		}
	}
	_ = w.c.Close()
	<-w.done
	if refused > 0 {
		t.Fatalf("%d of %d calls, each sent after the previous one's answer, refused for max_in_flight 1", refused, n)
	}
	t.Logf("%d calls in a row, none refused", n)
}

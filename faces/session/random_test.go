package session

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	wire "github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
)

// TestRandomInterleaving runs many connections over both transports doing random
// starts, aborts and disconnects against targets that succeed, fail, break the contract,
// stream slowly or block until cancelled. Bounded by a count of operations and a couple of
// seconds. Every request a live client started ends exactly once and passes the
// contract; afterwards nothing is pending, every stream a target opened is closed, no
// queue holds an entry, and no goroutine is left (goleak, TestMain).
func TestRandomInterleaving(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	e := newEnv(t, func(c *Config) { c.MaxQueued = 4 })
	messages := []string{"ok", "ok", "fail", "stream-fail", "broken", "no-terminal", "tool-error", "slow-r", "sleep:2ms", "sleep:1ms"}
	deadline := time.Now().Add(2 * time.Second)
	t.Run("clients", func(t *testing.T) {
		for i := range 12 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				rng := rand.New(rand.NewPCG(seed, uint64(i)))
				tr := transports[i%2]
				route := "script"
				if i%3 == 0 {
					route = "tool"
				}
				c := tr.open(t, e, route)
				r := newRecorder(t, c)
				var started []string
				gone := map[string]bool{}
				disconnected := false
			ops:
				for n := 0; n < 60 && time.Now().Before(deadline); n++ {
					switch k := rng.IntN(100); {
					case k < 45:
						id := fmt.Sprintf("r%d", n)
						msg := messages[rng.IntN(len(messages))]
						if route == "tool" && rng.IntN(2) == 0 {
							msg = "fail"
						}
						c.send(id, wire.TypeChatStart, map[string]any{"message": msg})
						started = append(started, id)
					case k < 75 && len(started) > 0:
						c.send(fmt.Sprintf("a%d", n), wire.TypeChatAbort, map[string]any{"requestId": started[rng.IntN(len(started))]})
					case k < 78 && len(started) > 0:
						if sc, ok := c.(*sseClient); ok {
							id := started[rng.IntN(len(started))]
							sc.disconnect(id)
							gone[id] = true
						} else if rng.IntN(3) == 0 {
							disconnected = true
							break ops
						}
					default:
						drain(r, time.Millisecond)
					}
				}
				if disconnected {
					c.close()
					return
				}
				for _, id := range started {
					if !gone[id] {
						c.send("end-"+id, wire.TypeChatAbort, map[string]any{"requestId": id})
					}
				}
				for _, id := range started {
					if gone[id] {
						continue
					}
					if err := checkRequest(r.terminal(id)); err != nil {
						t.Errorf("%s: %v:%s", id, err, r.dump(id))
					}
				}
				drain(r, 20*time.Millisecond) // nothing may follow a terminal message
				for _, id := range started {
					if err := checkRequest(r.byID[id]); err != nil && !gone[id] {
						t.Errorf("%s after the end: %v:%s", id, err, r.dump(id))
					}
				}
				c.close()
			})
		}
	})
	e.waitSettled()
	t.Logf("%d requests accepted, %d streams opened", e.face.started.Load(), e.target.opened.Load())
	if e.face.started.Load() < 20 {
		t.Errorf("only %d requests accepted: the test exercised little", e.face.started.Load())
	}
	e.face.mu.Lock()
	defer e.face.mu.Unlock()
	for _, m := range e.face.sessions {
		for sid, s := range m {
			s.mu.Lock()
			if s.running != nil || len(s.waiting) > 0 || len(s.active) > 0 {
				t.Errorf("session %s holds %d queued, %d active, running %v", sid, len(s.waiting), len(s.active), s.running != nil)
			}
			s.mu.Unlock()
		}
	}
}

// drain records what arrives within d.
func drain(r *recorder, d time.Duration) {
	timeout := time.After(d)
	for {
		select {
		case m, ok := <-r.c.msgs():
			if !ok {
				return
			}
			r.byID[m.ID] = append(r.byID[m.ID], m)
		case <-timeout:
			return
		}
	}
}

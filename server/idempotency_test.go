package server

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
	"github.com/gatehouse-dev/gatehouse/schemas"
	"github.com/gatehouse-dev/gatehouse/state"
)

const idempotencyConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
auth:
  anonymous: {}
idempotency: {poll_interval: 5ms}
`

// starts counts the calls a probe started.
func starts(p *probe) int {
	n := 0
	for _, ev := range p.log() {
		if strings.HasPrefix(ev, "start ") {
			n++
		}
	}
	return n
}

// TestIdempotencyAcrossReplicas runs two gateways on one state store, as two replicas
// behind a load balancer: each replays the other's results, a repeat sent to one while the
// first runs on the other waits for it, and the backend runs once per key.
func TestIdempotencyAcrossReplicas(t *testing.T) {
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = kv.Close() })
	p := &probe{result: []byte(`{"order":42}`), delay: 200 * time.Millisecond, started: make(chan string, 8)}
	replica := func() *testServer {
		cfg, err := Parse("test.yaml", []byte(idempotencyConfig))
		if err != nil {
			t.Fatal(err)
		}
		return startOptions(t, cfg, Options{State: kv, Targets: probes{"order.create": p}.asTargets()}, nil)
	}
	a, b := replica(), replica()
	call := func(ts *testServer, id int, params string) response {
		_, _, body := ts.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":"order.create","params":%s,"id":%d}`, params, id))
		return decodeOne(t, body)
	}

	// A repeat on b, sent while the first call runs on a, waits for it.
	var first response
	var wg sync.WaitGroup
	wg.Go(func() { first = call(a, 1, `{"idempotency_key":"k1","item":"book"}`) })
	<-p.started
	repeat := call(b, 2, `{"item":"book","idempotency_key":"k1"}`)
	wg.Wait()
	if first.Error != nil || repeat.Error != nil || string(first.Result) != `{"order":42}` || string(repeat.Result) != string(first.Result) {
		t.Fatalf("first %s %+v, concurrent repeat on the other replica %s %+v", first.Result, first.Error, repeat.Result, repeat.Error)
	}
	// A later repeat on either replica is a replay.
	for i, ts := range []*testServer{a, b} {
		if r := call(ts, 3+i, `{"idempotency_key":"k1","item":"book"}`); string(r.Result) != `{"order":42}` {
			t.Errorf("replay on replica %d: %s %+v", i, r.Result, r.Error)
		}
	}
	if n := starts(p); n != 1 {
		t.Errorf("the backend ran %d times, want once", n)
	}
	// Another call under the same key, on the other replica, is refused.
	r := call(b, 5, `{"idempotency_key":"k1","item":"pen"}`)
	if r.Error == nil || r.Error.Code != int(schemas.CodeInvalidParams) || r.Error.Data["reason"] != "idempotency_key_reused" {
		t.Errorf("same key, other params: %s %+v", r.Result, r.Error)
	}
	if ev := p.log(); len(ev) == 0 || ev[0] != "start 1" {
		t.Errorf("probe log %v", ev)
	}
}

// TestIdempotencyFollowsThePolicy: with a policy, a READ_ONLY call's key is removed but not
// recorded (the call runs every time); a call of any other class is recorded.
func TestIdempotencyFollowsThePolicy(t *testing.T) {
	read, write := &probe{}, &probe{}
	ts := start(t, idempotencyConfig+`policy:
  default: allow
  rules:
    - {match: {method: order.get}, mutation: READ_ONLY}
    - {match: {method: order.put}, mutation: IDEMPOTENT_WRITE}
`, probes{"order.get": read, "order.put": write}.asTargets())
	for i := range 2 {
		for _, m := range []string{"order.get", "order.put"} {
			_, _, body := ts.post(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":{"idempotency_key":"k"},"id":%d}`, m, i+1))
			if r := decodeOne(t, body); r.Error != nil {
				t.Fatalf("%s: %+v", m, r.Error)
			}
		}
	}
	if starts(read) != 2 || starts(write) != 1 {
		t.Errorf("READ_ONLY ran %d times (want 2), IDEMPOTENT_WRITE %d (want 1)", starts(read), starts(write))
	}
}

// TestIdempotencyKeyNeverReachesGRPC: the transcoder refuses a member the request message
// lacks, so without the section a keyed call to a gRPC backend fails; with it the key is
// removed and the call runs, once.
func TestIdempotencyKeyNeverReachesGRPC(t *testing.T) {
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	const call = `{"jsonrpc":"2.0","method":"subtract","params":{"minuend":42,"subtrahend":23,"idempotency_key":"k"},"id":1}`
	for _, on := range []bool{false, true} {
		yaml := fmt.Sprintf(calcConfig, addr)
		if on {
			yaml += "idempotency: {}\n"
		}
		ts := start(t, yaml, nil)
		ts.waitReadyWithin(20 * time.Second)
		for range 2 {
			_, _, body := ts.post(call)
			r := decodeOne(t, body)
			switch {
			case !on && (r.Error == nil || r.Error.Code != int(schemas.CodeInvalidParams)):
				t.Errorf("without the section: %s, want -32602 for the unknown member", body)
			case on && (r.Error != nil || string(r.Result) != "19"):
				t.Errorf("with the section: %s, want 19", body)
			}
		}
	}
}

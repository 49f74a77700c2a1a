package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth/approval"
	"github.com/gatehouse-dev/gatehouse/internal/redistest"
	"github.com/gatehouse-dev/gatehouse/state"
)

// asyncYAML holds order.delete (a probe) for approval; alice and bob may call it, ops
// decides. %s is the approvals section's extra keys.
const asyncYAML = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  api_keys:
    - {name: alice, hash: %q, scopes: [orders]}
    - {name: bob, hash: %q, scopes: [orders]}
    - {name: ops, hash: %q, scopes: [admin.approvals]}
deadline: {default: 10m, max: 10m}
log: {level: debug}
policy:
  rules:
    - {id: delete, match: {method: order.delete}, scopes: [orders], mutation: DESTRUCTIVE}
approvals: {poll_interval: 5ms%s}
`

// startAsync starts a server of asyncYAML routing order.delete to p, on clock and kv when
// they are not nil.
func startAsync(t *testing.T, extra string, p *probe, clock *testClock, kv state.KV) *testServer {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(fmt.Sprintf(asyncYAML, apiKeyHash("alice-key"), apiKeyHash("bob-key"), apiKeyHash(opsKey), extra)))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	opts := Options{State: kv, Targets: probes{"order.delete": p}.asTargets()}
	if clock != nil {
		opts.Now = clock.Now
	}
	return startOptions(t, cfg, opts, nil)
}

// callKey posts a call of method with params as the API key's owner.
func (ts *testServer) callKey(key, method, params string) response {
	ts.t.Helper()
	_, _, body := ts.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params), "X-API-Key", key)
	return decodeOne(ts.t, body)
}

// deleteAsync calls order.delete as alice in async mode and returns the approval_id of its
// 4004 answer.
func (ts *testServer) deleteAsync(key string) string {
	ts.t.Helper()
	r := ts.callKey(key, "order.delete", `{"order":1,"approval_mode":"async"}`)
	if r.Error == nil || r.Error.Code != 4004 {
		ts.t.Fatalf("async call: got %s / %+v, want 4004", r.Result, r.Error)
	}
	id, _ := r.Error.Data["approval_id"].(string)
	if id == "" || r.Error.Data["expires_at"] == nil || r.Error.Data["retry_after_ms"] == nil {
		ts.t.Fatalf("4004 data %v", r.Error.Data)
	}
	redeem, _ := r.Error.Data["redeem"].(map[string]any)
	if redeem["method"] != approval.MethodRedeem {
		ts.t.Errorf("redeem hint %v", r.Error.Data["redeem"])
	}
	return id
}

// redeem redeems id as the API key's owner.
func (ts *testServer) redeem(key, id string) response {
	ts.t.Helper()
	return ts.callKey(key, approval.MethodRedeem, fmt.Sprintf(`{"approval_id":%q}`, id))
}

// opsDecide approves or denies id as ops.
func (ts *testServer) opsDecide(method, id string) {
	ts.t.Helper()
	ts.ops(method, fmt.Sprintf(`{"id":%q}`, id))
}

// opsDecided returns the audit record of id, listed by ops.
func (ts *testServer) opsDecided(id string) approval.Record {
	ts.t.Helper()
	var l approval.List
	if err := json.Unmarshal(ts.ops(approval.MethodList, `{"include_decided":true}`), &l); err != nil {
		ts.t.Fatal(err)
	}
	for _, r := range l.Decided {
		if r.ID == id {
			return r
		}
	}
	ts.t.Fatalf("no audit record for %s in %+v", id, l)
	return approval.Record{}
}

func wantCode(t *testing.T, r response, code int, data map[string]any) {
	t.Helper()
	if r.Error == nil || r.Error.Code != code {
		t.Fatalf("got %s / %+v, want %d", r.Result, r.Error, code)
	}
	for k, v := range data {
		if r.Error.Data[k] != v {
			t.Errorf("data.%s = %v, want %v (%v)", k, r.Error.Data[k], v, r.Error.Data)
		}
	}
}

func TestApprovalAsyncRoundTrip(t *testing.T) {
	p := &probe{result: []byte(`{"deleted":1}`), delay: 100 * time.Millisecond}
	ts := startAsync(t, "", p, nil, nil)
	id := ts.deleteAsync("alice-key")

	l := ts.ops(approval.MethodList, `{}`)
	want, err := approval.Digest("order.delete", []byte(`{"order":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(l), want) || !strings.Contains(string(l), `"mode":"async"`) {
		t.Errorf("pending list %s: want the digest of the params without approval_mode, mode async", l)
	}
	wantCode(t, ts.redeem("alice-key", id), 4004, map[string]any{"approval": "pending", "approval_id": id})
	// Another caller, and an unknown id, get the same refusal.
	wantCode(t, ts.redeem("bob-key", id), 4003, map[string]any{"reason": "unknown_approval"})
	wantCode(t, ts.redeem("alice-key", "NOSUCHID"), 4003, map[string]any{"reason": "unknown_approval"})
	if n := starts(p); n != 0 {
		t.Fatalf("the backend ran %d times before the approval", n)
	}

	ts.opsDecide(approval.MethodApprove, id)
	wantCode(t, ts.redeem("bob-key", id), 4003, map[string]any{"reason": "unknown_approval"})
	var wg sync.WaitGroup
	results := make([]response, 4)
	for i := range results {
		wg.Go(func() { results[i] = ts.redeem("alice-key", id) })
	}
	wg.Wait()
	ran := 0
	for _, r := range results {
		switch {
		case r.Error == nil && string(r.Result) == `{"deleted":1}`:
			ran++
		case r.Error != nil && r.Error.Code == 4004 && r.Error.Data["approval"] == "running":
		default:
			t.Errorf("concurrent redeem: %s / %+v", r.Result, r.Error)
		}
	}
	if ran == 0 {
		t.Error("no concurrent redeem got the result")
	}
	for range 2 { // a lost reply: redeemed again, the kept result
		if r := ts.redeem("alice-key", id); r.Error != nil || string(r.Result) != `{"deleted":1}` {
			t.Fatalf("repeated redeem: %s / %+v", r.Result, r.Error)
		}
	}
	if n := starts(p); n != 1 {
		t.Errorf("the backend ran %d times, want once", n)
	}
	a := ts.opsDecided(id)
	if a.Status != approval.Approved || a.DecidedBy != "ops" || a.Mode != approval.ModeAsync || a.Caller != "alice" || a.RedeemedAt.IsZero() {
		t.Errorf("audit record %+v", a)
	}
	logs := ts.logs.String()
	for _, w := range []string{"call held for approval", "mode=async", "approval decided", "approval redeemed"} {
		if !strings.Contains(logs, w) {
			t.Errorf("the audit log lacks %q", w)
		}
	}
}

func TestApprovalAsyncDecisions(t *testing.T) {
	clock := &testClock{}
	p := &probe{result: []byte(`true`)}
	ts := startAsync(t, ", timeout: 1m", p, clock, nil)
	tests := []struct {
		name       string
		decide     func(id string)
		wantStatus approval.Status
		wantBy     string
		data       map[string]any
	}{
		{"denied", func(id string) { ts.opsDecide(approval.MethodDeny, id) }, approval.Denied, "ops", map[string]any{"approval": "denied"}},
		{"expired undecided", func(string) { clock.Advance(time.Minute + time.Second) }, approval.Expired, approval.System,
			map[string]any{"approval": "expired"}},
		{"approved, redeemed after result_ttl", func(id string) {
			ts.opsDecide(approval.MethodApprove, id)
			clock.Advance(approval.DefaultResultTTL + time.Second)
		}, approval.Approved, "ops", map[string]any{"reason": "redeem_window_passed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := ts.deleteAsync("alice-key")
			tt.decide(id)
			wantCode(t, ts.redeem("alice-key", id), 4003, tt.data)
			if a := ts.opsDecided(id); a.Status != tt.wantStatus || a.DecidedBy != tt.wantBy {
				t.Errorf("audit record %+v", a)
			}
		})
	}
	if n := starts(p); n != 0 {
		t.Errorf("the backend ran %d times", n)
	}
	// An asynchronous approval nobody redeems is decided expired, and audited, when the
	// pending approvals are next listed.
	id := ts.deleteAsync("alice-key")
	clock.Advance(time.Minute + time.Second)
	if a := ts.opsDecided(id); a.Status != approval.Expired || a.Note != "timeout" {
		t.Errorf("audit record of an unredeemed expiry %+v", a)
	}
}

func TestApprovalAsyncModes(t *testing.T) {
	p := &probe{result: []byte(`true`)}
	tests := []struct {
		name   string
		extra  string
		params string
		want   string // "4004", "held", "expired", "invalid"
	}{
		{"default wait, call asks async", "", `{"approval_mode":"async"}`, "4004"},
		{"config async, call silent", ", mode: async", `{}`, "4004"},
		{"config async, call asks wait", ", mode: async", `{"approval_mode":"wait"}`, "held"},
		{"max_wait bounds the wait", ", max_wait: 200ms", `{}`, "expired"},
		{"bad mode", "", `{"approval_mode":"later"}`, "invalid"},
		{"mode of the wrong type", "", `{"approval_mode":1}`, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startAsync(t, tt.extra, p, nil, nil)
			switch tt.want {
			case "4004":
				wantCode(t, ts.callKey("alice-key", "order.delete", tt.params), 4004, map[string]any{"approval": "pending"})
			case "invalid":
				wantCode(t, ts.callKey("alice-key", "order.delete", tt.params), -32602, map[string]any{"param": approval.ModeMember})
			case "expired":
				wantCode(t, ts.callKey("alice-key", "order.delete", tt.params), 4003, map[string]any{"approval": "expired"})
			case "held":
				done := make(chan response, 1)
				go func() { done <- ts.callKey("alice-key", "order.delete", tt.params) }()
				var l approval.List
				waitFor(t, func() bool {
					_ = json.Unmarshal(ts.ops(approval.MethodList, `{}`), &l)
					return len(l.Pending) == 1
				})
				ts.opsDecide(approval.MethodApprove, l.Pending[0].ID)
				select {
				case r := <-done:
					if r.Error != nil || string(r.Result) != "true" {
						t.Fatalf("held call: %s / %+v", r.Result, r.Error)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the held call did not finish")
				}
			}
		})
	}
}

func TestApprovalAsyncMaxPending(t *testing.T) {
	ts := startAsync(t, ", max_pending: 1", &probe{}, nil, nil)
	ts.deleteAsync("alice-key")
	wantCode(t, ts.callKey("bob-key", "order.delete", `{"approval_mode":"async"}`), 5002, map[string]any{"reason": "max_pending"})
}

// TestApprovalAsyncRestart stops the gateway that held the call and redeems it on a new
// one over the same Redis.
func TestApprovalAsyncRestart(t *testing.T) {
	srv := redistest.Start(t)
	open := func() state.KV {
		kv, err := state.NewRedis(state.RedisConfig{Addrs: []string{srv.Addr}, KeyPrefix: "restart:"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kv.Close() })
		return kv
	}
	p := &probe{result: []byte(`{"deleted":1}`)}
	first := startAsync(t, "", p, nil, open())
	id := first.deleteAsync("alice-key")
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	second := startAsync(t, "", p, nil, open())
	wantCode(t, second.redeem("alice-key", id), 4004, map[string]any{"approval": "pending"})
	second.opsDecide(approval.MethodApprove, id)
	for range 2 {
		if r := second.redeem("alice-key", id); r.Error != nil || string(r.Result) != `{"deleted":1}` {
			t.Fatalf("redeem after the restart: %s / %+v", r.Result, r.Error)
		}
	}
	if n := starts(p); n != 1 {
		t.Errorf("the backend ran %d times, want once", n)
	}
	if a := second.opsDecided(id); a.Status != approval.Approved || a.RedeemedAt.IsZero() {
		t.Errorf("audit record %+v", a)
	}
}

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/auth/approval"
	"github.com/gatehouse-dev/gatehouse/state"
)

// approvalYAML serves the demo target with subtract DESTRUCTIVE (held by default), update
// under the implicit NON_IDEMPOTENT_WRITE class and sum READ_ONLY; anonymous callers hold
// scopes %s. The last %s is appended to the policy section (approval_for) and the file.
const approvalYAML = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth: {anonymous: {scopes: %s}}
deadline: {default: 10m, max: 10m}
log: {level: debug}
routing:
  demo: {}
policy:
  rules:
    - {id: destroy, match: {method: subtract}, scopes: [read], mutation: DESTRUCTIVE}
    - {id: write, match: {method: update}, scopes: [read]}
    - {id: read, match: {method: sum}, scopes: [read], mutation: READ_ONLY}
%s
`

const subtractCall = `{"jsonrpc":"2.0","id":7,"method":"subtract","params":{"subtrahend":23,"minuend":42}}`

// testClock is time.Now moved forward by an offset the test sets.
type testClock struct{ off atomic.Int64 }

func (c *testClock) Now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *testClock) Advance(d time.Duration) { c.off.Add(int64(d)) }

// startApprovals starts a server of approvalYAML with scopes and extra, on clock, sharing
// kv when it is not nil.
func startApprovals(t *testing.T, scopes, extra string, clock *testClock, kv state.KV) *testServer {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(fmt.Sprintf(approvalYAML, scopes, extra)))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	opts := Options{State: kv}
	if clock != nil {
		opts.Now = clock.Now
	}
	return startOptions(t, cfg, opts, nil)
}

const fastApprovals = "approvals: {poll_interval: 5ms}"

// adminRPC posts body to the admin listener's /rpc and returns the status and body.
func (ts *testServer) adminRPC(body string) (int, string) {
	ts.t.Helper()
	resp, err := http.Post(ts.admin+"/rpc", "application/json", strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// adminDo calls an admin method and returns its decoded response.
func (ts *testServer) adminDo(method, params string) response {
	ts.t.Helper()
	code, body := ts.adminRPC(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params))
	if code != http.StatusOK {
		ts.t.Fatalf("admin %s: HTTP %d: %s", method, code, body)
	}
	return decodeOne(ts.t, body)
}

// approvals lists the approvals, with the decided ones.
func (ts *testServer) approvals() approval.List {
	ts.t.Helper()
	r := ts.adminDo(approval.MethodList, `{"include_decided":true}`)
	if r.Error != nil {
		ts.t.Fatalf("list: %+v", r.Error)
	}
	var l approval.List
	if err := json.Unmarshal(r.Result, &l); err != nil {
		ts.t.Fatal(err)
	}
	return l
}

// waitPending waits until n approvals are pending and returns them.
func (ts *testServer) waitPending(n int) []approval.Record {
	ts.t.Helper()
	var got []approval.Record
	waitFor(ts.t, func() bool { got = ts.approvals().Pending; return len(got) == n })
	return got
}

// decided returns the audit record of id.
func (ts *testServer) decided(id string) approval.Record {
	ts.t.Helper()
	for _, r := range ts.approvals().Decided {
		if r.ID == id {
			return r
		}
	}
	ts.t.Fatalf("no audit record for %s", id)
	return approval.Record{}
}

// callAsync posts body to the boundary under ctx, with headers, and delivers the response
// body ("" when the request failed).
func (ts *testServer) callAsync(ctx context.Context, body string, header ...string) <-chan string {
	out := make(chan string, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.base+"/rpc", strings.NewReader(body))
		if err != nil {
			out <- ""
			return
		}
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- ""
			return
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		out <- string(b)
	}()
	return out
}

func receive(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no response within 10s")
		return ""
	}
}

func TestApprovalDecisions(t *testing.T) {
	clock := &testClock{}
	ts := startApprovals(t, `[read, admin.approvals]`, fastApprovals, clock, nil)
	wantDigest, err := approval.Digest("subtract", []byte(`{"minuend":42,"subtrahend":23}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		decide     func(id string)
		wantResult string
		wantStatus approval.Status
		wantBy     string
		wantNote   string
	}{
		{"approved: the held call runs", func(id string) {
			if r := ts.adminDo(approval.MethodApprove, fmt.Sprintf(`{"id":%q,"note":"ticket 42"}`, id)); r.Error != nil {
				t.Fatalf("approve: %+v", r.Error)
			}
		}, "19", approval.Approved, "anonymous", "ticket 42"},
		{"denied: 4003", func(id string) {
			if r := ts.adminDo(approval.MethodDeny, fmt.Sprintf(`{"id":%q,"reason":"not today"}`, id)); r.Error != nil {
				t.Fatalf("deny: %+v", r.Error)
			}
		}, "", approval.Denied, "anonymous", "not today"},
		{"timed out: 4003 expired", func(string) { clock.Advance(approval.DefaultTimeout + time.Second) },
			"", approval.Expired, approval.System, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := ts.callAsync(context.Background(), subtractCall)
			p := ts.waitPending(1)[0]
			if p.Digest != wantDigest || p.Method != "subtract" || p.Rule != "destroy" || p.Mutation != "DESTRUCTIVE" ||
				p.Caller != "anonymous" || p.Zone != "external" || p.Status != approval.Pending {
				t.Fatalf("pending record %+v", p)
			}
			if got, want := p.Expires.Sub(p.Created), approval.DefaultTimeout; got != want {
				t.Errorf("expires after %v, want %v", got, want)
			}
			tt.decide(p.ID)
			r := decodeOne(t, receive(t, done))
			if tt.wantResult != "" {
				if r.Error != nil || string(r.Result) != tt.wantResult {
					t.Fatalf("got %s / %+v, want result %s", r.Result, r.Error, tt.wantResult)
				}
			} else if r.Error == nil || r.Error.Code != 4003 || r.Error.Data["approval"] != string(tt.wantStatus) {
				t.Fatalf("got %s / %+v, want 4003 %s", r.Result, r.Error, tt.wantStatus)
			}
			a := ts.decided(p.ID)
			if a.Status != tt.wantStatus || a.DecidedBy != tt.wantBy || a.Note != tt.wantNote || a.Digest != wantDigest || a.DecidedAt.IsZero() {
				t.Errorf("audit record %+v", a)
			}
			if n := len(ts.approvals().Pending); n != 0 {
				t.Errorf("%d approvals still pending", n)
			}
			if !strings.Contains(ts.logs.String(), "approval decided") {
				t.Error("the decision was not logged")
			}
		})
	}
}

func TestApprovalCallDeadlineFirst(t *testing.T) {
	ts := startApprovals(t, `[read, admin.approvals]`, fastApprovals, nil, nil)
	deadline := strconv.FormatInt(time.Now().Add(300*time.Millisecond).UnixMilli(), 10)
	done := ts.callAsync(context.Background(), subtractCall, "X-Deadline-Ms", deadline)
	p := ts.waitPending(1)[0]
	if d := p.Expires.Sub(p.Created); d > 300*time.Millisecond {
		t.Errorf("the approval expires after %v, past the call's deadline", d)
	}
	r := decodeOne(t, receive(t, done))
	if r.Error == nil || r.Error.Code != -32000 {
		t.Fatalf("got %+v, want DEADLINE_EXCEEDED", r.Error)
	}
	waitFor(t, func() bool { return len(ts.approvals().Pending) == 0 })
	if a := ts.decided(p.ID); a.Status != approval.Expired || a.Note != "call deadline" {
		t.Errorf("audit record %+v", a)
	}
}

func TestApprovalWithdrawnWhenCallerLeaves(t *testing.T) {
	ts := startApprovals(t, `[read, admin.approvals]`, fastApprovals, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := ts.callAsync(ctx, subtractCall)
	p := ts.waitPending(1)[0]
	cancel()
	if got := receive(t, done); got != "" {
		t.Fatalf("a cancelled request got %q", got)
	}
	waitFor(t, func() bool { return len(ts.approvals().Pending) == 0 })
	if a := ts.decided(p.ID); a.Status != approval.Withdrawn || a.DecidedBy != approval.System {
		t.Errorf("audit record %+v", a)
	}
	r := ts.adminDo(approval.MethodApprove, fmt.Sprintf(`{"id":%q}`, p.ID))
	if r.Error == nil || r.Error.Data["status"] != string(approval.Withdrawn) {
		t.Errorf("approving a withdrawn approval: %+v", r.Error)
	}
}

func TestApprovalMaxPending(t *testing.T) {
	ts := startApprovals(t, `[read, admin.approvals]`, "approvals: {poll_interval: 5ms, max_pending: 2}", nil, nil)
	first, second := ts.callAsync(context.Background(), subtractCall), ts.callAsync(context.Background(), subtractCall)
	held := ts.waitPending(2) // at the limit
	_, _, body := ts.post(subtractCall)
	r := decodeOne(t, body)
	if r.Error == nil || r.Error.Code != 5002 || r.Error.Data["reason"] != "max_pending" || r.Error.Data["retry_after_ms"] == nil {
		t.Fatalf("past max_pending: got %+v, want 5002 max_pending", r.Error)
	}
	ts.adminDo(approval.MethodDeny, fmt.Sprintf(`{"id":%q}`, held[0].ID))
	third := ts.callAsync(context.Background(), subtractCall) // one below the limit again: held
	for _, p := range ts.waitPending(2) {
		ts.adminDo(approval.MethodApprove, fmt.Sprintf(`{"id":%q}`, p.ID))
	}
	results := map[string]int{}
	for _, ch := range []<-chan string{first, second, third} {
		r := decodeOne(t, receive(t, ch))
		switch {
		case r.Error != nil:
			results[strconv.Itoa(r.Error.Code)]++
		default:
			results[string(r.Result)]++
		}
	}
	if results["19"] != 2 || results["4003"] != 1 {
		t.Errorf("outcomes %v, want two results and one 4003", results)
	}
}

func TestApprovalAdminErrors(t *testing.T) {
	ts := startApprovals(t, `[read, admin.approvals]`, fastApprovals, nil, nil)
	done := ts.callAsync(context.Background(), subtractCall)
	id := ts.waitPending(1)[0].ID
	if r := ts.adminDo(approval.MethodApprove, fmt.Sprintf(`{"id":%q}`, id)); r.Error != nil {
		t.Fatalf("approve: %+v", r.Error)
	}
	if r := decodeOne(t, receive(t, done)); string(r.Result) != "19" {
		t.Fatalf("approved call: %+v", r)
	}
	tests := []struct {
		name     string
		method   string
		params   string
		wantCode int
		wantData map[string]any
	}{
		{"unknown id", approval.MethodApprove, `{"id":"NOPE"}`, -32602, map[string]any{"reason": "unknown_id"}},
		{"double approve", approval.MethodApprove, fmt.Sprintf(`{"id":%q}`, id), -32602,
			map[string]any{"reason": "already_decided", "status": "approved"}},
		{"deny after approve", approval.MethodDeny, fmt.Sprintf(`{"id":%q,"reason":"late"}`, id), -32602,
			map[string]any{"reason": "already_decided", "status": "approved"}},
		{"missing id", approval.MethodDeny, `{}`, -32602, map[string]any{"param": "id"}},
		{"id of the wrong type", approval.MethodApprove, `{"id":5}`, -32602, map[string]any{"param": "id"}},
		{"case-variant member", approval.MethodApprove, fmt.Sprintf(`{"ID":%q}`, id), -32602, map[string]any{"problem": "unknown member"}},
		{"note on deny", approval.MethodDeny, fmt.Sprintf(`{"id":%q,"note":"x"}`, id), -32602, map[string]any{"problem": "unknown member"}},
		{"bad list flag", approval.MethodList, `{"include_decided":"yes"}`, -32602, map[string]any{"param": "include_decided"}},
		{"unknown admin method", "admin.approvals.purge", `{}`, -32601, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.adminDo(tt.method, tt.params)
			if r.Error == nil || r.Error.Code != tt.wantCode {
				t.Fatalf("got %s / %+v, want code %d", r.Result, r.Error, tt.wantCode)
			}
			for k, v := range tt.wantData {
				if r.Error.Data[k] != v {
					t.Errorf("data.%s = %v, want %v", k, r.Error.Data[k], v)
				}
			}
		})
	}
}

func TestApprovalAdminAccess(t *testing.T) {
	ts := startApprovals(t, `[read]`, fastApprovals, nil, nil)
	tests := []struct {
		name     string
		call     func() (int, string)
		wantCode int
	}{
		{"admin method without the admin scope", func() (int, string) {
			return ts.adminRPC(`{"jsonrpc":"2.0","id":1,"method":"admin.approvals.list"}`)
		}, 4002},
		{"approve without the admin scope", func() (int, string) {
			return ts.adminRPC(`{"jsonrpc":"2.0","id":1,"method":"admin.approvals.approve","params":{"id":"X"}}`)
		}, 4002},
		{"admin method on the boundary", func() (int, string) {
			code, _, body := ts.post(`{"jsonrpc":"2.0","id":1,"method":"admin.approvals.list"}`)
			return code, body
		}, -32601},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := tt.call()
			if code != http.StatusOK {
				t.Fatalf("HTTP %d: %s", code, body)
			}
			r := decodeOne(t, body)
			if r.Error == nil || r.Error.Code != tt.wantCode {
				t.Fatalf("got %+v, want %d", r.Error, tt.wantCode)
			}
			if tt.wantCode == 4002 && fmt.Sprint(r.Error.Data["missing_scopes"]) != "[admin.approvals]" {
				t.Errorf("missing_scopes = %v", r.Error.Data["missing_scopes"])
			}
		})
	}
}

func TestApprovalForNonIdempotentWrite(t *testing.T) {
	tests := []struct {
		name     string
		extra    string
		wantHeld bool
	}{
		{"DESTRUCTIVE only (default): writes run", fastApprovals, false},
		{"approval_for lists NON_IDEMPOTENT_WRITE: writes are held",
			"  approval_for: [DESTRUCTIVE, NON_IDEMPOTENT_WRITE]\n" + fastApprovals, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startApprovals(t, `[read, admin.approvals]`, tt.extra, nil, nil)
			done := ts.callAsync(context.Background(), `{"jsonrpc":"2.0","id":1,"method":"update","params":[1]}`)
			if tt.wantHeld {
				p := ts.waitPending(1)[0]
				if p.Mutation != "NON_IDEMPOTENT_WRITE" {
					t.Errorf("mutation %q", p.Mutation)
				}
				ts.adminDo(approval.MethodApprove, fmt.Sprintf(`{"id":%q}`, p.ID))
			}
			if r := decodeOne(t, receive(t, done)); r.Error != nil {
				t.Fatalf("update: %+v", r.Error)
			}
			if _, _, body := ts.post(`{"jsonrpc":"2.0","id":1,"method":"sum","params":[1,2]}`); decodeOne(t, body).Error != nil {
				t.Errorf("a READ_ONLY call: %s", body)
			}
			if d := ts.approvals().Decided; (len(d) == 1) != tt.wantHeld {
				t.Errorf("%d decisions, want held=%v", len(d), tt.wantHeld)
			}
		})
	}
}

func TestApprovalAcrossReplicas(t *testing.T) {
	kv := state.NewEmbedded(state.EmbeddedOptions{})
	t.Cleanup(func() { _ = kv.Close() })
	a := startApprovals(t, `[read, admin.approvals]`, fastApprovals, nil, kv)
	b := startApprovals(t, `[read, admin.approvals]`, fastApprovals, nil, kv)
	done := a.callAsync(context.Background(), subtractCall)
	p := b.waitPending(1)[0]
	if r := b.adminDo(approval.MethodApprove, fmt.Sprintf(`{"id":%q}`, p.ID)); r.Error != nil {
		t.Fatalf("approve on the other replica: %+v", r.Error)
	}
	if r := decodeOne(t, receive(t, done)); string(r.Result) != "19" {
		t.Fatalf("held call on replica a: %+v", r)
	}
}

func TestApprovalsConfig(t *testing.T) {
	tests := []struct {
		name    string
		section string
		wantErr string
		want    approval.Config
	}{
		{"defaults", "", "", approval.Config{Timeout: 5 * time.Minute, Mode: "wait", MaxWait: 5 * time.Minute, ResultTTL: 15 * time.Minute,
			RetryAfter: 5 * time.Second, MaxPending: 1000, PollInterval: 250 * time.Millisecond, AdminScope: "admin.approvals", AuditTTL: 720 * time.Hour}},
		{"set", "approvals: {timeout: 1m, mode: async, max_wait: 30s, result_ttl: 1h, retry_after: 2s, max_pending: 3, poll_interval: 1s, admin_scope: ops, audit_ttl: 24h}", "",
			approval.Config{Timeout: time.Minute, Mode: "async", MaxWait: 30 * time.Second, ResultTTL: time.Hour, RetryAfter: 2 * time.Second,
				MaxPending: 3, PollInterval: time.Second, AdminScope: "ops", AuditTTL: 24 * time.Hour}},
		{"bad mode", "approvals: {mode: later}", "approvals.mode", approval.Config{}},
		{"max_wait past timeout", "approvals: {timeout: 1m, max_wait: 2m}", "approvals.max_wait", approval.Config{}},
		{"poll not shorter than timeout", "approvals: {timeout: 1s, poll_interval: 1s}", "approvals.poll_interval", approval.Config{}},
		{"max_pending too large", "approvals: {max_pending: 10001}", "max_pending", approval.Config{}},
		{"unknown key", "approvals: {timout: 1m}", "timout", approval.Config{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("test.yaml", []byte("routing: {demo: {}}\n"+tt.section+"\n"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Approvals != tt.want {
				t.Errorf("got %+v, want %+v", cfg.Approvals, tt.want)
			}
		})
	}
}

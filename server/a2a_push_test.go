package server

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	"github.com/gatehouse-dev/gatehouse/faces/httprpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// startA2APush starts the A2A face with a key ring and push notifications on (pushKeys:
// more a2a.push keys).
func startA2APush(t *testing.T, a2aKeys string) *testServer {
	t.Helper()
	cfg := strings.Replace(fmt.Sprintf(a2aConfig, callerSecret, a2aSecond, a2aKeys), "auth:\n", "auth:\n  keyring: {issuer: gatehouse, algorithm: EdDSA}\n", 1)
	return start(t, cfg, map[string]gateway.Target{"slow.wait": slowTarget{}})
}

// pushReceiver is a webhook: it records each delivery and answers the first failEach
// attempts of each (by its JWT's jti) with 500, then 200.
type pushReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	got      []delivered
	failEach int
	calls    map[string]int
}

type delivered struct {
	header http.Header
	body   []byte
}

func newPushReceiver(t *testing.T, failEach int) *pushReceiver {
	r := &pushReceiver{failEach: failEach, calls: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		d := delivered{req.Header.Clone(), b}
		jti := jtiOf(t, d)
		r.mu.Lock()
		r.got = append(r.got, d)
		status := http.StatusOK
		if r.calls[jti] < r.failEach {
			status = http.StatusInternalServerError
		}
		r.calls[jti]++
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *pushReceiver) deliveries() []delivered {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivered(nil), r.got...)
}

// waitFor waits until cond holds of the deliveries, or fails.
func (r *pushReceiver) waitFor(t *testing.T, what string, cond func([]delivered) bool) []delivered {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d := r.deliveries()
		if cond(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; got %d deliveries", what, len(d))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// finalTask is the task of a delivery whose payload is a 1.0 {"task": ...}, nil otherwise.
func finalTask(d delivered) *a2aTask {
	var p struct {
		Task *a2aTask `json:"task"`
	}
	if json.Unmarshal(d.body, &p) != nil || p.Task == nil {
		return nil
	}
	return p.Task
}

func hasFinal(ds []delivered) bool {
	for _, d := range ds {
		if finalTask(d) != nil {
			return true
		}
	}
	return false
}

const pushKeys = `push: {enabled: true, allow_http: true, allowed_cidrs: ["127.0.0.0/8"], backoff: 5ms, max_backoff: 20ms, max_attempts: 3}`

// TestA2APushDelivers: a message with an inline push config; the webhook receives the
// task's state changes and its final task, each signed by the gateway's key ring — the
// JWT verifies with the gateway's JWKS and names the task and the body's hash — with the
// config's credentials and token.
func TestA2APushDelivers(t *testing.T) {
	ts := startA2APush(t, pushKeys)
	recv := newPushReceiver(t, 0)
	alice := callerToken(t, "alice", "agents", "caps")
	resp, err := http.Get(ts.base + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	card, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.Contains(string(card), `"pushNotifications":true`) {
		t.Errorf("card capabilities do not announce push notifications: %s", card)
	}
	push := fmt.Sprintf(`,"configuration":{"returnImmediately":true,"taskPushNotificationConfig":{"url":%q,"token":"tok-1","authentication":{"scheme":"Bearer","credentials":"client-secret"}}}`, recv.URL+"/hook")
	_, _, body := ts.a2aPost(alice, "1.0", a2aSend(1, "subtract", `{"minuend":5,"subtrahend":2}`, push))
	var res struct {
		Task a2aTask `json:"task"`
	}
	a2aResult(t, body, &res)
	ds := recv.waitFor(t, "the final task", hasFinal)

	resp, err = http.Get(ts.base + httprpc.JWKSPath)
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	keys, err := a2a.ParseKeySet(jwks)
	if err != nil {
		t.Fatalf("the gateway's JWKS %s: %v", jwks, err)
	}
	for _, d := range ds {
		if got := d.header.Get("Authorization"); got != "Bearer client-secret" {
			t.Errorf("Authorization = %q, want the config's", got)
		}
		if got := d.header.Get("X-A2A-Notification-Token"); got != "tok-1" {
			t.Errorf("token header = %q", got)
		}
		if ct := d.header.Get("Content-Type"); ct != "application/a2a+json" {
			t.Errorf("Content-Type = %q", ct)
		}
		_, payload, err := keys.VerifyCompact(d.header.Get("X-Gatehouse-Signature"))
		if err != nil {
			t.Fatalf("the delivery's JWT does not verify with the JWKS: %v", err)
		}
		var claims struct {
			Iss, Aud, Jti, TaskID, BodySHA string
			Iat, Exp                       int64
		}
		var raw map[string]any
		_ = json.Unmarshal(payload, &raw)
		claims.Iss, _ = raw["iss"].(string)
		claims.Aud, _ = raw["aud"].(string)
		claims.TaskID, _ = raw["task_id"].(string)
		claims.BodySHA, _ = raw["body_sha256"].(string)
		iat, _ := raw["iat"].(float64)
		exp, _ := raw["exp"].(float64)
		sum := sha256.Sum256(d.body)
		now := float64(time.Now().Unix())
		if claims.Iss != "gatehouse" || claims.Aud != recv.URL+"/hook" || claims.TaskID != res.Task.ID ||
			claims.BodySHA != base64.RawURLEncoding.EncodeToString(sum[:]) || iat > now+1 || exp <= now || exp > now+301 {
			t.Errorf("claims = %s (task %s)", payload, res.Task.ID)
		}
	}
	var final *a2aTask
	for _, d := range ds {
		if f := finalTask(d); f != nil {
			final = f
		}
	}
	if final.ID != res.Task.ID || final.Status.State != "TASK_STATE_COMPLETED" || len(final.Artifacts) == 0 {
		t.Errorf("final task = %+v", final)
	}
	if !strings.Contains(fmt.Sprint(final.Artifacts[0].Parts), "3") {
		t.Errorf("final artifacts = %+v, want the result 3", final.Artifacts)
	}
}

// TestA2APushRetries: a webhook that fails twice with 500 gets the delivery on the third
// attempt; one that always fails gets exactly a2a.push.max_attempts attempts of each.
func TestA2APushRetries(t *testing.T) {
	ts := startA2APush(t, pushKeys)
	alice := callerToken(t, "alice", "agents", "caps")
	flaky := newPushReceiver(t, 2)
	push := func(u string) string {
		return fmt.Sprintf(`,"configuration":{"taskPushNotificationConfig":{"url":%q}}`, u)
	}
	_, _, body := ts.a2aPost(alice, "1.0", a2aSend(1, "subtract", `{"minuend":5,"subtrahend":2}`, push(flaky.URL)))
	if code := a2aErrCode(t, body); code != 0 {
		t.Fatalf("send: %s", body)
	}
	// Each notification fails twice and is delivered on its third attempt.
	ds := flaky.waitFor(t, "the final task after retries", func(ds []delivered) bool {
		n := 0
		for _, d := range ds {
			if finalTask(d) != nil {
				n++
			}
		}
		return n == 3
	})
	time.Sleep(100 * time.Millisecond)
	byJTI := map[string]int{}
	for _, d := range flaky.deliveries() {
		byJTI[jtiOf(t, d)]++
	}
	for jti, n := range byJTI {
		if n != 3 {
			t.Errorf("delivery %s attempted %d times, want 3 (two 500s, then 200)", jti, n)
		}
	}
	if len(ds) < 3 {
		t.Errorf("deliveries = %d", len(ds))
	}

	down := newPushReceiver(t, 100)
	_, _, body = ts.a2aPost(alice, "1.0", a2aSend(2, "subtract", `{"minuend":5,"subtrahend":2}`, push(down.URL)))
	if code := a2aErrCode(t, body); code != 0 {
		t.Fatalf("send: %s", body)
	}
	// Each notification (the working state, the final task) is tried three times, then
	// given up: wait for the final task's third attempt, then a while for any extra one.
	ds = down.waitFor(t, "the final task's last attempt", func(ds []delivered) bool {
		n := 0
		for _, d := range ds {
			if finalTask(d) != nil {
				n++
			}
		}
		return n >= 3
	})
	time.Sleep(200 * time.Millisecond)
	byJTI = map[string]int{}
	for _, d := range down.deliveries() {
		byJTI[jtiOf(t, d)]++
	}
	for jti, n := range byJTI {
		if n != 3 {
			t.Errorf("delivery %s attempted %d times, want max_attempts 3", jti, n)
		}
	}
	if !strings.Contains(ts.logs.String(), "push notification failed") {
		t.Error("an exhausted delivery was not logged")
	}
	_ = ds
}

func jtiOf(t *testing.T, d delivered) string {
	t.Helper()
	parts := strings.Split(d.header.Get("X-Gatehouse-Signature"), ".")
	if len(parts) != 3 {
		t.Fatalf("no signature on a delivery")
	}
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Jti string `json:"jti"`
	}
	_ = json.Unmarshal(b, &c)
	return c.Jti
}

// TestA2APushConfigOps: the config operations in 1.0 and 0.3 on the caller's own task;
// another principal (another subject, or the same subject of another issuer) gets
// TaskNotFound for every one of them on it.
func TestA2APushConfigOps(t *testing.T) {
	ts := startA2APush(t, pushKeys+`, default_skill: slow`)
	recv := newPushReceiver(t, 0)
	alice := callerToken(t, "alice", "agents", "caps")
	_, _, body := ts.a2aPost(alice, "1.0", a2aSend(1, "slow", `{}`, `,"configuration":{"returnImmediately":true}`))
	var res struct {
		Task a2aTask `json:"task"`
	}
	a2aResult(t, body, &res)
	id := res.Task.ID
	rpc := func(tok, version, method, params string) string {
		_, _, b := ts.a2aPost(tok, version, fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":%s}`, method, params))
		return b
	}
	created := rpc(alice, "1.0", "CreateTaskPushNotificationConfig", fmt.Sprintf(`{"taskId":%q,"id":"c1","url":%q,"token":"t"}`, id, recv.URL))
	var cfg a2a.TaskPushNotificationConfig
	a2aResult(t, created, &cfg)
	if cfg.ID != "c1" || cfg.TaskID != id || cfg.URL != recv.URL {
		t.Errorf("created = %s", created)
	}
	// 0.3: set, get, list.
	set03 := rpc(alice, "", "tasks/pushNotificationConfig/set", fmt.Sprintf(`{"taskId":%q,"pushNotificationConfig":{"id":"c2","url":%q,"authentication":{"schemes":["Bearer"],"credentials":"x"}}}`, id, recv.URL))
	if !strings.Contains(set03, `"pushNotificationConfig":{"id":"c2"`) || !strings.Contains(set03, `"schemes":["Bearer"]`) {
		t.Errorf("0.3 set = %s", set03)
	}
	if got := rpc(alice, "", "tasks/pushNotificationConfig/get", fmt.Sprintf(`{"id":%q,"pushNotificationConfigId":"c1"}`, id)); !strings.Contains(got, `"id":"c1"`) {
		t.Errorf("0.3 get = %s", got)
	}
	var list struct {
		Configs []a2a.TaskPushNotificationConfig `json:"configs"`
	}
	a2aResult(t, rpc(alice, "1.0", "ListTaskPushNotificationConfigs", fmt.Sprintf(`{"taskId":%q}`, id)), &list)
	if len(list.Configs) != 2 {
		t.Errorf("list = %+v, want c1 and c2", list.Configs)
	}

	bob := callerToken(t, "bob", "agents", "caps")
	aliceElsewhere := secondToken(t, "alice", "agents", "caps")
	for _, other := range []string{bob, aliceElsewhere} {
		for _, c := range []struct{ method, params string }{
			{"GetTaskPushNotificationConfig", fmt.Sprintf(`{"taskId":%q,"id":"c1"}`, id)},
			{"ListTaskPushNotificationConfigs", fmt.Sprintf(`{"taskId":%q}`, id)},
			{"DeleteTaskPushNotificationConfig", fmt.Sprintf(`{"taskId":%q,"id":"c1"}`, id)},
			{"CreateTaskPushNotificationConfig", fmt.Sprintf(`{"taskId":%q,"url":%q}`, id, recv.URL)},
		} {
			if code := a2aErrCode(t, rpc(other, "1.0", c.method, c.params)); code != -32001 {
				t.Errorf("another principal's %s = %d, want -32001", c.method, code)
			}
		}
	}
	a2aResult(t, rpc(alice, "1.0", "ListTaskPushNotificationConfigs", fmt.Sprintf(`{"taskId":%q}`, id)), &list)
	if len(list.Configs) != 2 {
		t.Errorf("after the others' attempts, list = %+v", list.Configs)
	}
	// Delete is idempotent; a deleted config is not found.
	for range 2 {
		if got := rpc(alice, "1.0", "DeleteTaskPushNotificationConfig", fmt.Sprintf(`{"taskId":%q,"id":"c1"}`, id)); a2aErrCode(t, got) != 0 {
			t.Errorf("delete = %s", got)
		}
	}
	if code := a2aErrCode(t, rpc(alice, "1.0", "GetTaskPushNotificationConfig", fmt.Sprintf(`{"taskId":%q,"id":"c1"}`, id))); code != -32001 {
		t.Errorf("get of a deleted config = %d, want -32001", code)
	}
	// Refused URLs (this configuration allows 127.0.0.0/8, so loopback in any spelling
	// passes; other special ranges do not) and missing fields.
	for _, u := range []string{"http://[::ffff:10.0.0.1]/", "http://[::1]/", "http://2130706433/", "http://10.0.0.1/", "https://169.254.169.254/", "ftp://x.example/"} {
		got := rpc(alice, "1.0", "CreateTaskPushNotificationConfig", fmt.Sprintf(`{"taskId":%q,"url":%q}`, id, u))
		if code := a2aErrCode(t, got); code != -32602 {
			t.Errorf("create with %s = %s, want -32602", u, got)
		}
	}
	if code := a2aErrCode(t, rpc(alice, "1.0", "CreateTaskPushNotificationConfig", fmt.Sprintf(`{"taskId":%q}`, id))); code != -32602 {
		t.Errorf("create without url = %d", code)
	}
	_ = rpc(alice, "1.0", "CancelTask", fmt.Sprintf(`{"id":%q}`, id))
	// The canceled task's final state reaches c2 (0.3: the task itself, with its kind).
	ds := recv.waitFor(t, "the canceled task", func(ds []delivered) bool {
		for _, d := range ds {
			if strings.Contains(string(d.body), `"kind":"task"`) && strings.Contains(string(d.body), `"canceled"`) {
				return true
			}
		}
		return false
	})
	for _, d := range ds {
		if strings.Contains(string(d.body), `"kind"`) && d.header.Get("Authorization") != "Bearer x" { // 0.3: c2's
			t.Errorf("a delivery to c2 carried Authorization %q", d.header.Get("Authorization"))
		}
	}
}

// TestA2APushOff: without a2a.push.enabled, the operations are refused as the card says.
func TestA2APushOff(t *testing.T) {
	ts := startA2APush(t, "")
	alice := callerToken(t, "alice", "agents", "caps")
	_, _, body := ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTaskPushNotificationConfigs","params":{"taskId":"x"}}`)
	if code := a2aErrCode(t, body); code != -32003 {
		t.Errorf("list = %s, want -32003", body)
	}
	_, _, body = ts.a2aPost(alice, "1.0", a2aSend(1, "subtract", `{"minuend":5,"subtrahend":2}`, `,"configuration":{"taskPushNotificationConfig":{"url":"https://hooks.example.com/"}}`))
	if code := a2aErrCode(t, body); code != -32003 {
		t.Errorf("send with a push config = %s, want -32003", body)
	}
}

// TestA2APushRefusesResolvedLoopback: without loopback in a2a.push.allowed_cidrs, a
// webhook named by a host name that resolves to 127.0.0.1 is accepted as a URL but never
// connected to — the dialler refuses the resolved address — and not retried.
func TestA2APushRefusesResolvedLoopback(t *testing.T) {
	ts := startA2APush(t, `push: {enabled: true, allow_http: true, backoff: 5ms, max_attempts: 3}`)
	recv := newPushReceiver(t, 0)
	port := recv.URL[strings.LastIndexByte(recv.URL, ':')+1:]
	alice := callerToken(t, "alice", "agents", "caps")
	_, _, body := ts.a2aPost(alice, "1.0", a2aSend(1, "subtract", `{"minuend":5,"subtrahend":2}`,
		`,"configuration":{"taskPushNotificationConfig":{"url":"http://localhost:`+port+`/hook"}}`))
	if code := a2aErrCode(t, body); code != 0 {
		t.Fatalf("send: %s", body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(ts.logs.String(), "push notification URL refused: loopback address 127.0.0.1") {
		if time.Now().After(deadline) {
			t.Fatalf("no refused delivery logged:\n%s", ts.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(recv.deliveries()); n != 0 {
		t.Errorf("the receiver behind localhost got %d deliveries", n)
	}
	if strings.Contains(ts.logs.String(), "attempts=2") || strings.Contains(ts.logs.String(), "attempts=3") {
		t.Errorf("a refused address was retried:\n%s", ts.logs.String())
	}
	// The same URL as an IP literal is refused when the config is given.
	_, _, body = ts.a2aPost(alice, "1.0", a2aSend(2, "subtract", `{"minuend":5,"subtrahend":2}`,
		`,"configuration":{"taskPushNotificationConfig":{"url":"http://127.0.0.1:`+port+`/hook"}}`))
	if code := a2aErrCode(t, body); code != -32602 {
		t.Errorf("send with a loopback webhook = %s, want -32602", body)
	}
}

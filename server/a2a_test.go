package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

// a2aSecond signs the tokens of a second issuer, whose subjects are other principals
// than the same subjects of the first.
const a2aSecond = "a2a-second-issuer-secret-0123456789abcdef"

// a2aConfig serves the demo methods as capabilities under JWT auth from two issuers, with
// a policy that lets scope "agents" reach NEKTE and scope "caps" the capabilities, and the
// A2A face with its defaults (%s: more a2a keys).
const a2aConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  jwt:
    issuers:
      - {issuer: "https://idp.test", audiences: [gatehouse], secret: %q}
      - {issuer: "https://idp2.test", audiences: [gatehouse], secret: %q}
log: {level: debug}
routing:
  demo: {}
nekte: {}
policy:
  default: deny
  rules:
    - {id: nekte, match: {method: "nekte.*"}, scopes: [agents]}
    - {id: demo, match: {capability: "*"}, scopes: [caps]}
a2a: {%s}
`

func startA2A(t *testing.T, a2aKeys string) *testServer {
	t.Helper()
	return start(t, fmt.Sprintf(a2aConfig, callerSecret, a2aSecond, a2aKeys), map[string]gateway.Target{"slow.wait": slowTarget{}})
}

// slowTarget is the capability "slow": it runs until its call is cancelled.
type slowTarget struct{}

func (slowTarget) Name() string { return "slow" }

func (slowTarget) Invoke(ctx context.Context, _ *gateway.Call) (*gateway.Result, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (slowTarget) Capabilities() []capability.Capability {
	return []capability.Capability{{ID: "slow", Method: "slow.wait", Kind: capability.KindBuiltin, Description: "Runs until cancelled.",
		Input: json.RawMessage(`{"type":"object"}`)}}
}

// secondToken is a token of the second issuer.
func secondToken(t *testing.T, sub string, scopes ...string) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"iss": "https://idp2.test", "aud": "gatehouse", "sub": sub, "scope": strings.Join(scopes, " "),
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(a2aSecond))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// a2aPost sends body to /a2a with the bearer token and version ("": no header).
func (ts *testServer) a2aPost(token, version, body string) (int, http.Header, string) {
	ts.t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.base+"/a2a", strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// a2aEvents sends a streaming request and returns the data of each event.
func (ts *testServer) a2aEvents(token, version, body string) []string {
	ts.t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.base+"/a2a", strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		if ts.a2aPlainOK {
			return []string{string(b)}
		}
		ts.t.Fatalf("Content-Type %q, body %s", ct, b)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// a2aResult decodes a JSON-RPC response, failing on an error.
func a2aResult(t *testing.T, body string, into any) {
	t.Helper()
	r := decodeOne(t, body)
	if r.Error != nil {
		t.Fatalf("error %d %s: %s", r.Error.Code, r.Error.Message, body)
	}
	if err := json.Unmarshal(r.Result, into); err != nil {
		t.Fatalf("result %s: %v", r.Result, err)
	}
}

// a2aErrCode returns the error code of a JSON-RPC response (0: none).
func a2aErrCode(t *testing.T, body string) int {
	t.Helper()
	var r struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("response %q: %v", body, err)
	}
	if r.Error == nil {
		return 0
	}
	return r.Error.Code
}

// a2aSend is a SendMessage of the 1.0 binding running skill on data.
func a2aSend(id int, skill, data string, extra string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":{"messageId":"m%d","role":"ROLE_USER","parts":[{"data":%s}],"metadata":{"skill":%q}}%s}}`, id, id, data, skill, extra)
}

type a2aTask struct {
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Kind      string `json:"kind"`
	Status    struct {
		State   string `json:"state"`
		Message *struct {
			Parts []map[string]any `json:"parts"`
		} `json:"message"`
	} `json:"status"`
	Artifacts []struct {
		ArtifactID string           `json:"artifactId"`
		Parts      []map[string]any `json:"parts"`
	} `json:"artifacts"`
	History []json.RawMessage `json:"history"`
}

func TestA2AOff(t *testing.T) {
	ts := start(t, baseConfig, nil)
	for _, path := range []string{"/.well-known/agent-card.json", "/a2a"} {
		method := http.MethodGet
		if path == "/a2a" {
			method = http.MethodPost
		}
		req, _ := http.NewRequest(method, ts.base+path, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s without an a2a section: %d, want 404", method, path, resp.StatusCode)
		}
	}
}

func TestA2ACard(t *testing.T) {
	ts := startA2A(t, "")
	get := func(token string) (*http.Response, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, ts.base+"/.well-known/agent-card.json", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var card map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
			t.Fatal(err)
		}
		return resp, card
	}
	skills := func(card map[string]any) []string {
		var ids []string
		for _, s := range card["skills"].([]any) {
			ids = append(ids, s.(map[string]any)["id"].(string))
		}
		return ids
	}
	resp, anon := get("")
	if got := skills(anon); len(got) != 0 {
		t.Errorf("anonymous card skills = %v, want none (the policy lets no anonymous caller reach a capability)", got)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=60" || resp.Header.Get("ETag") == "" {
		t.Errorf("Cache-Control %q ETag %q", cc, resp.Header.Get("ETag"))
	}
	// The public card is the same with credentials: a caller reads its own skills in the
	// extended card.
	resp, card := get(callerToken(t, "alice", "agents", "caps"))
	if got := skills(card); len(got) != 0 {
		t.Errorf("public card skills with credentials = %v, want none", got)
	}
	if caps := card["capabilities"].(map[string]any); caps["extendedAgentCard"] != true || card["supportsAuthenticatedExtendedCard"] != true {
		t.Errorf("the card does not announce its extended card: %v", card)
	}
	_, _, body := ts.a2aPost(callerToken(t, "alice", "agents", "caps"), "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}`)
	var ext map[string]any
	a2aResult(t, body, &ext)
	if got := strings.Join(skills(ext), ","); !strings.Contains(got, "subtract") || !strings.Contains(got, "slow") {
		t.Errorf("alice's extended card skills = %s, want the demo capabilities and slow", got)
	}
	_, _, body = ts.a2aPost(callerToken(t, "alice", "agents", "caps"), "", `{"jsonrpc":"2.0","id":1,"method":"agent/getAuthenticatedExtendedCard"}`)
	a2aResult(t, body, &ext)
	if len(skills(ext)) == 0 {
		t.Errorf("0.3 extended card = %s", body)
	}
	_, _, body = ts.a2aPost(callerToken(t, "bob"), "1.0", `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}`)
	a2aResult(t, body, &ext)
	if got := skills(ext); len(got) != 0 {
		t.Errorf("a caller without scopes sees skills %v in its extended card", got)
	}
	ifaces := card["supportedInterfaces"].([]any)
	first := ifaces[0].(map[string]any)
	if first["url"] != ts.base+"/a2a" || first["protocolBinding"] != "JSONRPC" || first["protocolVersion"] != "1.0" {
		t.Errorf("first interface = %v", first)
	}
	if caps := card["capabilities"].(map[string]any); caps["streaming"] != true || caps["pushNotifications"] != false {
		t.Errorf("capabilities = %v", caps)
	}
	if _, ok := card["securitySchemes"].(map[string]any)["bearer"].(map[string]any)["httpAuthSecurityScheme"]; !ok {
		t.Errorf("securitySchemes = %v, want bearer", card["securitySchemes"])
	}
	req, _ := http.NewRequest(http.MethodGet, ts.base+"/.well-known/agent-card.json", nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	req.Header.Set("Authorization", "Bearer "+callerToken(t, "alice", "agents", "caps"))
	again, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = again.Body.Close()
	if again.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match with the ETag: %d, want 304", again.StatusCode)
	}
}

func TestA2ASendGetList(t *testing.T) {
	ts := startA2A(t, "")
	tok := callerToken(t, "alice", "agents", "caps")
	var res struct {
		Task a2aTask `json:"task"`
	}
	_, _, body := ts.a2aPost(tok, "1.0", a2aSend(1, "subtract", `{"minuend":42,"subtrahend":23}`, ""))
	a2aResult(t, body, &res)
	task := res.Task
	if task.Status.State != "TASK_STATE_COMPLETED" || len(task.Artifacts) != 1 || task.Artifacts[0].Parts[0]["data"] != float64(19) {
		t.Fatalf("SendMessage = %s", body)
	}
	if !strings.HasPrefix(task.ID, "a2a-") || len(task.ID) < 20 || len(task.History) != 1 {
		t.Errorf("task id %q, history %d", task.ID, len(task.History))
	}
	var got a2aTask
	_, _, body = ts.a2aPost(tok, "1.0", `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"`+task.ID+`","historyLength":0}}`)
	a2aResult(t, body, &got)
	if got.ID != task.ID || got.Status.State != "TASK_STATE_COMPLETED" || len(got.Artifacts) != 1 || got.Artifacts[0].Parts[0]["data"] != float64(19) || len(got.History) != 0 {
		t.Errorf("GetTask = %s", body)
	}
	for i := range 4 {
		ts.a2aPost(tok, "1.0", a2aSend(10+i, "sum", `[1,2,`+fmt.Sprint(i)+`]`, ""))
	}
	var list struct {
		Tasks         []a2aTask `json:"tasks"`
		NextPageToken string    `json:"nextPageToken"`
		PageSize      int       `json:"pageSize"`
		TotalSize     int       `json:"totalSize"`
	}
	_, _, body = ts.a2aPost(tok, "1.0", `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"pageSize":3}}`)
	a2aResult(t, body, &list)
	if list.TotalSize != 5 || len(list.Tasks) != 3 || list.NextPageToken == "" || list.PageSize != 3 {
		t.Fatalf("ListTasks page 1 = %s", body)
	}
	_, _, body = ts.a2aPost(tok, "1.0", `{"jsonrpc":"2.0","id":4,"method":"ListTasks","params":{"pageSize":3,"pageToken":"`+list.NextPageToken+`"}}`)
	a2aResult(t, body, &list)
	if len(list.Tasks) != 2 || list.NextPageToken != "" || list.Tasks[1].ID != task.ID {
		t.Errorf("ListTasks page 2 = %s, want the 2 oldest, the first task last", body)
	}
	_, _, body = ts.a2aPost(tok, "1.0", `{"jsonrpc":"2.0","id":6,"method":"ListTasks","params":{"status":"TASK_STATE_COMPLETED","pageSize":4}}`)
	a2aResult(t, body, &list)
	if list.TotalSize != 5 || len(list.Tasks) != 4 || list.NextPageToken == "" {
		t.Errorf("ListTasks of completed tasks = %s", body)
	}
	_, _, body = ts.a2aPost(tok, "1.0", `{"jsonrpc":"2.0","id":7,"method":"ListTasks","params":{"status":"TASK_STATE_WORKING"}}`)
	a2aResult(t, body, &list)
	if list.TotalSize != 0 || len(list.Tasks) != 0 {
		t.Errorf("ListTasks of working tasks = %s, want none", body)
	}
	_, _, body = ts.a2aPost(tok, "1.0", `{"jsonrpc":"2.0","id":8,"method":"ListTasks","params":{"contextId":"`+task.ContextID+`"}}`)
	a2aResult(t, body, &list)
	if list.TotalSize != 1 || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
		t.Errorf("ListTasks of one context = %s", body)
	}
	_, _, body = ts.a2aPost(callerToken(t, "bob", "agents", "caps"), "1.0", `{"jsonrpc":"2.0","id":5,"method":"ListTasks","params":{}}`)
	a2aResult(t, body, &list)
	if list.TotalSize != 0 || len(list.Tasks) != 0 {
		t.Errorf("bob lists alice's tasks: %s", body)
	}
}

// TestA2ATaskBinding: a task belongs to the principal that created it — issuer and subject
// — and any other caller, the same subject of another issuer included, gets TaskNotFound
// for get, cancel and subscribe.
func TestA2ATaskBinding(t *testing.T) {
	ts := startA2A(t, "")
	alice := callerToken(t, "alice", "agents", "caps")
	var res struct {
		Task a2aTask `json:"task"`
	}
	_, _, body := ts.a2aPost(alice, "1.0", a2aSend(1, "slow", `{}`, `,"configuration":{"returnImmediately":true}`))
	a2aResult(t, body, &res)
	id := res.Task.ID
	if res.Task.Status.State != "TASK_STATE_SUBMITTED" {
		t.Fatalf("returnImmediately: %s", body)
	}
	others := map[string]string{
		"another subject":             callerToken(t, "bob", "agents", "caps"),
		"the same subject, elsewhere": secondToken(t, "alice", "agents", "caps"),
	}
	for name, tok := range others {
		for _, method := range []string{"GetTask", "CancelTask", "SubscribeToTask"} {
			t.Run(name+"/"+method, func(t *testing.T) {
				_, _, body := ts.a2aPost(tok, "1.0", `{"jsonrpc":"2.0","id":2,"method":"`+method+`","params":{"id":"`+id+`"}}`)
				if code := a2aErrCode(t, body); code != -32001 {
					t.Errorf("%s of another's task: %s, want -32001 TaskNotFound", method, body)
				}
			})
		}
	}
	var got a2aTask
	_, _, body = ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"`+id+`"}}`)
	a2aResult(t, body, &got)
	if got.Status.State == "TASK_STATE_CANCELED" {
		t.Errorf("another caller's cancel reached the task: %s", body)
	}
	_, _, body = ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":4,"method":"CancelTask","params":{"id":"`+id+`"}}`)
	a2aResult(t, body, &got)
	if got.Status.State != "TASK_STATE_CANCELED" {
		t.Errorf("CancelTask = %s", body)
	}
	_, _, body = ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":5,"method":"CancelTask","params":{"id":"`+id+`"}}`)
	if code := a2aErrCode(t, body); code != -32002 {
		t.Errorf("cancelling a canceled task: %s, want -32002 TaskNotCancelable", body)
	}
	_, _, body = ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":6,"method":"SubscribeToTask","params":{"id":"`+id+`"}}`)
	if code := a2aErrCode(t, body); code != -32004 {
		t.Errorf("subscribing to an ended task: %s, want -32004 UnsupportedOperation", body)
	}
}

func TestA2AStreaming(t *testing.T) {
	ts := startA2A(t, "")
	alice := callerToken(t, "alice", "agents", "caps")
	stream := strings.Replace(a2aSend(1, "subtract", `{"minuend":5,"subtrahend":7}`, ""), "SendMessage", "SendStreamingMessage", 1)
	evs := ts.a2aEvents(alice, "1.0", stream)
	if len(evs) < 3 {
		t.Fatalf("events = %q", evs)
	}
	var first struct {
		Result struct {
			Task *a2aTask `json:"task"`
		} `json:"result"`
	}
	_ = json.Unmarshal([]byte(evs[0]), &first)
	if first.Result.Task == nil || first.Result.Task.Status.State != "TASK_STATE_SUBMITTED" {
		t.Errorf("first event %s, want the submitted task", evs[0])
	}
	last := evs[len(evs)-1]
	if !strings.Contains(last, `"statusUpdate"`) || !strings.Contains(last, "TASK_STATE_COMPLETED") {
		t.Errorf("last event %s, want the completed status update", last)
	}
	if !strings.Contains(strings.Join(evs, "\n"), `"artifactUpdate":{"taskId":"`+first.Result.Task.ID+`"`) || !strings.Contains(strings.Join(evs, ""), `"data":-2`) {
		t.Errorf("events %q carry no result artifact", evs)
	}

	// SubscribeToTask follows a running task until it is canceled.
	var res struct {
		Task a2aTask `json:"task"`
	}
	_, _, body := ts.a2aPost(alice, "1.0", a2aSend(2, "slow", `{}`, `,"configuration":{"returnImmediately":true}`))
	a2aResult(t, body, &res)
	done := make(chan []string)
	go func() {
		done <- ts.a2aEvents(alice, "1.0", `{"jsonrpc":"2.0","id":3,"method":"SubscribeToTask","params":{"id":"`+res.Task.ID+`"}}`)
	}()
	waitFor(t, func() bool {
		_, _, b := ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id":"`+res.Task.ID+`"}}`)
		return strings.Contains(b, "TASK_STATE_WORKING")
	})
	time.Sleep(50 * time.Millisecond) // let the subscription attach
	ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":5,"method":"CancelTask","params":{"id":"`+res.Task.ID+`"}}`)
	select {
	case evs := <-done:
		if len(evs) < 2 || !strings.Contains(evs[0], `"task"`) || !strings.Contains(evs[len(evs)-1], "TASK_STATE_CANCELED") {
			t.Errorf("subscription events = %q", evs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the subscription did not end with the cancel")
	}
}

// TestA2AVersions: 1.0 with A2A-Version 1.0; 0.3 names and spellings without the header
// (or with 0.3) unless a2a.serve_v03 is false; any other version refused.
func TestA2AVersions(t *testing.T) {
	ts := startA2A(t, "")
	alice := callerToken(t, "alice", "agents", "caps")
	send03 := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"data","data":{"minuend":3,"subtrahend":1}}],"metadata":{"skill":"subtract"}}}}`
	for _, version := range []string{"", "0.3"} {
		var task a2aTask
		_, _, body := ts.a2aPost(alice, version, send03)
		a2aResult(t, body, &task)
		if task.Kind != "task" || task.Status.State != "completed" || !strings.Contains(body, `"kind":"data"`) {
			t.Errorf("message/send with A2A-Version %q = %s", version, body)
		}
		_, _, body = ts.a2aPost(alice, version, `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"`+task.ID+`"}}`)
		if !strings.Contains(body, `"state":"completed"`) || !strings.Contains(body, `"kind":"task"`) {
			t.Errorf("tasks/get = %s", body)
		}
	}
	tests := []struct {
		name, version, body string
		code                int
	}{
		{"0.3 name under 1.0", "1.0", send03, -32601},
		{"1.0 name under 0.3", "", a2aSend(3, "subtract", `{"minuend":1,"subtrahend":1}`, ""), -32601},
		{"unknown version", "2.0", a2aSend(4, "subtract", `{}`, ""), -32009},
		{"unknown version, 0.x", "0.2", send03, -32009},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := ts.a2aPost(alice, tt.version, tt.body)
			if code := a2aErrCode(t, body); code != tt.code || status != http.StatusOK {
				t.Errorf("%d %s, want code %d", status, body, tt.code)
			}
			if tt.code == -32009 && !strings.Contains(body, `"id":`) {
				t.Errorf("the version error does not answer the request's id: %s", body)
			}
		})
	}
	off := startA2A(t, "serve_v03: false")
	_, _, body := off.a2aPost(alice, "", send03)
	if code := a2aErrCode(t, body); code != -32009 {
		t.Errorf("0.3 with serve_v03 false: %s, want -32009", body)
	}
	_, _, body = off.a2aPost(alice, "1.0", a2aSend(5, "subtract", `{"minuend":1,"subtrahend":1}`, ""))
	if a2aErrCode(t, body) != 0 {
		t.Errorf("1.0 with serve_v03 false: %s", body)
	}
}

// TestA2ABadInput: refusals before and after decoding, each typed.
func TestA2ABadInput(t *testing.T) {
	ts := startA2A(t, "max_message_bytes: 2048, max_tasks_per_principal: 2")
	alice := callerToken(t, "alice", "agents", "caps")
	status, hdr, body := ts.a2aPost("", "1.0", a2aSend(1, "subtract", `{}`, ""))
	if status != http.StatusUnauthorized || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("no credential: %d %s", status, body)
	}
	tests := []struct {
		name, body string
		code       int
	}{
		{"not JSON", `{"jsonrpc":`, -32700},
		{"batch", `[` + a2aSend(1, "subtract", `{}`, "") + `]`, -32600},
		{"duplicate member", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"a","id":"b"}}`, -32600},
		{"case-folded member", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"Id":"a"}}`, -32602},
		{"too large", a2aSend(1, "subtract", `"`+strings.Repeat("x", 4096)+`"`, ""), -32600},
		{"unknown skill", a2aSend(1, "nope", `{}`, ""), -32602},
		{"no skill", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, -32602},
		{"files only", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"url":"https://x/y.png"}],"metadata":{"skill":"subtract"}}}}`, -32005},
		{"unknown task", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"a2a-nope"}}`, -32001},
		{"push config", `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"t","url":"https://x"}}`, -32003},
		{"the policy hides the skill", a2aSend(1, "subtract", `{"minuend":1,"subtrahend":1}`, ""), -32602},
		{"the policy refuses NEKTE to a caller who sees the skill", a2aSend(1, "subtract", `{"minuend":1,"subtrahend":1}`, ""), 4002},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := alice
			switch {
			case strings.HasPrefix(tt.name, "the policy hides"):
				tok = callerToken(t, "carol", "other")
			case strings.HasPrefix(tt.name, "the policy refuses"):
				tok = callerToken(t, "dave", "caps") // sees the capabilities, may not delegate
			}
			_, _, body := ts.a2aPost(tok, "1.0", tt.body)
			if code := a2aErrCode(t, body); code != tt.code {
				t.Errorf("%s, want code %d", body, tt.code)
			}
		})
	}
	for i := range 2 {
		_, _, body := ts.a2aPost(alice, "1.0", a2aSend(10+i, "slow", `{}`, `,"configuration":{"returnImmediately":true}`))
		if a2aErrCode(t, body) != 0 {
			t.Fatalf("task %d: %s", i, body)
		}
	}
	_, _, body = ts.a2aPost(alice, "1.0", a2aSend(12, "slow", `{}`, `,"configuration":{"returnImmediately":true}`))
	if code := a2aErrCode(t, body); code != 5000 {
		t.Errorf("a third task past max_tasks_per_principal 2: %s, want 5000", body)
	}
}

// TestA2ALimits: the a2a section's limits, each at its edge.
func TestA2ALimits(t *testing.T) {
	ts := startA2A(t, "max_parts: 2, max_history: 1, page_size: 2, max_page_size: 2, sse_idle_timeout: 300ms")
	alice := callerToken(t, "alice", "agents", "caps")
	parts := func(n int) string {
		p := make([]string, n)
		for i := range p {
			p[i] = `{"data":{"minuend":1,"subtrahend":1}}`
		}
		return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[` + strings.Join(p, ",") + `],"metadata":{"skill":"subtract"}}}}`
	}
	if _, _, body := ts.a2aPost(alice, "1.0", parts(2)); a2aErrCode(t, body) != 0 {
		t.Errorf("max_parts 2, 2 parts: %s", body)
	}
	if _, _, body := ts.a2aPost(alice, "1.0", parts(3)); a2aErrCode(t, body) != -32602 {
		t.Errorf("max_parts 2, 3 parts: %s, want -32602", body)
	}
	var res struct {
		Task a2aTask `json:"task"`
	}
	_, _, body := ts.a2aPost(alice, "1.0", a2aSend(2, "subtract", `{"minuend":1,"subtrahend":1}`, `,"configuration":{"historyLength":5}`))
	a2aResult(t, body, &res)
	if len(res.Task.History) != 1 {
		t.Errorf("history of a one-message task: %d, want 1", len(res.Task.History))
	}
	var got a2aTask
	_, _, body = ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"`+res.Task.ID+`","historyLength":0}}`)
	a2aResult(t, body, &got)
	if len(got.History) != 0 {
		t.Errorf("historyLength 0: %d messages", len(got.History))
	}
	var list struct {
		Tasks     []a2aTask `json:"tasks"`
		PageSize  int       `json:"pageSize"`
		TotalSize int       `json:"totalSize"`
	}
	_, _, body = ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":4,"method":"ListTasks","params":{"pageSize":50}}`)
	a2aResult(t, body, &list)
	if len(list.Tasks) != 2 || list.PageSize != 2 || list.TotalSize != 2 {
		t.Errorf("pageSize 50 under max_page_size 2: %s", body)
	}
	_, _, body = ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":5,"method":"ListTasks","params":{"pageToken":"not-ours"}}`)
	if a2aErrCode(t, body) != -32602 {
		t.Errorf("a page token not given: %s, want -32602", body)
	}

	// A stream on which the task says nothing for sse_idle_timeout ends; the task runs on.
	_, _, body = ts.a2aPost(alice, "1.0", a2aSend(6, "slow", `{}`, `,"configuration":{"returnImmediately":true}`))
	a2aResult(t, body, &res)
	began := time.Now()
	evs := ts.a2aEvents(alice, "1.0", `{"jsonrpc":"2.0","id":7,"method":"SubscribeToTask","params":{"id":"`+res.Task.ID+`"}}`)
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the idle stream lasted %v", took)
	}
	if len(evs) == 0 || strings.Contains(strings.Join(evs, ""), "TASK_STATE_CANCELED") {
		t.Errorf("idle stream events %q", evs)
	}
	_, _, body = ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":8,"method":"GetTask","params":{"id":"`+res.Task.ID+`"}}`)
	a2aResult(t, body, &got)
	if got.Status.State != "TASK_STATE_WORKING" && got.Status.State != "TASK_STATE_SUBMITTED" {
		t.Errorf("the task after its stream idled: %s, want it still running", body)
	}
}

// TestA2AConcurrentSends: one principal's concurrent messages all get tasks (its task
// index is written under compare-and-swap, retried).
func TestA2AConcurrentSends(t *testing.T) {
	ts := startA2A(t, "")
	alice := callerToken(t, "alice", "agents", "caps")
	const n = 24
	errs := make(chan string, n)
	for i := range n {
		go func() {
			_, _, body := ts.a2aPost(alice, "1.0", a2aSend(100+i, "subtract", `{"minuend":1,"subtrahend":1}`, ""))
			if !strings.Contains(body, "TASK_STATE_COMPLETED") {
				errs <- body
				return
			}
			errs <- ""
		}()
	}
	for range n {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
	var list struct {
		TotalSize int `json:"totalSize"`
	}
	_, _, body := ts.a2aPost(alice, "1.0", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`)
	a2aResult(t, body, &list)
	if list.TotalSize != n {
		t.Errorf("ListTasks after %d concurrent sends: %s", n, body)
	}
}

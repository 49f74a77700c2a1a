package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/a2a"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func call(method, params string) *gateway.Call {
	return &gateway.Call{Method: method, Params: json.RawMessage(params)}
}

func codeOf(err error) schemas.Code {
	if ge, ok := errors.AsType[*gateway.Error](err); ok {
		return ge.Code()
	}
	return 0
}

func TestSkillsFromCard(t *testing.T) {
	a := newAgent(t)
	a.setCard(a.card10(false, "echo", "sum"))
	tg := start(t, a, nil)
	skills, gen := tg.Skills()
	if len(skills) != 2 || skills[0].Method != "a2a.fake.echo" || skills[1].ID != "sum" || gen == 0 || gen%2 != 0 {
		t.Fatalf("skills %+v gen %d", skills, gen)
	}
	// A refresh with the same skills keeps the generation; a changed card moves it.
	tg.Reload(context.Background())
	if _, g := tg.Skills(); g != gen {
		t.Fatalf("unchanged card: generation %d, want %d", g, gen)
	}
	a.setCard(a.card10(false, "echo"))
	tg.Reload(context.Background())
	skills, g := tg.Skills()
	if g == gen || len(skills) != 1 {
		t.Fatalf("changed card: skills %+v gen %d (was %d)", skills, g, gen)
	}
}

func TestSendMessage(t *testing.T) {
	completed := `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},` +
		`"artifacts":[{"artifactId":"a1","name":"answer","parts":[{"text":"hello"},{"data":{"n":1}}]}]}}`
	for _, tc := range []struct {
		name, answer string
		code         schemas.Code
		want         string
	}{
		{"completed task", completed, 0, `"text":"hello"`},
		{"message", `{"message":{"messageId":"m1","role":"ROLE_AGENT","parts":[{"text":"hi there"}]}}`, 0, `"state":"message","text":"hi there"`},
		{"failed", `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_FAILED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"boom"}]}}}}`, schemas.CodeAgentTaskFailed, ""},
		{"rejected", `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_REJECTED"}}}`, schemas.CodeAgentRejected, ""},
		{"canceled", `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_CANCELED"}}}`, schemas.CodeCancelled, ""},
		{"input required", `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}}`, schemas.CodeAgentExecution, ""},
		{"unknown state", `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_DANCING"}}}`, schemas.CodeDependencyFailed, ""},
		{"agent error", `{"error":{"code":-32001,"message":"no such task"}}`, schemas.CodeTaskNotFound, ""},
		{"not a result", `{"weird":true}`, schemas.CodeDependencyFailed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(t)
			a.setCard(a.card10(false, "echo"))
			a.answer = func(request) string { return tc.answer }
			tg := start(t, a, nil)
			ctx := gateway.WithHopToken(context.Background(), "minted-hop-token")
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			res, err := tg.Invoke(ctx, call("a2a.fake.echo", `{"text":"hi","data":{"x":1}}`))
			if tc.code != 0 {
				if codeOf(err) != tc.code {
					t.Fatalf("error %v, want code %d", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(res.Value), tc.want) {
				t.Fatalf("result %s, want %s in it", res.Value, tc.want)
			}
			rq := a.seen()[0]
			if rq.Method != "SendMessage" || rq.Header.Get("A2A-Version") != "1.0" ||
				rq.Header.Get("Authorization") != "Bearer minted-hop-token" || rq.Header.Get(a2a.TimeoutHeader) == "" {
				t.Fatalf("request %s headers %v", rq.Method, rq.Header)
			}
			var p struct {
				Message struct {
					Role     string            `json:"role"`
					Parts    []json.RawMessage `json:"parts"`
					Metadata map[string]string `json:"metadata"`
				} `json:"message"`
			}
			if err := json.Unmarshal(rq.Params, &p); err != nil || p.Message.Role != "ROLE_USER" || len(p.Message.Parts) != 2 ||
				string(p.Message.Parts[0]) != `{"text":"hi"}` || p.Message.Metadata["skillId"] != "echo" {
				t.Fatalf("params %s", rq.Params)
			}
		})
	}
}

func TestSendMessageV03(t *testing.T) {
	a := newAgent(t)
	a.setCard(cardJSON(a.srv.URL+"/rpc", "0.3.0", false, "echo"))
	a.answer = func(request) string {
		return `{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"},` +
			`"artifacts":[{"artifactId":"a1","parts":[{"kind":"text","text":"old hello"}]}]}`
	}
	tg := start(t, a, func(c *a2a.Config) { c.DownstreamToken.Mode = "none" })
	ctx := gateway.WithHopToken(context.Background(), "never-sent")
	res, err := tg.Invoke(ctx, call("a2a.fake.echo", `{"text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Value), `"state":"completed","text":"old hello"`) {
		t.Fatalf("result %s", res.Value)
	}
	rq := a.seen()[0]
	if rq.Method != "message/send" || rq.Header.Get("A2A-Version") != "" || rq.Header.Get("Authorization") != "" ||
		!strings.Contains(string(rq.Params), `"kind":"text"`) || !strings.Contains(string(rq.Params), `"role":"user"`) {
		t.Fatalf("request %s %s headers %v", rq.Method, rq.Params, rq.Header)
	}
}

func TestSendMessagePollsRunningTask(t *testing.T) {
	a := newAgent(t)
	a.setCard(a.card10(false, "slow"))
	var n int
	a.answer = func(r request) string {
		if r.Method == "SendMessage" {
			return `{"task":{"id":"t9","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`
		}
		n++
		if n < 2 {
			return `{"id":"t9","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}`
		}
		return `{"id":"t9","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"x","parts":[{"text":"done"}]}]}`
	}
	tg := start(t, a, nil)
	res, err := tg.Invoke(context.Background(), call("a2a.fake.slow", `{"text":"go"}`))
	if err != nil || !strings.Contains(string(res.Value), `"text":"done"`) {
		t.Fatalf("%v %+v", err, res)
	}
	if got := a.seen(); len(got) != 3 || got[1].Method != "GetTask" || string(got[1].Params) != `{"id":"t9"}` {
		t.Fatalf("requests %+v", got)
	}
}

func TestInvokeRefusals(t *testing.T) {
	a := newAgent(t)
	a.setCard(a.card10(false, "echo"))
	a.answer = func(request) string {
		return `{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}`
	}
	tg := start(t, a, nil)
	for _, tc := range []struct {
		name, method, params string
		code                 schemas.Code
	}{
		{"unknown skill", "a2a.fake.nope", `{"text":"x"}`, schemas.CodeMethodNotFound},
		{"no params", "a2a.fake.echo", ``, schemas.CodeInvalidParams},
		{"neither text nor data", "a2a.fake.echo", `{}`, schemas.CodeInvalidParams},
		{"data without text", "a2a.fake.echo", `{"data":{"a":1}}`, schemas.CodeInvalidParams},
		{"unknown member", "a2a.fake.echo", `{"text":"x","extra":1}`, schemas.CodeInvalidParams},
		{"text not a string", "a2a.fake.echo", `{"text":1}`, schemas.CodeInvalidParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tg.Invoke(context.Background(), call(tc.method, tc.params)); codeOf(err) != tc.code {
				t.Fatalf("error %v, want code %d", err, tc.code)
			}
		})
	}
	if n := len(a.seen()); n != 0 {
		t.Fatalf("%d requests reached the agent", n)
	}
}

func TestResponseLimit(t *testing.T) {
	a := newAgent(t)
	a.setCard(a.card10(false, "big"))
	a.answer = func(request) string {
		return `{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"` +
			strings.Repeat("x", 4096) + `"}]}]}}`
	}
	tg := start(t, a, func(c *a2a.Config) { c.MaxResponseBytes = 1024 })
	if _, err := tg.Invoke(context.Background(), call("a2a.fake.big", `{"text":"x"}`)); codeOf(err) != schemas.CodePayloadTooLarge {
		t.Fatalf("error %v", err)
	}
}

func TestCardLimitAndUnavailable(t *testing.T) {
	a := newAgent(t)
	a.setCard(a.card10(false, "echo"))
	tg, err := a2a.New(a2a.Config{Name: "fake", CardURL: a.srv.URL, MaxCardBytes: 64}, a2a.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tg.Close() }()
	deadline := time.Now().Add(5 * time.Second)
	for tg.CardFailures() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := tg.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "max_card_bytes") {
		t.Fatalf("ready: %v", err)
	}
	_, err = tg.Invoke(context.Background(), call("a2a.fake.echo", `{"text":"x"}`))
	if codeOf(err) != schemas.CodeUnavailable || !errors.Is(err, gateway.ErrNotSent) {
		t.Fatalf("error %v", err)
	}
}

// progressSink collects progress reports.
type progressSink struct {
	mu  sync.Mutex
	got []gateway.Progress
}

func (p *progressSink) add(g gateway.Progress) {
	p.mu.Lock()
	p.got = append(p.got, g)
	p.mu.Unlock()
}

func TestStreamingProgress(t *testing.T) {
	for _, v := range []string{"1.0", "0.3"} {
		t.Run(v, func(t *testing.T) {
			a := newAgent(t)
			if v == "1.0" {
				a.setCard(a.card10(true, "story"))
				a.events = []string{
					`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}`,
					`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m1","role":"ROLE_AGENT","parts":[{"text":"step 1"}]}}}}`,
					`{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a","name":"story","parts":[{"text":"once"}]}}}`,
					`{"artifactUpdate":{"taskId":"t1","contextId":"c1","append":true,"artifact":{"artifactId":"a","parts":[{"text":"upon"}]}}}`,
					`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`,
				}
			} else {
				a.setCard(cardJSON(a.srv.URL+"/rpc", "0.3.0", true, "story"))
				a.events = []string{
					`{"kind":"task","id":"t1","contextId":"c1","status":{"state":"submitted"}}`,
					`{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"working","message":{"kind":"message","messageId":"m1","role":"agent","parts":[{"kind":"text","text":"step 1"}]}}}`,
					`{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"a","name":"story","parts":[{"kind":"text","text":"once"}]}}`,
					`{"kind":"artifact-update","taskId":"t1","contextId":"c1","append":true,"artifact":{"artifactId":"a","parts":[{"kind":"text","text":"upon"}]}}`,
					`{"kind":"status-update","taskId":"t1","contextId":"c1","final":true,"status":{"state":"completed"}}`,
				}
			}
			tg := start(t, a, nil)
			var sink progressSink
			res, err := tg.Invoke(gateway.WithProgress(context.Background(), sink.add), call("a2a.fake.story", `{"text":"tell"}`))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(res.Value), `"text":"once\nupon"`) || !strings.Contains(string(res.Value), `"task_id":"t1"`) {
				t.Fatalf("result %s", res.Value)
			}
			if len(sink.got) != 4 || sink.got[0].Message != "step 1" || sink.got[1].Message != "artifact story" || sink.got[3].Progress != 4 {
				t.Fatalf("progress %+v", sink.got)
			}
			want := map[string]string{"1.0": "SendStreamingMessage", "0.3": "message/stream"}[v]
			if m := a.seen()[0].Method; m != want {
				t.Fatalf("method %s, want %s", m, want)
			}
		})
	}
}

func TestStreamingFailedIsTyped(t *testing.T) {
	a := newAgent(t)
	a.setCard(a.card10(true, "fail"))
	a.events = []string{
		`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}`,
		`{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_FAILED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"it broke"}]}}}}`,
	}
	tg := start(t, a, nil)
	_, err := tg.Invoke(gateway.WithProgress(context.Background(), func(gateway.Progress) {}), call("a2a.fake.fail", `{"text":"x"}`))
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Code() != schemas.CodeAgentTaskFailed || ge.Data()["message"] != "it broke" || ge.Data()["task_id"] != "t1" {
		t.Fatalf("error %v", err)
	}
}

func TestCancelSendsCancelTask(t *testing.T) {
	a := newAgent(t)
	a.setCard(a.card10(true, "slow"))
	a.events = []string{
		`{"task":{"id":"t-slow","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}`,
		`{"statusUpdate":{"taskId":"t-slow","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`,
	}
	a.hold = make(chan struct{})
	defer close(a.hold)
	a.answer = func(request) string {
		return `{"id":"t-slow","contextId":"c1","status":{"state":"TASK_STATE_CANCELED"}}`
	}
	tg := start(t, a, nil)
	ctx, cancel := context.WithCancel(gateway.WithHopToken(context.Background(), "hop"))
	progressed := make(chan struct{}, 4)
	done := make(chan error, 1)
	go func() {
		_, err := tg.Invoke(gateway.WithProgress(ctx, func(gateway.Progress) { progressed <- struct{}{} }), call("a2a.fake.slow", `{"text":"x"}`))
		done <- err
	}()
	<-progressed
	cancel()
	if err := <-done; codeOf(err) != schemas.CodeCancelled {
		t.Fatalf("error %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range a.seen() {
			if r.Method == "CancelTask" {
				if string(r.Params) != `{"id":"t-slow"}` || r.Header.Get("Authorization") != "Bearer hop" {
					t.Fatalf("CancelTask %s %v", r.Params, r.Header)
				}
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no CancelTask reached the agent")
}

func TestDeadlineBoundsTheCall(t *testing.T) {
	a := newAgent(t)
	a.setCard(a.card10(false, "slow"))
	release := make(chan struct{})
	defer close(release)
	a.answer = func(request) string {
		<-release
		return `{}`
	}
	tg := start(t, a, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err := tg.Invoke(ctx, call("a2a.fake.slow", `{"text":"x"}`))
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Code() != schemas.CodeDeadlineExceeded || ge.Data()["layer"] != gateway.LayerUpstream {
		t.Fatalf("error %v", err)
	}
	ms := a.seen()[0].Header.Get(a2a.TimeoutHeader)
	if ms == "" || len(ms) > 3 {
		t.Fatalf("timeout header %q, want at most 150 ms", ms)
	}
}

// TestSeedCarriesTheCard: a target built for an unchanged section (a reload) starts with
// the card of the one it replaces; a changed section fetches its own.
func TestSeedCarriesTheCard(t *testing.T) {
	a := newAgent(t)
	a.setCard(a.card10(false, "echo"))
	old := start(t, a, nil)
	a.setCard(nil) // the agent is down at the reload: the card cannot be fetched again
	for _, tc := range []struct {
		name  string
		cfg   a2a.Config
		ready bool
	}{
		{"unchanged", a2a.Config{Name: "fake", CardURL: a.srv.URL}, true},
		{"changed", a2a.Config{Name: "fake", CardURL: a.srv.URL, RequestTimeout: time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := a2a.New(tc.cfg, a2a.Options{Seed: old})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tg.Close() }()
			skills, _ := tg.Skills()
			if (tg.Ready(context.Background()) == nil) != tc.ready || (len(skills) == 1) != tc.ready {
				t.Fatalf("ready %v, skills %+v", tg.Ready(context.Background()), skills)
			}
		})
	}
}

package a2aface

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	nk "github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func TestStateOf(t *testing.T) {
	tests := []struct {
		status nk.TaskStatus
		code   schemas.Code
		want   a2a.TaskState
	}{
		{nk.TaskPending, 0, a2a.StateSubmitted},
		{nk.TaskAccepted, 0, a2a.StateSubmitted},
		{nk.TaskRunning, 0, a2a.StateWorking},
		{nk.TaskSuspended, 0, a2a.StateWorking},
		{nk.TaskCompleted, 0, a2a.StateCompleted},
		{nk.TaskCancelled, 0, a2a.StateCanceled},
		{nk.TaskFailed, schemas.CodeToolFailed, a2a.StateFailed},
		{nk.TaskFailed, schemas.CodeInsufficientScope, a2a.StateRejected},
		{nk.TaskFailed, schemas.CodeRateLimited, a2a.StateFailed},
	}
	for _, tt := range tests {
		if got := stateOf(tt.status, tt.code); got != tt.want {
			t.Errorf("stateOf(%s, %d) = %s, want %s", tt.status, tt.code, got, tt.want)
		}
	}
}

func TestTrackerEvents(t *testing.T) {
	now := func() time.Time { return time.Unix(0, 0) }
	tr := newTracker(&record{ID: "a2a-1", ContextID: "c"}, now)
	steps := []struct {
		msg   string
		final bool
		want  string // the kind and state or artifact of the events, in order
	}{
		{`{"event":"status_change","data":{"task_id":"a2a-1","from":"pending","to":"accepted"}}`, false, ""},
		{`{"event":"status_change","data":{"task_id":"a2a-1","from":"accepted","to":"running"}}`, false, "status:TASK_STATE_WORKING"},
		{`{"event":"progress","data":{"processed":1,"total":2,"message":"half"}}`, false, "status:TASK_STATE_WORKING"},
		{`{"event":"partial","data":{"out":{"x":1}}}`, false, "artifact:partial"},
		{`{"event":"complete","data":{"task_id":"a2a-1","status":"completed","out":{"minimal":"ok","full":{"x":2}}}}`, true, "artifact:result status:TASK_STATE_COMPLETED"},
	}
	for _, st := range steps {
		evs, final := tr.apply([]byte(st.msg))
		got := ""
		for _, ev := range evs {
			if got != "" {
				got += " "
			}
			switch {
			case ev.Status != nil:
				got += "status:" + string(ev.Status.Status.State)
			case ev.Artifact != nil:
				got += "artifact:" + ev.Artifact.Artifact.ArtifactID
			}
		}
		if got != st.want || final != st.final {
			t.Errorf("%s: events %q final %v, want %q %v", st.msg, got, final, st.want, st.final)
		}
	}
	if a := tr.task.Artifacts; len(a) != 1 || string(a[0].Parts[0].Data) != `{"x":2}` || *a[0].Parts[1].Text != "ok" {
		t.Errorf("artifacts = %+v", a)
	}
	if evs, _ := tr.apply([]byte(`{"event":"status_change","data":{"task_id":"a2a-1","from":"pending","to":"accepted"}}`)); len(evs) != 0 {
		t.Errorf("a replayed move back to submitted: %+v, want nothing", evs)
	}
	failed := newTracker(&record{ID: "a2a-2"}, now)
	if evs, final := failed.apply([]byte(`{"event":"error","data":{"code":4002,"message":"Insufficient scope"}}`)); !final || evs[0].Status.Status.State != a2a.StateRejected {
		t.Errorf("a policy refusal: %+v final %v, want rejected", evs, final)
	}
}

func TestInputOf(t *testing.T) {
	text := func(s string) a2a.Part { return a2a.TextPart(s) }
	withProp := capability.Capability{ID: "c", Input: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q"]}`)}
	noInput := capability.Capability{ID: "c", Input: json.RawMessage(`{"type":"object"}`)}
	numbers := capability.Capability{ID: "c", Input: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}
	tests := []struct {
		name  string
		parts []a2a.Part
		c     capability.Capability
		want  string
		code  int
	}{
		{"data part", []a2a.Part{text("ignored"), a2a.DataPart(json.RawMessage(`[1,2]`))}, numbers, `[1,2]`, 0},
		{"text as JSON", []a2a.Part{text(` {"n":1} `)}, numbers, `{"n":1}`, 0},
		{"text into the string property", []a2a.Part{text("hello")}, withProp, `{"q":"hello"}`, 0},
		{"no input", []a2a.Part{text("go")}, noInput, `{}`, 0},
		{"text a skill cannot take", []a2a.Part{text("hello")}, numbers, "", -32602},
		{"files only", []a2a.Part{{URL: "https://x/y"}}, numbers, "", -32005},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := inputOf(&a2a.Message{Parts: tt.parts}, tt.c)
			switch {
			case tt.code != 0 && (err == nil || int(err.Code) != tt.code):
				t.Errorf("inputOf = %s, %v; want code %d", got, err, tt.code)
			case tt.code == 0 && (err != nil || string(got) != tt.want):
				t.Errorf("inputOf = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	d := Config{}.WithDefaults()
	if !*d.ServeV03 || d.MaxTasksPerPrincipal != DefaultMaxTasksPerPrincipal || d.SSEIdleTimeout != DefaultSSEIdleTimeout {
		t.Errorf("defaults = %+v", d)
	}
	for _, bad := range []Config{{MaxHistory: -1}, {PageSize: 500}, {SSEWriteTimeout: -time.Second}} {
		if bad.Validate() == nil {
			t.Errorf("Validate(%+v) = nil", bad)
		}
	}
	if err := (Config{PageSize: 10, MaxPageSize: 20}).Validate(); err != nil {
		t.Errorf("Validate of a good config: %v", err)
	}
}

func TestOwnerOf(t *testing.T) {
	a := ownerOf(principal("alice", "https://a"))
	if a != ownerOf(principal("alice", "https://a")) {
		t.Error("the same principal has two owners")
	}
	if a == ownerOf(principal("alice", "https://b")) || a == ownerOf(principal("bob", "https://a")) || a == ownerOf(principal("alice", "")) {
		t.Error("two principals share an owner")
	}
}

func principal(sub, iss string) gateway.Principal {
	p := gateway.Principal{Subject: sub}
	if iss != "" {
		p.Claims = map[string]any{"iss": iss}
	}
	return p
}

package mcpbackend

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestTasksConfigInterval(t *testing.T) {
	ms := func(v int64) *int64 { return &v }
	cfg := TasksConfig{PollMin: 200 * time.Millisecond, PollMax: 2 * time.Second}
	for _, tc := range []struct {
		cfg       TasksConfig
		suggested *int64
		want      time.Duration
	}{
		{cfg, nil, time.Second}, // none suggested: DefaultTaskPoll
		{cfg, ms(0), time.Second},
		{cfg, ms(199), 200 * time.Millisecond}, // below poll_min: raised
		{cfg, ms(200), 200 * time.Millisecond},
		{cfg, ms(2000), 2 * time.Second},
		{cfg, ms(2001), 2 * time.Second}, // above poll_max: lowered
		{cfg, ms(1 << 62), 2 * time.Second},
		{TasksConfig{PollMax: 300 * time.Millisecond}, nil, 300 * time.Millisecond}, // the default lowered to poll_max
		{TasksConfig{}, ms(50), DefaultTaskPollMin},
		{TasksConfig{}, ms(60_000), DefaultTaskPollMax},
	} {
		if got := tc.cfg.interval(tc.suggested); got != tc.want {
			t.Errorf("%+v interval(%v) = %v, want %v", tc.cfg, tc.suggested, got, tc.want)
		}
	}
}

func TestTasksConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  TasksConfig
		want string
	}{
		{TasksConfig{}, ""},
		{TasksConfig{PollMin: time.Second, PollMax: time.Second}, ""},
		{TasksConfig{PollMin: time.Second + 1, PollMax: time.Second}, "must not exceed"},
		{TasksConfig{PollMin: 6 * time.Second}, "must not exceed"}, // above the default poll_max
		{TasksConfig{PollMin: -1}, "negative"},
		{TasksConfig{PollMax: -1}, "negative"},
	} {
		err := tc.cfg.validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if !(TasksConfig{}).relay() {
		t.Error("relay is on by default")
	}
}

func TestToolTaskSupport(t *testing.T) {
	for def, want := range map[string]mcp.TaskSupport{
		`{"name":"a"}`: "",
		`{"name":"a","execution":{"taskSupport":"required"}}`:  mcp.TaskSupportRequired,
		`{"name":"a","execution":{"taskSupport":"optional"}}`:  mcp.TaskSupportOptional,
		`{"name":"a","execution":{"taskSupport":"forbidden"}}`: mcp.TaskSupportForbidden,
		`{"name":"a","description":"\"taskSupport\""}`:         "",
	} {
		if got := toolTaskSupport(json.RawMessage(def)); got != want {
			t.Errorf("%s: %q, want %q", def, got, want)
		}
	}
	if withinTask(context.Background()) || !withinTask(WithinTask(context.Background())) {
		t.Error("WithinTask")
	}
}

func TestCreatedTaskAndStrip(t *testing.T) {
	if createdTask(json.RawMessage(`{"content":[]}`)) != nil || createdTask(json.RawMessage(`{"task":{"status":"working"}}`)) != nil {
		t.Fatal("a result that is not a CreateTaskResult")
	}
	task := createdTask(json.RawMessage(`{"task":{"taskId":"u-1","status":"working","pollInterval":250}}`))
	if task == nil || task.TaskId != "u-1" || *task.PollInterval != 250 {
		t.Fatalf("%+v", task)
	}
	for in, want := range map[string]string{
		`{"content":[]}`: `{"content":[]}`,
		`{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"u-1"}}}`:         `{"content":[]}`,
		`{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"u-1"},"k":"v"}}`: `{"_meta":{"k":"v"},"content":[]}`,
	} {
		if got := string(stripRelatedTask(json.RawMessage(in))); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestStatusSink(t *testing.T) {
	var got []Progress
	s := &statusSink{out: func(p Progress) { got = append(got, p) }}
	total := 4.0
	s.status(&mcp.Task{Status: mcp.TaskStatusWorking})
	s.progress(Progress{Progress: 2, Total: &total, Message: "half"})
	s.status(&mcp.Task{Status: mcp.TaskStatusWorking}) // unchanged: not relayed again
	s.status(&mcp.Task{Status: mcp.TaskStatusWorking, StatusMessage: "almost"})
	s.status(&mcp.Task{Status: mcp.TaskStatusCompleted})
	want := []string{"0 upstream task working", "2 half", "2 upstream task working: almost", "2 upstream task completed"}
	if len(got) != len(want) {
		t.Fatalf("%d reports: %+v", len(got), got)
	}
	for i, p := range got {
		if s := strings.TrimSpace(strings.Join([]string{jsonNum(p.Progress), p.Message}, " ")); s != want[i] {
			t.Errorf("report %d: %q, want %q", i, s, want[i])
		}
	}
}

func jsonNum(f float64) string { b, _ := json.Marshal(f); return string(b) }

func TestTasksCapable(t *testing.T) {
	all := mcp.ServerCapabilities{Tasks: mcp.NewTasksCapability()}
	listOnly := mcp.ServerCapabilities{Tasks: &mcp.TasksCapability{List: &struct{}{}}}
	for _, tc := range []struct {
		version string
		caps    mcp.ServerCapabilities
		want    bool
	}{
		{mcp.ProtocolVersion20251125, all, true},
		{mcp.ProtocolVersion20251125, listOnly, false},
		{mcp.ProtocolVersion20251125, mcp.ServerCapabilities{}, false},
		{mcp.ProtocolVersion20260728, all, false}, // the extension is not used
	} {
		if got := tasksCapable(&session{version: tc.version, caps: tc.caps}); got != tc.want {
			t.Errorf("%s %+v: %v, want %v", tc.version, tc.caps.Tasks, got, tc.want)
		}
	}
}

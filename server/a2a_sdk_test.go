package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/a2aclient"
)

// TestA2AWithTheSDKClient drives the A2A face with the @a2a-js/sdk client
// (internal/a2aclient), under JWT auth and the policy: card, send, stream, get, list,
// subscribe and cancel as alice; another principal (bob) tries alice's task. Missing
// tools skip it, unless CONFORMANCE_REQUIRED=1.
func TestA2AWithTheSDKClient(t *testing.T) {
	tools := a2aclient.Default()
	if err := tools.Check(); err != nil {
		if errors.Is(err, a2aclient.ErrNotInstalled) && os.Getenv("CONFORMANCE_REQUIRED") != "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	// Push notifications on, the card signed: the client sets a webhook on its slow task,
	// which hears of its cancel.
	ts := startA2APush(t, pushKeys+", card: {sign: true}")
	recv := newPushReceiver(t, 0)
	t.Setenv("A2A_PUSH_URL", recv.URL+"/sdk")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	steps, err := tools.Run(ctx, ts.base, callerToken(t, "alice", "agents", "caps"), callerToken(t, "bob", "agents", "caps"))
	if err != nil {
		t.Fatalf("%v\nsteps so far: %v", err, steps)
	}
	t.Logf("steps: %v", steps)
	str := func(s a2aclient.Step, k string) string { return fmt.Sprint(s[k]) }
	if pc := steps["public-card"]; str(pc, "skills") != "[]" || pc["extended"] != true || pc["push"] != true || pc["signatures"] != float64(1) {
		t.Errorf("public card = %v, want no skills, an extended card, push notifications and a signature", pc)
	}
	card := steps["card"]
	if !strings.Contains(str(card, "skills"), "subtract") || !strings.Contains(str(card, "interfaces"), "JSONRPC 1.0 "+ts.base+"/a2a") ||
		card["streaming"] != true || !strings.Contains(str(card, "schemes"), "bearer") {
		t.Errorf("card = %v", card)
	}
	send := steps["send"]
	if send["kind"] != "task" || send["state"] != "TASK_STATE_COMPLETED" || !strings.Contains(str(send, "values"), "19") {
		t.Errorf("send = %v", send)
	}
	stream := str(steps["stream"], "events")
	if !strings.HasPrefix(stream, "[task:TASK_STATE_SUBMITTED") || !strings.Contains(stream, "artifactUpdate") ||
		!strings.HasSuffix(stream, "statusUpdate:TASK_STATE_COMPLETED]") {
		t.Errorf("stream = %v", steps["stream"])
	}
	if get := steps["get"]; get["id"] != send["id"] || get["state"] != "TASK_STATE_COMPLETED" || !strings.Contains(str(get, "values"), "19") {
		t.Errorf("get = %v", get)
	}
	if list := steps["list"]; !strings.Contains(str(list, "ids"), str(send, "id")) || !strings.Contains(str(list, "ids"), str(steps["stream"], "id")) {
		t.Errorf("list = %v", list)
	}
	if imm := steps["send-immediate"]; imm["state"] != "TASK_STATE_SUBMITTED" {
		t.Errorf("send with returnImmediately = %v", imm)
	}
	for _, op := range []string{"other-get", "other-cancel", "other-subscribe"} {
		if s := steps[op]; s["error"] == nil || !strings.Contains(strings.ToLower(str(s, "message")), "not found") {
			t.Errorf("%s = %v, want the SDK's task-not-found error", op, s)
		}
	}
	if c := steps["cancel"]; c["state"] != "TASK_STATE_CANCELED" {
		t.Errorf("cancel = %v", c)
	}
	if p := steps["push"]; p["id"] != "sdk-hook" || p["taskId"] != steps["send-immediate"]["id"] || !strings.Contains(str(p, "listed"), "sdk-hook") {
		t.Errorf("push = %v", p)
	}
	recv.waitFor(t, "the canceled task at the SDK client's webhook", func(ds []delivered) bool {
		for _, d := range ds {
			if f := finalTask(d); f != nil && f.ID == steps["send-immediate"]["id"] && f.Status.State == "TASK_STATE_CANCELED" &&
				d.header.Get("X-A2A-Notification-Token") == "sdk-token" {
				return true
			}
		}
		return false
	})
	if sub := str(steps["subscribe"], "events"); !strings.HasPrefix(sub, "[task:") || !strings.HasSuffix(sub, "statusUpdate:TASK_STATE_CANCELED]") ||
		strings.Contains(sub, "SUBMITTED") {
		t.Errorf("subscribe = %v", steps["subscribe"])
	}
}

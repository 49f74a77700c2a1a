package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/observability"
)

// accessConfig: JWT callers of https://idp.test, the demo methods, every call in the
// access log and payloads logged (redacted).
const accessConfig = `
server:
  boundary: {addr: "127.0.0.1:0"}
  admin: {addr: "127.0.0.1:0"}
  shutdown_grace: 5s
auth:
  jwt:
    issuers:
      - {issuer: "https://idp.test", audiences: [gatehouse], secret: %q}
routing:
  demo: {}
log: {level: debug, access: {enabled: true, sample_ratio: 1}, debug_payloads: true}
`

// TestAccessLogAuthenticatedCall: an authenticated call gets one access line with its
// method, protocol, status, code, duration, hashed caller and trace id; the payload log
// hides secret fields; and neither the caller's token nor its secrets reach the log.
func TestAccessLogAuthenticatedCall(t *testing.T) {
	ts := start(t, fmt.Sprintf(accessConfig, callerSecret), nil)
	tok := callerToken(t, "alice@example.com", "calc")
	status, hdr, body := ts.post(`{"jsonrpc":"2.0","method":"subtract","params":{"minuend":42,"subtrahend":23},"id":1}`,
		"Authorization", "Bearer "+tok)
	if status != 200 || !strings.Contains(body, `"result":19`) {
		t.Fatalf("subtract: %d %s", status, body)
	}
	const secret = "s3cr3t-p4ssw0rd-value"
	_, hdr2, body2 := ts.post(`{"jsonrpc":"2.0","method":"subtract","params":{"minuend":1,"subtrahend":1,"password":"`+secret+`"},"id":2}`,
		"Authorization", "Bearer "+tok)
	if !strings.Contains(body2, `"error"`) {
		t.Fatalf("subtract with an unknown member: %s", body2)
	}
	logs := waitLogs(t, ts, 2, "msg=access")
	for _, want := range []string{
		"msg=access method=subtract protocol=http status=success code=0",
		"msg=access method=subtract protocol=http status=error code=-32602",
		"caller=" + observability.CallerHash("alice@example.com"),
		"trace_id=" + hdr.Get("X-Trace-Id"),
		"trace_id=" + hdr2.Get("X-Trace-Id"),
		`\"password\":\"[REDACTED]\"`,
		"duration_ms=",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	for _, leak := range append(tokenParts(tok, logs), secretIn(secret, logs)...) {
		t.Errorf("logs carry %q", leak)
	}
	if strings.Contains(logs, "alice@example.com") {
		t.Errorf("logs name the caller instead of hashing it")
	}
}

// TestAccessLogOff: with log.access.enabled false no access line is written, not even for
// a failed call.
func TestAccessLogOff(t *testing.T) {
	ts := start(t, strings.Replace(baseConfig, "log: {level: debug}", "log: {level: debug, access: {enabled: false}}", 1), nil)
	ts.post(`{"jsonrpc":"2.0","method":"no.such.method","id":1}`)
	ts.post(`{"jsonrpc":"2.0","method":"subtract","params":{"minuend":2,"subtrahend":1},"id":2}`)
	time.Sleep(50 * time.Millisecond)
	if logs := ts.logs.String(); strings.Contains(logs, "msg=access") {
		t.Errorf("access lines with the access log off:\n%s", logs)
	}
}

// waitLogs waits until the server's logs hold n lines containing marker (the access line
// is written after the response) and returns them all.
func waitLogs(t *testing.T, ts *testServer, n int, marker string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		logs := ts.logs.String()
		if strings.Count(logs, marker) >= n || time.Now().After(deadline) {
			return logs
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// tokenParts returns the parts of tok found in text: the whole token, or any of its
// segments of 8 characters or more (as auth's leaks helper).
func tokenParts(tok, text string) []string {
	var found []string
	for _, p := range append([]string{tok}, strings.Split(tok, ".")...) {
		if len(p) >= 8 && strings.Contains(text, p) {
			found = append(found, p)
		}
	}
	return found
}

func secretIn(secret, text string) []string {
	if strings.Contains(text, secret) {
		return []string{secret}
	}
	return nil
}

// TestTaskLogsCarryTaskID: with the gateway's logger (observability.NewLogger), what a
// delegated NEKTE task runs is logged under its task_id and agent_id, and under the trace
// of the call that delegated it.
func TestTaskLogsCarryTaskID(t *testing.T) {
	cfg, err := Parse("test.yaml", []byte(strings.Replace(baseConfig, "log: {level: debug}", "log: {level: debug, access: {sample_ratio: 1}}", 1)+"nekte: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	level := new(slog.LevelVar)
	logger, err := observability.NewLogger(cfg.Log, logs, level)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, Options{Logger: logger, LogLevel: level})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{Server: srv, t: t, base: "http://" + srv.BoundaryAddr().String(), admin: "http://" + srv.AdminAddr().String(),
		cancel: cancel, done: make(chan error, 1), logs: logs}
	go func() { ts.done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		if err := ts.stop(); err != nil {
			t.Errorf("server stopped with %v", err)
		}
	})
	ts.waitReady()
	_, hdr, body := ts.post(`{"jsonrpc":"2.0","method":"nekte.delegate","params":{"task":{"id":"log-1","desc":"subtract","timeout_ms":5000,"budget":{"max_tokens":50,"detail_level":"full"},"cap":"subtract","in":{"minuend":5,"subtrahend":3}}},"id":1}`)
	if !strings.Contains(body, "log-1") {
		t.Fatalf("delegate: %s", body)
	}
	waitLogs(t, ts, 2, `"msg":"access"`)
	var task map[string]any
	for line := range strings.SplitSeq(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "access" && rec["method"] == "subtract" {
			task = rec
		}
	}
	if task == nil {
		t.Fatalf("no access line for the task's call:\n%s", logs.String())
	}
	if task["task_id"] != "log-1" || task["agent_id"] != observability.CallerHash("anonymous") || task["trace_id"] != hdr.Get("X-Trace-Id") {
		t.Errorf("task's access line %v; want task_id log-1, agent_id %s, trace_id %s", task, observability.CallerHash("anonymous"), hdr.Get("X-Trace-Id"))
	}
}

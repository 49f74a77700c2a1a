package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// mcpUpstream serves the MCP fixture (demo.MCP) over streamable HTTP on a loopback port
// until the test ends, and returns its URL.
func mcpUpstream(t *testing.T, step time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second}
	handler := demo.NewMCP(demo.MCPOptions{StepDelay: step}).StreamableHTTPHandler(mcpserver.WithStreamableHTTPServer(hs))
	hs.Handler = handler
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := handler.Shutdown(ctx); err != nil {
			t.Errorf("upstream shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("upstream: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// mcpReply is what one POST, GET or DELETE to /mcp got.
type mcpReply struct {
	status int
	sid    string
	body   string
	err    error
}

// mcpPost sends body to url with the given headers (a session ID, the revision's headers).
func mcpDo(ctx context.Context, hc *http.Client, method, url, body string, hdr map[string]string) mcpReply {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return mcpReply{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return mcpReply{err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return mcpReply{status: resp.StatusCode, sid: resp.Header.Get("Mcp-Session-Id"), body: string(b), err: err}
}

func (r mcpReply) String() string {
	if r.err != nil {
		return "error " + r.err.Error()
	}
	return fmt.Sprintf("%d %q", r.status, r.body)
}

// kind classifies a reply for the models: the HTTP status, then what the body holds —
// "empty", "result", "task" (a CreateTaskResult), "status:<s>" (a task), "error <code>",
// or "text" (not JSON-RPC) — of the last JSON-RPC message with an id (an event stream's
// progress notifications come before it); "eof" when a stream ended without one.
func (r mcpReply) kind() string {
	if r.err != nil {
		return "transport-error"
	}
	body := strings.TrimSpace(r.body)
	if body == "" {
		return fmt.Sprintf("%d empty", r.status)
	}
	var last string
	if strings.HasPrefix(body, "event:") || strings.HasPrefix(body, "data:") || strings.HasPrefix(body, ":") {
		for line := range strings.SplitSeq(body, "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"id"`) && !strings.Contains(data, `"method"`) {
				last = data
			}
		}
		if last == "" {
			return fmt.Sprintf("%d eof", r.status)
		}
	} else {
		last = body
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result *struct {
			Task *struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		} `json:"result"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(last), &msg) != nil {
		return fmt.Sprintf("%d text", r.status)
	}
	switch {
	case msg.Error != nil:
		return fmt.Sprintf("%d error %d", r.status, msg.Error.Code)
	case msg.Result != nil && msg.Result.Task != nil:
		return fmt.Sprintf("%d task", r.status)
	case msg.Result != nil && msg.Result.TaskID != "":
		return fmt.Sprintf("%d status:%s", r.status, msg.Result.Status)
	case msg.Result != nil:
		return fmt.Sprintf("%d result", r.status)
	}
	return fmt.Sprintf("%d text", r.status)
}

// taskID is the id of the task a CreateTaskResult carries.
func (r mcpReply) taskID() string {
	var msg struct {
		Result struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		} `json:"result"`
	}
	_ = json.Unmarshal([]byte(strings.TrimSpace(r.body)), &msg)
	return msg.Result.Task.TaskID
}

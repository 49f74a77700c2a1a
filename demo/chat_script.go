package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
)

// chatTool is the demo MCP tool the scripted reply calls: it reports progress (each
// becomes a tool-output event) and then answers with text.
const chatTool = "test_tool_with_progress"

// reply runs the scripted conversation for r, sending its chat.event messages, and
// returns the chat.done payload. It stops with r.ctx's error at the first event after an
// abort.
func (c *Chat) reply(r *chatRequest) (map[string]any, error) {
	ctx := r.ctx
	emit := func(event map[string]any) error {
		if err := c.pause(ctx); err != nil {
			return err
		}
		r.send(envelope(r.id, sessionrpc.TypeChatEvent, event))
		return nil
	}
	msg := r.start.Message
	if err := emit(map[string]any{"type": sessionrpc.EventStatus, "status": "thinking", "message": "Reading your message"}); err != nil {
		return nil, err
	}
	if err := emit(map[string]any{"type": sessionrpc.EventReasoning,
		"text": fmt.Sprintf("The user wrote %d words. I will run the demo tool %s and then answer.", len(strings.Fields(msg)), chatTool)}); err != nil {
		return nil, err
	}
	toolText := "(no tool call)"
	if !r.start.Options.NoTool {
		var err error
		if toolText, err = c.callTool(ctx, r, emit); err != nil {
			return nil, err
		}
	}
	text := fmt.Sprintf("You said: %q. The demo tool answered: %s.", msg, toolText)
	words := strings.SplitAfter(text, " ")
	for _, w := range words {
		if err := emit(map[string]any{"type": sessionrpc.EventTextDelta, "text": w}); err != nil {
			return nil, err
		}
	}
	for i := range r.start.Options.Repeat {
		if err := emit(map[string]any{"type": sessionrpc.EventTextDelta, "text": " " + strconv.Itoa(i)}); err != nil {
			return nil, err
		}
	}
	usage := map[string]any{"inputTokens": len(strings.Fields(msg)), "outputTokens": len(words) + r.start.Options.Repeat}
	if err := emit(map[string]any{"type": sessionrpc.EventUsage, "inputTokens": usage["inputTokens"], "outputTokens": usage["outputTokens"]}); err != nil {
		return nil, err
	}
	if err := emit(map[string]any{"type": sessionrpc.EventChecklist, "groupId": "demo-" + r.taskID, "title": "What the demo did",
		"items": []map[string]any{{"text": "read the message", "done": true}, {"text": "call " + chatTool, "done": !r.start.Options.NoTool},
			{"text": "answer", "done": true}}}); err != nil {
		return nil, err
	}
	if err := c.pause(ctx); err != nil {
		return nil, err
	}
	return map[string]any{"text": text, "usage": usage}, nil
}

// pause waits the configured delay between events, or returns ctx's error.
func (c *Chat) pause(ctx context.Context) error {
	if c.opts.Delay <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(c.opts.Delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// callTool calls chatTool on the MCP server with a progress token of r's, emitting
// tool-call, a tool-output per progress notification, and tool-result.
func (c *Chat) callTool(ctx context.Context, r *chatRequest, emit func(map[string]any) error) (string, error) {
	callID := "call_" + strings.TrimPrefix(r.taskID, "task_")
	if err := emit(map[string]any{"type": sessionrpc.EventToolCall, "id": callID, "name": chatTool, "args": map[string]any{}}); err != nil {
		return "", err
	}
	token := "demo-chat-" + r.taskID
	progress := make(chan string, 16)
	c.progMu.Lock()
	c.progress[token] = progress
	c.progMu.Unlock()
	defer func() {
		c.progMu.Lock()
		delete(c.progress, token)
		c.progMu.Unlock()
	}()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		var req mcp.CallToolRequest
		req.Params.Name = chatTool
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
		res, err := c.mcp.CallTool(ctx, req)
		answered <- answer{res, err}
	}()
	var a answer
	for waiting := true; waiting; {
		select {
		case out := <-progress:
			if err := emit(map[string]any{"type": sessionrpc.EventToolOutput, "id": callID, "output": out}); err != nil {
				<-answered
				return "", err
			}
		case a = <-answered:
			waiting = false
		}
	}
	for drained := false; !drained; { // progress sent before the result
		select {
		case out := <-progress:
			if err := emit(map[string]any{"type": sessionrpc.EventToolOutput, "id": callID, "output": out}); err != nil {
				return "", err
			}
		default:
			drained = true
		}
	}
	if a.err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if err := emit(map[string]any{"type": sessionrpc.EventToolResult, "id": callID, "success": false,
			"error": map[string]any{"errorId": "tool_unavailable", "message": a.err.Error()}}); err != nil {
			return "", err
		}
		return "(the tool failed)", nil
	}
	text := toolResultText(a.res)
	if a.res.IsError {
		if err := emit(map[string]any{"type": sessionrpc.EventToolResult, "id": callID, "success": false,
			"error": map[string]any{"errorId": "tool_error", "message": text}}); err != nil {
			return "", err
		}
		return "(the tool failed)", nil
	}
	if err := emit(map[string]any{"type": sessionrpc.EventToolResult, "id": callID, "success": true, "result": map[string]any{"text": text}}); err != nil {
		return "", err
	}
	return text, nil
}

// toolResultText joins the text items of res.
func toolResultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, item := range res.Content {
		if t, ok := mcp.AsTextContent(item); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}

// onNotification hands a progress notification to the call whose token it names.
func (c *Chat) onNotification(n mcp.JSONRPCNotification) {
	if n.Method != string(mcp.MethodNotificationProgress) {
		return
	}
	token, _ := n.Params.AdditionalFields["progressToken"].(string)
	msg, _ := n.Params.AdditionalFields["message"].(string)
	if msg == "" {
		b, _ := json.Marshal(n.Params.AdditionalFields["progress"])
		msg = "progress " + string(b)
	}
	c.progMu.Lock()
	ch := c.progress[token]
	c.progMu.Unlock()
	if ch == nil {
		return
	}
	select {
	case ch <- msg:
	default: // the call is not reading (aborted): drop it
	}
}

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

const keySuccess = "success"

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
	if err := emit(map[string]any{keyType: sessionrpc.EventStatus, "status": "thinking", keyMessage: "Reading your message"}); err != nil {
		return nil, err
	}
	if err := emit(map[string]any{keyType: sessionrpc.EventReasoning,
		keyText: fmt.Sprintf("The user wrote %d words. I will run the demo tool %s and then answer.", len(strings.Fields(msg)), chatTool)}); err != nil {
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
		if err := emit(map[string]any{keyType: sessionrpc.EventTextDelta, keyText: w}); err != nil {
			return nil, err
		}
	}
	for i := range r.start.Options.Repeat {
		if err := emit(map[string]any{keyType: sessionrpc.EventTextDelta, keyText: " " + strconv.Itoa(i)}); err != nil {
			return nil, err
		}
	}
	usage := map[string]any{"inputTokens": len(strings.Fields(msg)), "outputTokens": len(words) + r.start.Options.Repeat}
	if err := emit(map[string]any{keyType: sessionrpc.EventUsage, "inputTokens": usage["inputTokens"], "outputTokens": usage["outputTokens"]}); err != nil {
		return nil, err
	}
	if err := emit(map[string]any{keyType: sessionrpc.EventChecklist, "groupId": "demo-" + r.taskID, "title": "What the demo did",
		"items": []map[string]any{{keyText: "read the message", stateDone: true}, {keyText: "call " + chatTool, stateDone: !r.start.Options.NoTool},
			{keyText: "answer", stateDone: true}}}); err != nil {
		return nil, err
	}
	if err := c.pause(ctx); err != nil {
		return nil, err
	}
	return map[string]any{keyText: text, "usage": usage}, nil
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
	if err := emit(map[string]any{keyType: sessionrpc.EventToolCall, "id": callID, "name": chatTool, "args": map[string]any{}}); err != nil {
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
			if err := emit(map[string]any{keyType: sessionrpc.EventToolOutput, "id": callID, "output": out}); err != nil {
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
			if err := emit(map[string]any{keyType: sessionrpc.EventToolOutput, "id": callID, "output": out}); err != nil {
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
		if err := emit(map[string]any{keyType: sessionrpc.EventToolResult, "id": callID, keySuccess: false,
			stateError: map[string]any{keyErrorID: "tool_unavailable", keyMessage: a.err.Error()}}); err != nil {
			return "", err
		}
		return "(the tool failed)", nil
	}
	text := toolResultText(a.res)
	if a.res.IsError {
		if err := emit(map[string]any{keyType: sessionrpc.EventToolResult, "id": callID, keySuccess: false,
			stateError: map[string]any{keyErrorID: "tool_error", keyMessage: text}}); err != nil {
			return "", err
		}
		return "(the tool failed)", nil
	}
	if err := emit(map[string]any{keyType: sessionrpc.EventToolResult, "id": callID, keySuccess: true, "result": map[string]any{keyText: text}}); err != nil {
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
	msg, _ := n.Params.AdditionalFields[keyMessage].(string)
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

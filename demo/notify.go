package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// progressTotal is the total the progress notifications of test_tool_with_progress count to.
const progressTotal = 100

// withLogging sends the three info-level log messages of the tools-call-with-logging
// scenario, StepDelay apart. They go through the session's log level (logging/setLevel,
// or the request's level under protocol 2026-07-28), so a client that asked for warning
// and above receives none.
func (s *MCP) withLogging(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	for i, message := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			if err := s.step(ctx); err != nil {
				return nil, err
			}
		}
		note := mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, loggerName, message)
		if err := s.mcp.SendLogMessageToClient(ctx, note); err != nil {
			return nil, fmt.Errorf("sending log message %d: %w", i+1, err)
		}
	}
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return mcp.NewToolResultText(loggingDoneText), nil
}

// withProgress reports progress 0, 50 and 100 of 100, StepDelay apart, on the progress
// token of the request; without a token it only takes the same time.
func (s *MCP) withProgress(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var token mcp.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	for i, progress := range []int{0, progressTotal / 2, progressTotal} {
		if i > 0 {
			if err := s.step(ctx); err != nil {
				return nil, err
			}
		}
		if token == nil {
			continue
		}
		err := s.mcp.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
			"progressToken": token,
			"progress":      progress,
			"total":         progressTotal,
			"message":       fmt.Sprintf("Completed step %d of %d", progress, progressTotal),
		})
		if err != nil {
			return nil, fmt.Errorf("sending progress %d: %w", progress, err)
		}
	}
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return mcp.NewToolResultText(progressDoneText), nil
}

// reconnection serves test_reconnection. The suite's reference server closes the POST
// SSE stream mid-call so that the client resumes with Last-Event-ID; mcp-go has no API to
// close a request's stream from a handler, so this tool only waits a step and answers on
// the open stream (the scenario reports that as INFO, not as a failure).
func (s *MCP) reconnection(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if err := s.step(ctx); err != nil {
		return nil, err
	}
	return mcp.NewToolResultText(reconnectDoneText), nil
}

// settle waits one more step after a tool's last notification, before its result. mcp-go
// v1.2.1 feeds a session's GET stream and the POST stream of a call from one queue, so a
// notification may travel on the GET stream; a client drops progress that arrives after
// the result, and the pause lets it arrive first.
func (s *MCP) settle(ctx context.Context) error { return s.step(ctx) }

// step waits StepDelay, or less if ctx ends first.
func (s *MCP) step(ctx context.Context) error {
	if s.stepDelay <= 0 {
		return nil
	}
	t := time.NewTimer(s.stepDelay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting between notifications: %w", ctx.Err())
	}
}

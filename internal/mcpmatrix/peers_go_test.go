package mcpmatrix_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every matrix server, whatever its SDK, offers the same surface under names that start
// with its kind (gosdk25, mcpgo26, ts25, …), so that the gateway can aggregate all of them
// without renaming: the tools <kind>_echo, <kind>_progress (steps progress notifications,
// then a result), <kind>_sample (one sampling/createMessage) and <kind>_elicit (one form
// elicitation), the resource matrix://<kind>/info and the prompt <kind>_greet. Sampling and
// elicitation are written as multi round-trip handlers (input requests in the result), which
// each SDK turns into server-to-client requests for a peer of an earlier revision.

// samplePrompt is the text a server samples on; the clients answer with their own name.
const samplePrompt = "matrix"

func echoText(kind, text string) string      { return kind + " echo " + text }
func progressText(kind string, n int) string { return fmt.Sprintf("%s progress %d", kind, n) }
func sampleText(kind, reply string) string   { return kind + " sample " + reply }
func elicitText(kind, action, name string) string {
	return kind + " elicit " + action + " " + name
}
func resourceURI(kind string) string  { return "matrix://" + kind + "/info" }
func resourceText(kind string) string { return kind + " resource" }
func greetText(kind, name string) string {
	return kind + " greets " + name
}

// elicitSchema is the form every server asks for.
var elicitSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"name": map[string]any{"type": "string"}},
	"required":   []any{"name"},
}

// serveHTTP serves h on a loopback port until the returned function is called.
func serveHTTP(h http.Handler) (string, func()) {
	srv := httptest.NewServer(h)
	return srv.URL + "/mcp", srv.Close
}

// progressSettle is how long mcp-go's progress tool waits after its last notification.
const progressSettle = 50 * time.Millisecond

// mcpGoServer is a matrix server on mcp-go's streamable HTTP server. mcp-go answers
// 2026-07-28 requests and 2025 sessions on one endpoint; the gateway picks the revision.
func mcpGoServer(kind string) (string, func()) {
	s := mcpserver.NewMCPServer("matrix-"+kind, "1.0.0",
		mcpserver.WithToolCapabilities(false), mcpserver.WithResourceCapabilities(false, false),
		mcpserver.WithPromptCapabilities(false))
	s.AddTool(mcp.NewTool(kind+"_echo", mcp.WithString("text", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(echoText(kind, req.GetString("text", ""))), nil
		})
	s.AddTool(mcp.NewTool(kind+"_progress", mcp.WithNumber("steps", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			steps := req.GetInt("steps", 0)
			if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
				for i := 1; i <= steps; i++ {
					err := mcpserver.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress", map[string]any{
						"progressToken": req.Params.Meta.ProgressToken, "progress": i, "total": steps})
					if err != nil {
						return nil, err
					}
				}
				// mcp-go v1.2.1 feeds a session's GET stream and a call's POST stream from one
				// queue, and its POST forwarder drops a notification it took as the call ends:
				// without a pause before the result, this server itself can lose every one of
				// its progress notifications, or send them on its GET stream after the result
				// (as demo.MCP's settle explains). The gateway relays what reaches it before
				// the result, and the step checks that.
				select {
				case <-time.After(progressSettle):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return mcp.NewToolResultText(progressText(kind, steps)), nil
		})
	s.AddTool(mcp.NewTool(kind+"_sample"),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r := mcpserver.SamplingResponse(req.Params.InputResponses, "sample"); r != nil {
				return mcp.NewToolResultText(sampleText(kind, contentText(r.Content))), nil
			}
			return mcpserver.NewInputRequestBuilder("").Sample("sample", mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(samplePrompt)}},
				MaxTokens: 16,
			}).ToolResult(), nil
		})
	s.AddTool(mcp.NewTool(kind+"_elicit"),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r := mcpserver.ElicitationResponse(req.Params.InputResponses, "name"); r != nil {
				name, _ := r.Content.(map[string]any)["name"].(string)
				return mcp.NewToolResultText(elicitText(kind, string(r.Action), name)), nil
			}
			return mcpserver.NewInputRequestBuilder("").Elicit("name", mcp.ElicitationParams{
				Message: "name?", RequestedSchema: elicitSchema,
			}).ToolResult(), nil
		})
	s.AddResource(mcp.NewResource(resourceURI(kind), kind+"_info", mcp.WithMIMEType("text/plain")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: resourceText(kind)}}, nil
		})
	s.AddPrompt(mcp.NewPrompt(kind+"_greet", mcp.WithArgument("name", mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("greet", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(greetText(kind, req.Params.Arguments["name"]))),
			}), nil
		})
	return serveHTTP(mcpserver.NewStreamableHTTPServer(s, mcpserver.WithEndpointPath("/mcp")))
}

// goSDKServer is a matrix server on the Go SDK's streamable HTTP handler, restricted to the
// revisions of versions; stateless serves without sessions, which the Go SDK needs for
// 2026-07-28 (its requests carry no session ID).
func goSDKServer(kind string, versions []string, stateless bool) (string, func()) {
	s := gosdk.NewServer(&gosdk.Implementation{Name: "matrix-" + kind, Version: "1.0.0"},
		&gosdk.ServerOptions{SupportedProtocolVersions: versions})
	type echoIn struct {
		Text string `json:"text"`
	}
	gosdk.AddTool(s, &gosdk.Tool{Name: kind + "_echo"}, func(_ context.Context, _ *gosdk.CallToolRequest, in echoIn) (*gosdk.CallToolResult, any, error) {
		return textResult(echoText(kind, in.Text)), nil, nil
	})
	type progressIn struct {
		Steps int `json:"steps"`
	}
	gosdk.AddTool(s, &gosdk.Tool{Name: kind + "_progress"}, func(ctx context.Context, req *gosdk.CallToolRequest, in progressIn) (*gosdk.CallToolResult, any, error) {
		if token := req.Params.GetProgressToken(); token != nil {
			for i := 1; i <= in.Steps; i++ {
				if err := req.Session.NotifyProgress(ctx, &gosdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: float64(in.Steps)}); err != nil {
					return nil, nil, err
				}
			}
		}
		return textResult(progressText(kind, in.Steps)), nil, nil
	})
	noArgs := &jsonSchemaObject{Type: "object"}
	s.AddTool(&gosdk.Tool{Name: kind + "_sample", InputSchema: noArgs}, func(_ context.Context, req *gosdk.CallToolRequest) (*gosdk.CallToolResult, error) {
		switch r := req.Params.InputResponses["sample"].(type) {
		case *gosdk.CreateMessageResult: //nolint:staticcheck // sampling is deprecated on 2026-07-28, still proved for 2025. The answer of a 2025 client, to the request the SDK made for the handler
			return textResult(sampleText(kind, contentText(r.Content))), nil
		case *gosdk.CreateMessageWithToolsResult: //nolint:staticcheck // as above: an input response, as the SDK decodes it
			if len(r.Content) != 1 {
				return nil, fmt.Errorf("sampling answer with %d contents", len(r.Content))
			}
			return textResult(sampleText(kind, contentText(r.Content[0]))), nil
		}
		//nolint:staticcheck // sampling is deprecated on 2026-07-28 and still what the matrix proves
		return &gosdk.CallToolResult{InputRequests: gosdk.InputRequestMap{"sample": &gosdk.CreateMessageParams{
			Messages:  []*gosdk.SamplingMessage{{Role: "user", Content: &gosdk.TextContent{Text: samplePrompt}}}, //nolint:staticcheck // as above
			MaxTokens: 16,
		}}}, nil
	})
	s.AddTool(&gosdk.Tool{Name: kind + "_elicit", InputSchema: noArgs}, func(_ context.Context, req *gosdk.CallToolRequest) (*gosdk.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["name"].(*gosdk.ElicitResult); ok {
			name, _ := r.Content["name"].(string)
			return textResult(elicitText(kind, r.Action, name)), nil
		}
		return &gosdk.CallToolResult{InputRequests: gosdk.InputRequestMap{"name": &gosdk.ElicitParams{
			Message: "name?", RequestedSchema: elicitSchema,
		}}}, nil
	})
	s.AddResource(&gosdk.Resource{URI: resourceURI(kind), Name: kind + "_info", MIMEType: "text/plain"},
		func(_ context.Context, req *gosdk.ReadResourceRequest) (*gosdk.ReadResourceResult, error) {
			return &gosdk.ReadResourceResult{Contents: []*gosdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: resourceText(kind)}}}, nil
		})
	s.AddPrompt(&gosdk.Prompt{Name: kind + "_greet", Arguments: []*gosdk.PromptArgument{{Name: "name", Required: true}}},
		func(_ context.Context, req *gosdk.GetPromptRequest) (*gosdk.GetPromptResult, error) {
			return &gosdk.GetPromptResult{Messages: []*gosdk.PromptMessage{{Role: "user", Content: &gosdk.TextContent{Text: greetText(kind, req.Params.Arguments["name"])}}}}, nil
		})
	h := gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s }, &gosdk.StreamableHTTPOptions{Stateless: stateless})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	return serveHTTP(mux)
}

// jsonSchemaObject is the input schema of a tool without arguments.
type jsonSchemaObject struct {
	Type string `json:"type"`
}

func textResult(text string) *gosdk.CallToolResult {
	return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: text}}}
}

// contentText is the text of a text content however an SDK decoded it (a typed value, a
// pointer to one, or a map), "" for any other content.
func contentText(c any) string {
	raw, err := json.Marshal(c)
	if err != nil {
		return ""
	}
	var tc struct{ Type, Text string }
	if json.Unmarshal(raw, &tc) != nil || tc.Type != "text" {
		return ""
	}
	return tc.Text
}

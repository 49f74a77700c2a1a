package demo

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// addTools registers every fixture tool.
func (s *MCP) addTools() {
	s.mcp.AddTools(
		fixed("test_simple_text", "Returns a simple text response",
			mcp.NewTextContent(simpleText)),
		fixed("test_image_content", "Returns image content (a 1x1 PNG)",
			mcp.NewImageContent(pngBase64, mimePNG)),
		fixed("test_audio_content", "Returns audio content (a minimal WAV)",
			mcp.NewAudioContent(wavBase64, mimeWAV)),
		fixed("test_embedded_resource", "Returns an embedded text resource",
			mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: embeddedURI, MIMEType: mimeText, Text: embeddedText})),
		fixed("test_multiple_content_types", "Returns text, image and embedded resource content",
			mcp.NewTextContent(mixedIntro),
			mcp.NewImageContent(pngBase64, mimePNG),
			mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: mixedURI, MIMEType: mimeJSON, Text: mixedJSON})),
		server.ServerTool{
			Tool:    readOnly("test_error_handling", "Always fails with a tool error (isError: true)"),
			Handler: toolError,
		},
		server.ServerTool{
			Tool:    readOnly("test_tool_with_logging", "Sends three log notifications at info level while it runs"),
			Handler: s.withLogging,
		},
		server.ServerTool{
			Tool:    readOnly("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100 on the request's progress token"),
			Handler: s.withProgress,
		},
		server.ServerTool{
			Tool:    readOnly("test_reconnection", "Returns after a short delay; used by the SSE polling scenario (SEP-1699)"),
			Handler: s.reconnection,
		},
		server.ServerTool{
			Tool: readOnly("test_sampling", "Asks the client for an LLM completion of prompt (sampling/createMessage)",
				mcp.WithString("prompt", mcp.Required(), mcp.Description("The prompt to send to the LLM"))),
			Handler: sampling,
		},
		server.ServerTool{
			Tool: readOnly("test_elicitation", "Asks the user, through the client, for a username and an email address",
				mcp.WithString("message", mcp.Required(), mcp.Description("The message to show the user"))),
			Handler: elicitUser,
		},
		server.ServerTool{
			Tool:    readOnly("test_elicitation_sep1034_defaults", "Elicitation whose schema gives a default for every primitive type (SEP-1034)"),
			Handler: elicitDefaults,
		},
		server.ServerTool{
			Tool:    readOnly("test_elicitation_sep1330_enums", "Elicitation with the five enum schema variants (SEP-1330)"),
			Handler: elicitEnums,
		},
		server.ServerTool{
			Tool: mcp.NewToolWithRawSchema("json_schema_2020_12_tool",
				"Tool with JSON Schema 2020-12 features (SEP-1613)", json.RawMessage(jsonSchema202012)),
			Handler: echoArguments,
		},
	)
}

// readOnly builds a tool that changes nothing and reaches nothing outside the fixture.
func readOnly(name, description string, opts ...mcp.ToolOption) mcp.Tool {
	opts = append([]mcp.ToolOption{
		mcp.WithDescription(description),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	}, opts...)
	return mcp.NewTool(name, opts...)
}

// fixed is a tool without arguments that always returns content.
func fixed(name, description string, content ...mcp.Content) server.ServerTool {
	return server.ServerTool{
		Tool: readOnly(name, description),
		Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: content}, nil
		},
	}
}

// toolError fails the way the tools-call-error scenario checks: a result with isError,
// not a JSON-RPC error.
func toolError(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultError(toolErrorText), nil
}

// echoArguments answers json_schema_2020_12_tool with the arguments it received.
func echoArguments(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	raw, ok := req.GetRawArguments().(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(req.GetRawArguments()); err != nil {
			return mcp.NewToolResultErrorFromErr("encoding the arguments", err), nil
		}
	}
	return mcp.NewToolResultText("JSON Schema 2020-12 tool called with: " + string(raw)), nil
}

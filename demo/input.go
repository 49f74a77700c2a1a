package demo

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// inputKey names the single input request each interactive tool makes (SEP-2322).
const inputKey = "input"

// maxSamplingTokens is the maxTokens of the sampling request, as the suite describes it.
const maxSamplingTokens = 100

// The interactive tools are multi round-trip handlers: the first call returns the
// request for input, the retry carries the client's answer. mcp-go delivers the first
// result as is to a client of protocol 2026-07-28 and, for earlier clients, sends the
// request itself (sampling/createMessage, elicitation/create) and retries the handler.
// A client that refuses the request makes the call fail with a JSON-RPC error.

// sampling asks the client to complete the prompt argument and answers
// "LLM response: <completion>".
func sampling(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if answer := server.SamplingResponse(req.Params.InputResponses, inputKey); answer != nil {
		return mcp.NewToolResultText("LLM response: " + contentText(answer.Content)), nil
	}
	prompt, err := req.RequireString("prompt")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return server.NewInputRequestBuilder("").Sample(inputKey, mcp.CreateMessageParams{
		Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(prompt)}},
		MaxTokens: maxSamplingTokens,
	}).ToolResult(), nil
}

// The requested schemas, as the scenarios describe them; raw JSON keeps the field order
// a client shows the form in.
const (
	userSchema = `{
  "type": "object",
  "properties": {
    "username": {"type": "string", "description": "User's response"},
    "email": {"type": "string", "description": "User's email address"}
  },
  "required": ["username", "email"]
}`
	// defaultsSchema gives a default for every primitive type (SEP-1034).
	defaultsSchema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string", "description": "User name", "default": "John Doe"},
    "age": {"type": "integer", "description": "User age", "default": 30},
    "score": {"type": "number", "description": "User score", "default": 95.5},
    "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
    "verified": {"type": "boolean", "description": "Verification status", "default": true}
  }
}`
	// enumsSchema has the five enum variants of SEP-1330: untitled and titled single
	// select, the legacy enumNames, untitled and titled multi-select.
	enumsSchema = `{
  "type": "object",
  "properties": {
    "untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
    "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
      {"const": "value1", "title": "First Option"},
      {"const": "value2", "title": "Second Option"},
      {"const": "value3", "title": "Third Option"}
    ]},
    "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
      "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
    "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
      "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
    "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3,
      "items": {"anyOf": [
        {"const": "value1", "title": "First Choice"},
        {"const": "value2", "title": "Second Choice"},
        {"const": "value3", "title": "Third Choice"}
      ]}}
  }
}`
)

// elicitUser asks for the username and email address of the tools-call-elicitation
// scenario, showing the message argument.
func elicitUser(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	message, err := req.RequireString("message")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return elicit(req, "User response", message, userSchema)
}

// elicitDefaults asks for a form whose every primitive field has a default.
func elicitDefaults(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return elicit(req, "Elicitation completed", "Please review and update the form fields with defaults", defaultsSchema)
}

// elicitEnums asks for a form with every kind of enum.
func elicitEnums(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return elicit(req, "Elicitation completed", "Please select options from the enum fields", enumsSchema)
}

// elicit requests a form with schema and answers "<label>: action=…, content=…".
func elicit(req mcp.CallToolRequest, label, message, schema string) (*mcp.CallToolResult, error) {
	if answer := server.ElicitationResponse(req.Params.InputResponses, inputKey); answer != nil {
		content, err := json.Marshal(answer.Content)
		if err != nil {
			return mcp.NewToolResultErrorFromErr("encoding the elicitation content", err), nil
		}
		return mcp.NewToolResultText(fmt.Sprintf("%s: action=%s, content=%s", label, answer.Action, content)), nil
	}
	return server.NewInputRequestBuilder("").Elicit(inputKey, mcp.ElicitationParams{
		Mode:            mcp.ElicitationModeForm,
		Message:         message,
		RequestedSchema: json.RawMessage(schema),
	}).ToolResult(), nil
}

// contentText is the text of a sampling result's content, or its JSON when it is not text.
func contentText(content any) string {
	switch c := content.(type) {
	case mcp.TextContent:
		return c.Text
	case *mcp.TextContent:
		return c.Text
	case map[string]any:
		if text, ok := c["text"].(string); ok {
			return text
		}
	}
	raw, err := json.Marshal(content)
	if err != nil {
		return fmt.Sprint(content)
	}
	return string(raw)
}

package demo

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// errMissingArgument reports a required prompt argument that was not given.
var errMissingArgument = errors.New("required argument missing")

// addPrompts registers the four fixture prompts.
func (s *MCP) addPrompts() {
	s.mcp.AddPrompt(
		mcp.NewPrompt("test_simple_prompt",
			mcp.WithPromptTitle("Simple Test Prompt"),
			mcp.WithPromptDescription("A simple prompt without arguments")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return prompt(mcp.NewTextContent(promptSimpleText)), nil
		})
	s.mcp.AddPrompt(
		mcp.NewPrompt("test_prompt_with_arguments",
			mcp.WithPromptTitle("Prompt With Arguments"),
			mcp.WithPromptDescription("A prompt with required arguments"),
			mcp.WithArgument("arg1", mcp.ArgumentDescription("First test argument"), mcp.RequiredArgument()),
			mcp.WithArgument("arg2", mcp.ArgumentDescription("Second test argument"), mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			args := req.Params.Arguments
			return prompt(mcp.NewTextContent(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args["arg1"], args["arg2"]))), nil
		})
	s.mcp.AddPrompt(
		mcp.NewPrompt("test_prompt_with_embedded_resource",
			mcp.WithPromptTitle("Prompt With Embedded Resource"),
			mcp.WithPromptDescription("A prompt that includes an embedded resource"),
			mcp.WithArgument("resourceUri", mcp.ArgumentDescription("URI of the resource to embed"), mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			uri := req.Params.Arguments["resourceUri"]
			if uri == "" {
				return nil, fmt.Errorf("test_prompt_with_embedded_resource: resourceUri: %w", errMissingArgument)
			}
			return prompt(
				mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: uri, MIMEType: mimeText, Text: promptEmbedText}),
				mcp.NewTextContent(promptEmbedAsk)), nil
		})
	s.mcp.AddPrompt(
		mcp.NewPrompt("test_prompt_with_image",
			mcp.WithPromptTitle("Prompt With Image"),
			mcp.WithPromptDescription("A prompt that includes image content")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return prompt(mcp.NewImageContent(pngBase64, mimePNG), mcp.NewTextContent(promptImageAsk)), nil
		})
}

// prompt is a prompt result of one user message per content item.
func prompt(content ...mcp.Content) *mcp.GetPromptResult {
	messages := make([]mcp.PromptMessage, len(content))
	for i, c := range content {
		messages[i] = mcp.NewPromptMessage(mcp.RoleUser, c)
	}
	return &mcp.GetPromptResult{Messages: messages}
}

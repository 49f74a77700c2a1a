package demo

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Completion candidates: the prompt arguments take the values of the completion
// scenario's example, the template's id a few numbers.
var (
	argumentCandidates = []string{"paris", "park", "party"}
	idCandidates       = []string{"1", "2", "3", "123"}
)

var (
	_ server.PromptCompletionProvider   = promptCompletions{}
	_ server.ResourceCompletionProvider = resourceCompletions{}
)

// promptCompletions completes arg1 and arg2 of test_prompt_with_arguments.
type promptCompletions struct{}

// CompletePromptArgument implements server.PromptCompletionProvider.
func (promptCompletions) CompletePromptArgument(_ context.Context, name string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	if name != "test_prompt_with_arguments" || (arg.Name != "arg1" && arg.Name != "arg2") {
		return complete(nil, ""), nil
	}
	return complete(argumentCandidates, arg.Value), nil
}

// resourceCompletions completes the id of test://template/{id}/data.
type resourceCompletions struct{}

// CompleteResourceArgument implements server.ResourceCompletionProvider.
func (resourceCompletions) CompleteResourceArgument(_ context.Context, uri string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	if uri != templateURI || arg.Name != "id" {
		return complete(nil, ""), nil
	}
	return complete(idCandidates, arg.Value), nil
}

// complete returns the candidates that start with prefix; values is never null.
func complete(candidates []string, prefix string) *mcp.Completion {
	values := []string{}
	for _, c := range candidates {
		if strings.HasPrefix(c, prefix) {
			values = append(values, c)
		}
	}
	return &mcp.Completion{Values: values, Total: len(values)}
}

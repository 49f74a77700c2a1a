package mcpbackend

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// emptyCompletion is the result for an upstream that declares no completions: nothing to
// suggest. values is a required array.
var emptyCompletion = json.RawMessage(`{"completion":{"values":[]}}`)

// Complete answers a completion/complete request. params are the request's params as an
// MCP client sends them ({ref, argument, context}); the request goes to the upstream that
// owns the reference — for "ref/prompt" the prompt of that exposed name (the name is
// rewritten to the upstream's own), for "ref/resource" the resource template with that
// URI template, else the upstream a resource URI belongs to (ReadResource's rule). It
// returns the upstream's CompleteResult JSON. An upstream that does not declare the
// completions capability is not asked: the result is an empty completion, as from a
// server with nothing to suggest. Errors are *gateway.Error: INVALID_PARAMS for params
// that are not a completion request, CAPABILITY_NOT_FOUND for an unknown reference, and
// those of CallTool.
func (b *Bridge) Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	req, err := parseComplete(params)
	if err != nil {
		return nil, err
	}
	u, err := b.completeUpstream(&req)
	if err != nil {
		return nil, err
	}
	declared := true
	x, err := u.do(ctx, func(ctx context.Context, s *session) error {
		if s.caps.Completions == nil {
			declared = false
			return nil
		}
		_, err := s.cli.Complete(ctx, mcp.CompleteRequest{Params: req})
		return err
	})
	switch {
	case err != nil:
		return nil, err
	case !declared:
		return emptyCompletion, nil
	}
	return x.result, nil
}

// parseComplete decodes the params of a completion/complete request.
func parseComplete(params json.RawMessage) (mcp.CompleteParams, error) {
	var req mcp.CompleteParams
	if err := json.Unmarshal(params, &req); err != nil || req.Ref == nil {
		return req, gateway.NewError(schemas.CodeInvalidParams).With("reason", "completion/complete takes {ref, argument, context}")
	}
	return req, nil
}

// completeUpstream finds the upstream that owns a completion request's reference; a
// prompt reference's exposed name is rewritten in req to the upstream's own.
func (b *Bridge) completeUpstream(req *mcp.CompleteParams) (*upstream, error) {
	switch ref := req.Ref.(type) {
	case mcp.PromptReference:
		r, err := lookup(b.routes.Load().prompts, ref.Name, "prompt")
		if err != nil {
			return nil, err
		}
		ref.Name = r.original
		req.Ref = ref
		return r.up, nil
	case mcp.ResourceReference:
		return b.templateUpstream(ref.URI)
	default:
		return nil, gateway.NewError(schemas.CodeInvalidParams).With("reason", "ref must be a ref/prompt or a ref/resource")
	}
}

// templateUpstream finds the upstream of a resource template by its URI template, or of
// a resource by its URI.
func (b *Bridge) templateUpstream(uri string) (*upstream, error) {
	for _, r := range b.routes.Load().templates {
		if r.original == uri {
			if r.up == nil {
				return nil, gateway.NewError(schemas.CodeUnavailable).With("uri", uri).With("reason", r.entry.Reason)
			}
			return r.up, nil
		}
	}
	return b.resourceUpstream(uri)
}

// Complete answers a completion/complete request through the bridge (Bridge.Complete).
func (t *Target) Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	return t.b.Complete(ctx, params)
}

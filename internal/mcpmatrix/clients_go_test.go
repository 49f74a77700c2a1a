package mcpmatrix_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The steps of a cell, each a check a client makes through the gateway against one server.
const (
	stepTools       = "tools"       // tools/list has <kind>_echo; tools/call of it answers
	stepProgress    = "progress"    // tools/call of <kind>_progress with a progress token: the result and ≥ 1 notification
	stepResources   = "resources"   // resources/list has matrix://<kind>/info; resources/read of it answers
	stepPrompts     = "prompts"     // prompts/list has <kind>_greet; prompts/get of it answers
	stepSampling    = "sampling"    // tools/call of <kind>_sample: the server's sampling request reaches the client and back
	stepElicitation = "elicitation" // tools/call of <kind>_elicit: the same for a form elicitation
	stepTask        = "task"        // tools/call of <kind>_echo as a task: created, then its result fetched
)

// allSteps is the order in which every client runs them.
var allSteps = []string{stepTools, stepProgress, stepResources, stepPrompts, stepSampling, stepElicitation, stepTask}

// stepTimeout bounds each step, so that a round trip that never completes fails its step
// quickly: 5s, or MCPMATRIX_STEP_TIMEOUT_MS (which node/clients.cjs reads too).
var stepTimeout = func() time.Duration {
	if ms, err := strconv.Atoi(os.Getenv("MCPMATRIX_STEP_TIMEOUT_MS")); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return 5 * time.Second
}()

// progressSteps is how many progress notifications the progress tool sends.
const progressSteps = 3

// errNoTaskAPI is a task step's outcome on a client SDK that cannot call a tool as a task.
var errNoTaskAPI = errors.New("this client SDK has no task-augmented tools/call")

// samplingReply and elicitedName are what a client answers, naming itself so that an
// answer cannot come from another client.
func samplingReply(client string) string { return "reply of " + client }
func elicitedName(client string) string  { return "name of " + client }

// goClient runs the steps of one cell with a Go client SDK: one connection to url at
// protocol version, the steps in order, each step's error (nil: passed).
type goClient func(ctx context.Context, hc *http.Client, url, version, kind, name string, steps []string) (map[string]error, error)

// check compares a result text with the expected one.
func check(got, want string) error {
	if got != want {
		return fmt.Errorf("got %q, want %q", got, want)
	}
	return nil
}

// runMCPGo is the cell on mcp-go's client.
func runMCPGo(ctx context.Context, hc *http.Client, url, version, kind, name string, steps []string) (map[string]error, error) {
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(hc), transport.WithHTTPLogger(slog.New(slog.DiscardHandler))}
	if version != mcp.ProtocolVersion20260728 {
		opts = append(opts, transport.WithContinuousListening()) //nolint:staticcheck // 2025 servers send sampling on the GET stream
	}
	tr, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		return nil, err
	}
	h := mcpGoHandlers{name: name}
	c := client.NewClient(tr, client.WithSamplingHandler(h), client.WithElicitationHandler(h), client.WithProtocolVersion(version))
	var progress atomic.Int32
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" && fmt.Sprint(n.Params.AdditionalFields["progressToken"]) == "matrix-progress" {
			progress.Add(1)
		}
	})
	defer func() { _ = c.Close() }()
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	init.Params.Capabilities.Sampling = &mcp.SamplingCapability{}
	init.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		return nil, err
	}
	if res.ProtocolVersion != version {
		return nil, fmt.Errorf("negotiated %s, want %s", res.ProtocolVersion, version)
	}
	// stepCtx bounds the step running; the closures read it.
	var stepCtx context.Context
	call := func(tool string, args map[string]any, meta *mcp.Meta) (string, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments, req.Params.Meta = kind+"_"+tool, args, meta
		r, err := c.CallTool(stepCtx, req)
		if err != nil {
			return "", err
		}
		if len(r.Content) != 1 || r.IsError {
			return "", fmt.Errorf("result %+v", r)
		}
		tc, ok := mcp.AsTextContent(r.Content[0])
		if !ok {
			return "", fmt.Errorf("content %T", r.Content[0])
		}
		return tc.Text, nil
	}
	out := map[string]error{}
	for _, step := range steps {
		var cancel context.CancelFunc
		stepCtx, cancel = context.WithTimeout(ctx, stepTimeout) //nolint:fatcontext // one per step, from the cell's, cancelled at its end; the closures above read it
		switch step {
		case stepTools:
			out[step] = func() error {
				list, err := c.ListTools(stepCtx, mcp.ListToolsRequest{})
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(list.Tools, func(t mcp.Tool) bool { return t.Name == kind+"_echo" }) {
					return fmt.Errorf("tools/list lacks %s_echo", kind)
				}
				got, err := call("echo", map[string]any{"text": name}, nil)
				if err != nil {
					return err
				}
				return check(got, echoText(kind, name))
			}()
		case stepProgress:
			out[step] = func() error {
				progress.Store(0)
				got, err := call("progress", map[string]any{"steps": progressSteps}, &mcp.Meta{ProgressToken: "matrix-progress"})
				if err != nil {
					return err
				}
				if !eventually(func() bool { return progress.Load() > 0 }) {
					return errors.New("no progress notification")
				}
				return check(got, progressText(kind, progressSteps))
			}()
		case stepResources:
			out[step] = func() error {
				list, err := c.ListResources(stepCtx, mcp.ListResourcesRequest{})
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(list.Resources, func(r mcp.Resource) bool { return r.URI == resourceURI(kind) }) {
					return fmt.Errorf("resources/list lacks %s", resourceURI(kind))
				}
				req := mcp.ReadResourceRequest{}
				req.Params.URI = resourceURI(kind)
				r, err := c.ReadResource(stepCtx, req)
				if err != nil {
					return err
				}
				if len(r.Contents) != 1 {
					return fmt.Errorf("contents %+v", r.Contents)
				}
				tc, ok := r.Contents[0].(mcp.TextResourceContents)
				if !ok {
					return fmt.Errorf("contents %T", r.Contents[0])
				}
				return check(tc.Text, resourceText(kind))
			}()
		case stepPrompts:
			out[step] = func() error {
				list, err := c.ListPrompts(stepCtx, mcp.ListPromptsRequest{})
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(list.Prompts, func(p mcp.Prompt) bool { return p.Name == kind+"_greet" }) {
					return fmt.Errorf("prompts/list lacks %s_greet", kind)
				}
				req := mcp.GetPromptRequest{}
				req.Params.Name, req.Params.Arguments = kind+"_greet", map[string]string{"name": name}
				r, err := c.GetPrompt(stepCtx, req)
				if err != nil {
					return err
				}
				if len(r.Messages) != 1 {
					return fmt.Errorf("messages %+v", r.Messages)
				}
				tc, ok := mcp.AsTextContent(r.Messages[0].Content)
				if !ok {
					return fmt.Errorf("message content %T", r.Messages[0].Content)
				}
				return check(tc.Text, greetText(kind, name))
			}()
		case stepSampling:
			out[step] = func() error {
				got, err := call("sample", nil, nil)
				if err != nil {
					return err
				}
				return check(got, sampleText(kind, samplingReply(name)))
			}()
		case stepElicitation:
			out[step] = func() error {
				got, err := call("elicit", nil, nil)
				if err != nil {
					return err
				}
				return check(got, elicitText(kind, "accept", elicitedName(name)))
			}()
		case stepTask:
			out[step] = errNoTaskAPI
		}
		cancel()
	}
	return out, nil
}

// mcpGoHandlers answers sampling and elicitation for mcp-go's client.
type mcpGoHandlers struct{ name string }

func (h mcpGoHandlers) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if len(req.Messages) != 1 {
		return nil, fmt.Errorf("sampling request with %d messages", len(req.Messages))
	}
	if contentText(req.Messages[0].Content) != samplePrompt {
		return nil, fmt.Errorf("sampling request %+v", req.Messages[0].Content)
	}
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant,
		Content: mcp.NewTextContent(samplingReply(h.name))}, Model: "matrix", StopReason: "endTurn"}, nil
}

func (h mcpGoHandlers) Elicit(_ context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"name": elicitedName(h.name)}}}, nil
}

// runGoSDK is the cell on the Go SDK's client.
func runGoSDK(ctx context.Context, hc *http.Client, url, version, kind, name string, steps []string) (map[string]error, error) {
	var progress atomic.Int32
	c := gosdk.NewClient(&gosdk.Implementation{Name: name, Version: "1"}, &gosdk.ClientOptions{
		//nolint:staticcheck // sampling is deprecated on 2026-07-28, and still what the matrix proves for 2025 callers
		CreateMessageHandler: func(_ context.Context, req *gosdk.CreateMessageRequest) (*gosdk.CreateMessageResult, error) {
			if len(req.Params.Messages) != 1 {
				return nil, fmt.Errorf("sampling request with %d messages", len(req.Params.Messages))
			}
			if tc, ok := req.Params.Messages[0].Content.(*gosdk.TextContent); !ok || tc.Text != samplePrompt {
				return nil, fmt.Errorf("sampling request %+v", req.Params.Messages[0].Content)
			}
			return &gosdk.CreateMessageResult{Role: "assistant", Model: "matrix", Content: &gosdk.TextContent{Text: samplingReply(name)}}, nil //nolint:staticcheck // as above
		},
		ElicitationHandler: func(context.Context, *gosdk.ElicitRequest) (*gosdk.ElicitResult, error) {
			return &gosdk.ElicitResult{Action: "accept", Content: map[string]any{"name": elicitedName(name)}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *gosdk.ProgressNotificationClientRequest) {
			if req.Params.ProgressToken == "matrix-progress" {
				progress.Add(1)
			}
		},
	})
	cs, err := c.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1},
		&gosdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	defer func() { _ = cs.Close() }()
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		return nil, fmt.Errorf("negotiated %s, want %s", got, version)
	}
	// stepCtx bounds the step running; the closures read it.
	var stepCtx context.Context
	call := func(tool string, args map[string]any, token any) (string, error) {
		p := &gosdk.CallToolParams{Name: kind + "_" + tool, Arguments: args}
		if token != nil {
			p.SetProgressToken(token)
		}
		r, err := cs.CallTool(stepCtx, p)
		if err != nil {
			return "", err
		}
		if len(r.Content) != 1 || r.IsError {
			return "", fmt.Errorf("result %+v", r)
		}
		tc, ok := r.Content[0].(*gosdk.TextContent)
		if !ok {
			return "", fmt.Errorf("content %T", r.Content[0])
		}
		return tc.Text, nil
	}
	out := map[string]error{}
	for _, step := range steps {
		var cancel context.CancelFunc
		stepCtx, cancel = context.WithTimeout(ctx, stepTimeout) //nolint:fatcontext // one per step, from the cell's, cancelled at its end; the closures above read it
		switch step {
		case stepTools:
			out[step] = func() error {
				list, err := cs.ListTools(stepCtx, nil)
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(list.Tools, func(t *gosdk.Tool) bool { return t.Name == kind+"_echo" }) {
					return fmt.Errorf("tools/list lacks %s_echo", kind)
				}
				got, err := call("echo", map[string]any{"text": name}, nil)
				if err != nil {
					return err
				}
				return check(got, echoText(kind, name))
			}()
		case stepProgress:
			out[step] = func() error {
				progress.Store(0)
				got, err := call("progress", map[string]any{"steps": progressSteps}, "matrix-progress")
				if err != nil {
					return err
				}
				if !eventually(func() bool { return progress.Load() > 0 }) {
					return errors.New("no progress notification")
				}
				return check(got, progressText(kind, progressSteps))
			}()
		case stepResources:
			out[step] = func() error {
				list, err := cs.ListResources(stepCtx, nil)
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(list.Resources, func(r *gosdk.Resource) bool { return r.URI == resourceURI(kind) }) {
					return fmt.Errorf("resources/list lacks %s", resourceURI(kind))
				}
				r, err := cs.ReadResource(stepCtx, &gosdk.ReadResourceParams{URI: resourceURI(kind)})
				if err != nil {
					return err
				}
				if len(r.Contents) != 1 {
					return fmt.Errorf("contents %+v", r.Contents)
				}
				return check(r.Contents[0].Text, resourceText(kind))
			}()
		case stepPrompts:
			out[step] = func() error {
				list, err := cs.ListPrompts(stepCtx, nil)
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(list.Prompts, func(p *gosdk.Prompt) bool { return p.Name == kind+"_greet" }) {
					return fmt.Errorf("prompts/list lacks %s_greet", kind)
				}
				r, err := cs.GetPrompt(stepCtx, &gosdk.GetPromptParams{Name: kind + "_greet", Arguments: map[string]string{"name": name}})
				if err != nil {
					return err
				}
				if len(r.Messages) != 1 {
					return fmt.Errorf("messages %+v", r.Messages)
				}
				tc, ok := r.Messages[0].Content.(*gosdk.TextContent)
				if !ok {
					return fmt.Errorf("message content %T", r.Messages[0].Content)
				}
				return check(tc.Text, greetText(kind, name))
			}()
		case stepSampling:
			out[step] = func() error {
				got, err := call("sample", nil, nil)
				if err != nil {
					return err
				}
				return check(got, sampleText(kind, samplingReply(name)))
			}()
		case stepElicitation:
			out[step] = func() error {
				got, err := call("elicit", nil, nil)
				if err != nil {
					return err
				}
				return check(got, elicitText(kind, "accept", elicitedName(name)))
			}()
		case stepTask:
			out[step] = errNoTaskAPI
		}
		cancel()
	}
	return out, nil
}

// eventually reports whether cond holds within a second: a client SDK may hand a
// notification that came before a result to its handler after the call returned.
func eventually(cond func() bool) bool {
	deadline := time.Now().Add(time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

package mcpbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// MethodToolsCall is the MCP-shaped method a Target also answers, with params
// {"name": tool, "arguments": {…}} and the CallToolResult as result.
const MethodToolsCall = "tools/call"

// Target routes JSON-RPC calls to the bridge's tools. It answers two shapes:
//
//   - a method per tool under the namespace: "<namespace><exposed tool name>" with the
//     tool's arguments as params (an object). The result is the CallToolResult; a result
//     with isError set becomes the error TOOL_FAILED (1001) with data {upstream, tool,
//     result}, so JSON-RPC callers see a failed tool as a failed call.
//   - MethodToolsCall, when the table routes it here: MCP's own params and result, with
//     isError results returned as results.
//
// When the call's context carries WantProgress, the result is a gateway.Stream instead:
// one message {"progress": {"progress": n, "total": t, "message": m}} per progress
// notification (dropped, not queued without bound, when the caller reads slowly), then
// one {"result": CallToolResult}, then io.EOF. The JSON-RPC faces send each as a
// "$/stream" notification.
type Target struct {
	b  *Bridge
	ns string
}

var (
	_ gateway.Target  = (*Target)(nil)
	_ gateway.Readier = (*Target)(nil)
	_ gateway.Closer  = (*Target)(nil)
)

// Target returns a gateway.Target for the bridge's tools with method names under
// namespace (e.g. "mcp." → "mcp.everything__echo"). Closing it closes the bridge.
func (b *Bridge) Target(namespace string) *Target { return &Target{b: b, ns: namespace} }

// Name implements gateway.Target.
func (t *Target) Name() string { return "mcp" }

// Routes returns what to route to t: every method under the namespace. MethodToolsCall
// is not included: whether external callers may reach tools that way is the server's
// policy to decide.
func (t *Target) Routes() (methods, prefixes []string) { return nil, []string{t.ns} }

// Ready implements gateway.Readier.
func (t *Target) Ready(ctx context.Context) error { return t.b.Ready(ctx) }

// Close implements gateway.Closer.
func (t *Target) Close() error { return t.b.Close() }

// Invoke implements gateway.Target.
func (t *Target) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	name, args, mcpShaped, err := t.parse(call)
	if err != nil {
		return nil, err
	}
	if wantsProgress(ctx) {
		return &gateway.Result{Stream: t.stream(ctx, name, bytes.Clone(args), mcpShaped)}, nil
	}
	res, err := t.b.CallTool(ctx, name, args)
	if err != nil {
		return nil, err
	}
	if !mcpShaped {
		if err := t.toolFailed(name, res); err != nil {
			return nil, err
		}
	}
	return gateway.NewResult(res), nil
}

// parse returns the tool name and arguments of a call.
func (t *Target) parse(call *gateway.Call) (name string, args json.RawMessage, mcpShaped bool, err error) {
	if call.Method == MethodToolsCall {
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(call.Params, &p); err != nil || p.Name == "" {
			return "", nil, true, gateway.NewError(schemas.CodeInvalidParams).With("reason", "tools/call takes {name, arguments}")
		}
		return p.Name, p.Arguments, true, nil
	}
	name, ok := strings.CutPrefix(call.Method, t.ns)
	if !ok || name == "" {
		return "", nil, false, gateway.NewError(schemas.CodeMethodNotFound)
	}
	return name, call.Params, false, nil
}

// toolFailed returns TOOL_FAILED for a CallToolResult with isError set.
func (t *Target) toolFailed(name string, res json.RawMessage) error {
	var r struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || !r.IsError {
		return nil //nolint:nilerr // a result that is not a JSON object is passed on as it is
	}
	upstream := ""
	if rt, ok := t.b.routes.Load().tools[name]; ok && rt.up != nil {
		upstream = rt.up.cfg.Name
	}
	kind := schemas.KindOf(schemas.CodeToolFailed)
	return gateway.WireError(kind.Code, kind.Message, map[string]any{"upstream": upstream, "tool": name, "result": res})
}

// stream runs the call in the background, delivering its progress and then its result.
func (t *Target) stream(ctx context.Context, name string, args json.RawMessage, mcpShaped bool) gateway.Stream {
	ctx, cancel := context.WithCancel(ctx)
	s := &progressStream{msgs: make(chan []byte, progressBuffer), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(s.done)
		pctx := WithProgress(ctx, func(p Progress) {
			msg, err := json.Marshal(map[string]any{"progress": progressJSON(p)})
			if err != nil {
				return
			}
			select {
			case s.msgs <- msg:
			default: // the caller is not keeping up: progress is advisory
			}
		})
		res, err := t.b.CallTool(pctx, name, args)
		if err == nil && !mcpShaped {
			err = t.toolFailed(name, res)
		}
		if err != nil {
			s.err = err
			return
		}
		s.final = append(append([]byte(`{"result":`), res...), '}')
	}()
	return s
}

const progressBuffer = 64

func progressJSON(p Progress) map[string]any {
	m := map[string]any{"progress": p.Progress}
	if p.Total != nil {
		m["total"] = *p.Total
	}
	if p.Message != "" {
		m["message"] = p.Message
	}
	return m
}

// progressStream is a tool call's progress and result as a gateway.Stream.
type progressStream struct {
	msgs   chan []byte
	done   chan struct{} // closed when the call has ended; final or err is set
	final  []byte
	err    error
	sent   bool
	cancel context.CancelFunc
	once   sync.Once
}

// Recv implements gateway.Stream.
func (s *progressStream) Recv(ctx context.Context) ([]byte, error) {
	select {
	case m := <-s.msgs:
		return m, nil
	default:
	}
	select {
	case m := <-s.msgs:
		return m, nil
	case <-s.done:
	case <-ctx.Done():
		return nil, gateway.AsError(ctx.Err())
	}
	select {
	case m := <-s.msgs:
		return m, nil
	default:
	}
	if s.err != nil {
		return nil, s.err
	}
	if s.sent {
		return nil, io.EOF
	}
	s.sent = true
	return s.final, nil
}

// Close implements gateway.Stream: it cancels the call if it is still running.
func (s *progressStream) Close() error {
	s.once.Do(func() {
		s.cancel()
		<-s.done
	})
	return nil
}

// Catalog returns the bridge's current catalog.
func (t *Target) Catalog() *Catalog { return t.b.Catalog() }

// Namespace returns the method prefix of the target's tools.
func (t *Target) Namespace() string { return t.ns }

// OnEvent registers fn for the bridge's catalog and resource events (Bridge.OnEvent).
func (t *Target) OnEvent(fn func(Event)) (remove func()) { return t.b.OnEvent(fn) }

// ReadResource reads a resource from the upstream that offers it (Bridge.ReadResource).
func (t *Target) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	return t.b.ReadResource(ctx, uri)
}

// GetPrompt gets a prompt from the upstream that offers it; args are the prompt's
// arguments (Bridge.GetPrompt).
func (t *Target) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return t.b.GetPrompt(ctx, name, raw)
}

// Subscribe subscribes to a resource upstream (Bridge.Subscribe).
func (t *Target) Subscribe(ctx context.Context, uri string) error { return t.b.Subscribe(ctx, uri) }

// Unsubscribe drops a resource subscription upstream (Bridge.Unsubscribe).
func (t *Target) Unsubscribe(ctx context.Context, uri string) error { return t.b.Unsubscribe(ctx, uri) }

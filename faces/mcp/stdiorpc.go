package mcpface

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// spanStdio names the ingress span of a JSON-RPC line served over stdio.
const spanStdio = "stdio message"

// mcpNamespaces are the prefixes of MCP's methods with a slash; initialize and ping are
// its only methods without one.
var mcpNamespaces = []string{
	"tools/", "resources/", "prompts/", "completion/", "logging/", "notifications/",
	"sampling/", "elicitation/", "roots/", "tasks/", "server/",
}

// isMCPMethod reports whether method belongs to MCP (mcp-go answers it) rather than to the
// gateway's JSON-RPC methods.
func isMCPMethod(method string) bool {
	if method == "initialize" || method == "ping" {
		return true
	}
	for _, ns := range mcpNamespaces {
		if strings.HasPrefix(method, ns) {
			return true
		}
	}
	return false
}

// lineHead is what routing reads of one message of a line.
type lineHead struct {
	Method *string `json:"method"`
}

// routedLine reports whether a stdio line goes to the gateway's JSON-RPC pipeline rather
// than to mcp-go: a request or notification whose method is not MCP's, a batch none of
// whose members is MCP (or a response), and a line that is not JSON at all (answered with
// the pipeline's parse error). Blank lines, responses (to mcp-go's own requests) and MCP
// messages go to mcp-go as they are.
func routedLine(line []byte) bool {
	text := bytes.TrimSpace(line)
	if len(text) == 0 {
		return false
	}
	switch text[0] {
	case '{':
		var h lineHead
		if json.Unmarshal(text, &h) != nil {
			return true
		}
		return h.Method != nil && !isMCPMethod(*h.Method)
	case '[':
		var hs []lineHead
		if json.Unmarshal(text, &hs) != nil {
			return true
		}
		for _, h := range hs {
			if h.Method == nil || isMCPMethod(*h.Method) {
				return false
			}
		}
		return true
	default:
		return true
	}
}

// serveStdioLine runs one routed line — a request, a notification or a batch — through the
// pipeline of the configuration in force, as who from the local zone, and writes what it
// produces with write, one message a line: a streamed result's messages as $/stream
// notifications, named events (nekte.delegate's task events) as $/event notifications,
// then the response.
func (f *Face) serveStdioLine(ctx context.Context, who gateway.Principal, line []byte, write func([]byte) error) {
	rt := f.gw.Acquire()
	defer rt.Release()
	p := rt.Pipeline()
	payload, derr := jsonrpc.Decode(line, p.LimitsFor(who))
	ctx, span, traceID := p.Tracer.StartMessage(ctx, gateway.ProtocolStdio, spanStdio, &payload, derr)
	if span != nil {
		defer span.End()
	}
	ex := faces.Exchange{
		Principal: who,
		Zone:      gateway.ZoneLocal,
		Protocol:  gateway.ProtocolStdio,
		Deadline:  p.Resolve(0),
		TraceID:   traceID,
		Span:      span,
		Delivery:  stdioDelivery{write: write},
	}
	if out := p.ServePayload(ctx, &ex, payload, derr, nil); len(out) > 0 {
		if err := write(out); err != nil {
			f.log.Debug("a stdio response was not written", "trace_id", traceID, "err", err)
		}
	}
}

// refuseStdioLine answers a routed line over the limit (jsonrpc.max_body_bytes) as the
// HTTP face answers such a body: the error names no id, since the line was not read whole.
func (f *Face) refuseStdioLine(limit int64, write func([]byte) error) {
	err := gateway.NewError(schemas.CodePayloadTooLarge).With("limit", "max_body_bytes").With("max", limit)
	_ = write(faces.AppendError(nil, jsonrpc.ID{}, err, observability.NewTraceID()))
}

// stdioDelivery delivers a routed request's streamed result and named events as
// notifications on stdout. Progress is not asked for: its sink must never wait, and a write
// to stdout may.
type stdioDelivery struct {
	write func([]byte) error
}

var (
	_ faces.StreamDeliverer = stdioDelivery{}
	_ faces.EventDeliverer  = stdioDelivery{}
)

// DeliverStream implements faces.StreamDeliverer: each message as a $/stream notification.
func (d stdioDelivery) DeliverStream(ctx context.Context, id jsonrpc.ID, s gateway.Stream) faces.Outcome {
	return faces.Relay(ctx, id, s, func(msg []byte) error { return d.write(bytes.Clone(msg)) })
}

// DeliverEvents implements faces.EventDeliverer: each event as a $/event notification.
func (d stdioDelivery) DeliverEvents(ctx context.Context, id jsonrpc.ID, s gateway.Stream) faces.Outcome {
	return faces.RelayEvents(ctx, id, s, func(name string, data []byte) error {
		return d.write(faces.AppendEventNote(nil, id, name, data))
	})
}

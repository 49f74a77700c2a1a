package a2aface

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/gatehouse-dev/gatehouse/codecs/a2a"
	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
)

// opOut is where an exchange started by Operate answers: the result of a unary operation,
// the error, and each stream result handed to event as it comes.
type opOut struct {
	result []byte
	err    *a2a.Error
	event  func(result []byte) bool
}

// Operate runs one A2A v1.0 operation that arrived over another binding than JSON-RPC
// (the gRPC binding of the internal face), as POST /a2a runs it: ex is the caller
// (authenticated by that binding), its zone, protocol, deadline and trace; method is the
// operation's name (SendMessage, GetTask, ...); params are its request in the JSON of the
// JSON-RPC binding (the protojson of the gRPC request), decoded by the same strict decoder
// under the same limits (a2a.max_message_bytes, a2a.max_parts, the pipeline's depth and
// string limits). The operation binds and looks up tasks by the same principal, so a task
// created over one binding is the caller's over the other.
//
// A unary operation returns its result (the JSON of the JSON-RPC binding's result); a
// streaming one (SendStreamingMessage, SubscribeToTask) hands each stream result to event
// (false from event ends the stream) and returns nil. With no a2a section, or a2a.grpc
// false, every operation is CodeMethodNotFound. The error is the binding's, set
// when the operation failed, possibly after some events.
func (f *Face) Operate(ctx context.Context, ex faces.Exchange, method string, params []byte, event func(result []byte) bool) ([]byte, *a2a.Error) {
	rt := f.gw.Acquire()
	defer rt.Release()
	cfg := rt.A2A()
	if cfg == nil {
		return nil, a2a.Errf(a2a.CodeMethodNotFound, "A2A is not enabled on this gateway").Info("METHOD_NOT_FOUND")
	}
	if cfg.GRPC != nil && !*cfg.GRPC {
		return nil, a2a.Errf(a2a.CodeMethodNotFound, "The A2A gRPC binding is off (a2a.grpc: false)").Info("METHOD_NOT_FOUND")
	}
	if int64(len(params)) > cfg.MaxMessageBytes {
		return nil, a2a.Errf(a2a.CodeInvalidRequest, "Request payload validation error").
			At("", "the request is larger than a2a.max_message_bytes ("+strconv.FormatInt(cfg.MaxMessageBytes, 10)+")")
	}
	if len(params) == 0 {
		params = []byte("{}")
	}
	name, _ := json.Marshal(method)
	body := make([]byte, 0, len(params)+len(name)+48)
	body = append(body, `{"jsonrpc":"2.0","id":1,"method":`...)
	body = append(body, name...)
	body = append(body, `,"params":`...)
	body = append(append(body, params...), '}')
	out := &opOut{event: event}
	x := &exchange{f: f, rt: rt, cfg: cfg, p: rt.Pipeline(), ex: ex, owner: ownerOf(ex.Principal), out: out}
	x.ex.KeepStream = true
	x.ex.Method = method
	req, _, derr := a2a.DecodeRequest(body, a2a.V10, x.limits())
	if derr != nil {
		observability.TraceError(ex.Span, gateway.Errorf(derr.Code, "%s", derr.Message))
		return nil, derr
	}
	x.req = req
	x.dispatch(ctx)
	if out.err != nil {
		return nil, out.err
	}
	return out.result, nil
}

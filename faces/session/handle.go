package session

import (
	"encoding/json"

	wire "github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// features are what status.result announces this gateway supports.
var features = []string{"chat", "queue", "abort", "task.status", "events", "websocket", "sse"}

// limits returns the decoder limits of the configuration in force.
func (f *Face) limits(cfg *Config) wire.Limits {
	rt := f.gw.Acquire()
	defer rt.Release()
	l := rt.Pipeline().Limits
	return wire.Limits{MaxBytes: cfg.MaxMessageBytes, MaxDepth: max(l.MaxDepth, 2), MaxStringBytes: max(l.MaxStringBytes, wire.MaxIDBytes)}
}

// statusResult is the status.result payload for cfg.
func statusResult(cfg *Config) []byte {
	res := wire.StatusResult{Versions: []string{wire.Version}, Version: wire.Version, Features: features,
		Limits: map[string]any{"max_queued": cfg.MaxQueued, "max_tasks": cfg.MaxTasks, "max_message_bytes": cfg.MaxMessageBytes}}
	for _, r := range cfg.Routes {
		res.Routes = append(res.Routes, r.Name)
	}
	out, _ := json.Marshal(res) // strings and ints always marshal
	return out
}

// startPayload checks a chat.start payload: an object whose message is a string.
func startPayload(p json.RawMessage) (wire.StartPayload, bool) {
	var sp wire.StartPayload
	if len(p) == 0 || json.Unmarshal(p, &sp) != nil {
		return sp, false
	}
	var head struct {
		Message json.RawMessage `json:"message"`
	}
	_ = json.Unmarshal(p, &head)
	return sp, len(head.Message) > 0 && head.Message[0] == '"'
}

func invalidPayload(id, what string) []byte {
	return errorMsg(id, wire.TypeError, "", wire.ErrorInvalidPayload, gateway.Errorf(schemas.CodeInvalidParams, "%s", what), nil)
}

// handle serves one envelope of a WebSocket connection.
func (f *Face) handle(s *session, data []byte, out wsSink, routeName string, principal func() (gateway.Principal, error), cfg Config) {
	env, derr := wire.DecodeRequest(data, f.limits(&cfg))
	if derr != nil {
		out.send(envelopeError("rpc_unknown", derr))
		return
	}
	switch env.Type {
	case wire.TypeStatusGet:
		out.send(wire.AppendEnvelope(nil, env.ID, wire.TypeStatusResult, f.currentStatus()))
	case wire.TypeChatStart:
		if _, ok := startPayload(env.Payload); !ok {
			out.send(errorMsg(env.ID, wire.TypeChatError, "", wire.ErrorInvalidPayload,
				gateway.Errorf(schemas.CodeInvalidParams, "chat.start takes {message, history?, sessionId?, options?}"), nil))
			return
		}
		route, ok := f.currentRoute(routeName)
		if !ok {
			out.send(errorMsg(env.ID, wire.TypeChatError, "", wire.ErrorUnknownRoute, gateway.Errorf(schemas.CodeMethodNotFound, "No such session route"), nil))
			return
		}
		if _, err := principal(); err != nil { // the credential ended: nothing new runs
			out.send(errorMsg(env.ID, wire.TypeChatError, "", wire.ErrorCredential, gateway.AsError(err), nil))
			return
		}
		s.start(env.ID, route, append([]byte(nil), env.Payload...), out, gateway.ProtocolWebSocket, principal)
	case wire.TypeChatAbort:
		var p struct {
			RequestID string `json:"requestId"`
		}
		if json.Unmarshal(env.Payload, &p) != nil || p.RequestID == "" {
			out.send(invalidPayload(env.ID, "chat.abort takes {requestId}"))
			return
		}
		res, _ := json.Marshal(s.abort(p.RequestID))
		out.send(wire.AppendEnvelope(nil, env.ID, wire.TypeChatAbortResult, res))
	case wire.TypeTaskStatus:
		out.send(taskStatus(s, env))
	}
}

// taskStatus answers task.status on s.
func taskStatus(s *session, env wire.Envelope) []byte {
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(env.Payload, &p) != nil || p.TaskID == "" {
		return invalidPayload(env.ID, "task.status takes {taskId}")
	}
	var st wire.TaskStatus
	ok := false
	if s != nil {
		st, ok = s.status(p.TaskID)
	}
	if !ok {
		return errorMsg(env.ID, wire.TypeError, "", wire.ErrorUnknownTask, gateway.Errorf(schemas.CodeInvalidParams, "No such task"), nil)
	}
	res, _ := json.Marshal(st)
	return wire.AppendEnvelope(nil, env.ID, wire.TypeTaskStatusResult, res)
}

// currentStatus is status.result of the configuration in force.
func (f *Face) currentStatus() []byte {
	rt := f.gw.Acquire()
	defer rt.Release()
	cfg := rt.Session()
	if cfg == nil {
		return statusResult(&Config{})
	}
	return statusResult(cfg)
}

// currentRoute returns the route named name in the configuration in force.
func (f *Face) currentRoute(name string) (sessionrpc.RouteConfig, bool) {
	rt := f.gw.Acquire()
	defer rt.Release()
	cfg := rt.Session()
	if cfg == nil {
		return sessionrpc.RouteConfig{}, false
	}
	return cfg.route(name)
}

package mcpbackend

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Methods of the requests a server sends to the gateway, answered by policy.
const (
	methodSampling    = string(mcp.MethodSamplingCreateMessage)
	methodElicitation = string(mcp.MethodElicitationCreate)
)

// policyFor returns the name and the configured policy of a server request's kind.
func (u *upstream) policyFor(method string) (what, policy string) {
	if method == methodSampling {
		return "sampling", u.cfg.Sampling
	}
	return "elicitation", u.cfg.Elicitation
}

// canAnswer reports whether the policy for method can ever answer: it decides whether
// the capability is declared to the server.
func (u *upstream) canAnswer(method string) bool {
	switch _, policy := u.policyFor(method); policy {
	case PolicyClient:
		return true
	case PolicyRoute:
		if method == methodSampling {
			return u.owner().sampling != nil
		}
		return u.owner().elicitation != nil
	}
	return false
}

// answer handles a sampling/createMessage or elicitation/create request the server sent
// on s, by the upstream's policy, within the request timeout. It returns the result JSON
// or a *gateway.Error (a refusal is METHOD_NOT_FOUND with data {upstream, policy,
// reason}).
func (u *upstream) answer(ctx context.Context, s *session, method string, params json.RawMessage) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.RequestTimeout)
	defer cancel()
	what, policy := u.policyFor(method)
	switch policy {
	case PolicyRoute:
		return u.routeRequest(ctx, method, params)
	case PolicyClient:
		return u.relayRequest(ctx, s, method, params)
	}
	return nil, u.refusal(method, policy, "the "+what+" policy of this upstream is "+PolicyRefuse)
}

// refusal is the error for a server request the gateway does not answer.
func (u *upstream) refusal(method, policy, reason string) *gateway.Error {
	return gateway.Errorf(schemas.CodeMethodNotFound, "%s is refused by the gateway: %s", method, reason).
		With("upstream", u.cfg.Name).With("policy", policy).With("reason", reason)
}

// routeRequest passes a request to the handler installed for policy "route".
func (u *upstream) routeRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	switch h := u.owner(); {
	case method == methodSampling && h.sampling != nil:
		return h.sampling.CreateMessage(ctx, u.cfg.Name, params)
	case method == methodElicitation && h.elicitation != nil:
		return h.elicitation.Elicit(ctx, u.cfg.Name, params)
	}
	return nil, u.refusal(method, PolicyRoute, "the gateway has no backend for it")
}

// relayRequest passes a request to the downstream MCP client whose call caused it, when
// that client is known for certain and declared the capability.
func (u *upstream) relayRequest(ctx context.Context, s *session, method string, params json.RawMessage) (json.RawMessage, error) {
	p, why := s.attribute(ctx)
	if p == nil {
		u.log.Debug("server request not relayed: its caller is not known for certain", "method", method, "reason", why)
		return nil, u.refusal(method, PolicyClient, "it cannot be attributed to one calling MCP client ("+why+")")
	}
	caps := p.Capabilities()
	switch {
	case caps.NoRequests != "":
		return nil, u.refusal(method, PolicyClient, "the calling MCP client cannot take it: "+caps.NoRequests)
	case method == methodSampling && !caps.Sampling:
		return nil, u.refusal(method, PolicyClient, "the calling MCP client did not declare the sampling capability")
	case method == methodElicitation && !caps.Elicitation:
		return nil, u.refusal(method, PolicyClient, "the calling MCP client did not declare the elicitation capability (form mode)")
	case method == methodElicitation && !formMode(params):
		return nil, u.refusal(method, PolicyClient, "only form mode elicitation is relayed")
	}
	return p.Request(ctx, method, params)
}

// formMode reports whether elicitation params ask for a form (mode absent or "form").
func formMode(params json.RawMessage) bool {
	var p struct {
		Mode string `json:"mode"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Mode == "" || p.Mode == mcp.ElicitationModeForm
}

// relayLog writes a notifications/message to the gateway's log, at the slog level
// matching its own, and passes it to the caller it can be attributed to.
func (u *upstream) relayLog(s *session, fields map[string]any) {
	level, _ := fields["level"].(string)
	u.log.Log(u.ctx, logLevel(level), "upstream log", "mcp_level", level, "logger", fields["logger"], "data", fields["data"])
	p, why := s.calls.sole()
	if p == nil {
		u.log.Debug("upstream log not relayed: its caller is not known for certain", "reason", why)
		return
	}
	if raw, err := json.Marshal(fields); err == nil {
		p.Log(raw)
	}
}

// logLevel maps an MCP log level to the gateway's: debug to debug, warning and above to
// warn (an upstream's error is not the gateway's), the rest to info.
func logLevel(level string) slog.Level {
	switch mcp.LoggingLevel(level) {
	case mcp.LoggingLevelDebug:
		return slog.LevelDebug
	case mcp.LoggingLevelWarning, mcp.LoggingLevelError, mcp.LoggingLevelCritical, mcp.LoggingLevelAlert, mcp.LoggingLevelEmergency:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// inputHandler answers the input requests of multi round-trip results (protocol
// 2026-07-28): mcp-go's client hands them to its sampling and elicitation handlers in the
// context of the call that received them, so they are attributed exactly.
type inputHandler struct{ s *session }

// CreateMessage implements client.SamplingHandler.
func (h inputHandler) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	var res mcp.CreateMessageResult
	if err := h.answer(ctx, methodSampling, req.CreateMessageParams, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Elicit implements client.ElicitationHandler.
func (h inputHandler) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	var res mcp.ElicitationResult
	if err := h.answer(ctx, methodElicitation, req.Params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (h inputHandler) answer(ctx context.Context, method string, params, result any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return gateway.NewError(schemas.CodeInternal).With("upstream", h.s.up.cfg.Name).Wrap(err)
	}
	out, err := h.s.up.answer(ctx, h.s, method, raw)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, result); err != nil {
		return gateway.Errorf(schemas.CodeInternal, "The answer to %s is not a valid result", method).
			With("upstream", h.s.up.cfg.Name).Wrap(err)
	}
	return nil
}

// askLogLevel asks a server on 2026-07-28, where the log level is declared per request,
// for the log messages the call's caller wants: the level its peer reports. Without a
// peer none are asked for; on a handshake revision the session's level applies
// (session.askForLogs).
func askLogLevel(ctx context.Context, s *session, meta **mcp.Meta) {
	level := logLevelFor(ctx, s)
	if level == "" {
		return
	}
	if *meta == nil {
		*meta = &mcp.Meta{}
	}
	if (*meta).AdditionalFields == nil {
		(*meta).AdditionalFields = map[string]any{}
	}
	(*meta).AdditionalFields[mcp.MetaKeyLogLevel] = level
}

// logLevelFor is the per-request log level askLogLevel asks for, or "".
func logLevelFor(ctx context.Context, s *session) string {
	p := peerFrom(ctx)
	if p == nil || !mcp.IsModernProtocol(s.version) {
		return ""
	}
	return p.Capabilities().LogLevel
}

package mcpface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// mcpPeer is the MCP client session that made one tool call through the face, as the
// bridge sees it: upstream log notifications and, for upstreams whose policy is
// "client", sampling and elicitation requests made during the call are relayed to it.
type mcpPeer struct {
	f    *Face
	ctx  context.Context // the call's: it names the session, and over streamable HTTP the stream to use
	id   string
	caps mcpbackend.PeerCapabilities
	// stream, when set, is the call's response log messages go to (fastcall.go, poststream.go).
	stream *callStream
}

var _ mcpbackend.Peer = (*mcpPeer)(nil)

// peerSeq numbers the calls of sessionless (2026-07-28) clients, each a peer of its own.
var peerSeq atomic.Uint64

// withPeer returns ctx carrying the calling session as the bridge's peer; ctx unchanged
// when there is no session.
func (f *Face) withPeer(ctx context.Context) context.Context { return f.peerWith(ctx, nil) }

// peerWith is withPeer for a call whose log messages are written to st (nil: sent
// through mcp-go's session).
func (f *Face) peerWith(ctx context.Context, st *callStream) context.Context {
	session := mcpserver.ClientSessionFromContext(ctx)
	if session == nil {
		return ctx
	}
	p := &mcpPeer{f: f, ctx: ctx, id: session.SessionID(), stream: st}
	if p.id == "" {
		p.id = "call-" + strconv.FormatUint(peerSeq.Add(1), 10)
	}
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		// 2026-07-28 has no server-initiated requests, and the level is the request's own.
		// A tools/call or prompts/get whose request declared sampling or elicitation is a
		// multi round-trip call with a peer of its own (mrtr.go); any other request (a
		// read, a completion) cannot carry input requests, and one that declared neither
		// capability is refused for want of it (mcpbackend's relay names it).
		p.caps = modernCaps(info)
		if p.caps.Sampling || p.caps.Elicitation {
			p.caps.Sampling, p.caps.Elicitation = false, false
			p.caps.NoRequests = "on protocol " + info.ProtocolVersion + " only tools/call and prompts/get can carry input requests (multi round trip)"
		}
		return mcpbackend.WithPeer(ctx, p)
	}
	if ci, ok := session.(mcpserver.SessionWithClientInfo); ok {
		cc := ci.GetClientCapabilities()
		p.caps.Sampling = cc.Sampling != nil
		// An empty elicitation capability means form mode (2025-11-25).
		p.caps.Elicitation = cc.Elicitation != nil && (cc.Elicitation.Form != nil || cc.Elicitation.URL == nil)
	}
	if sl, ok := session.(mcpserver.SessionWithLogging); ok {
		p.caps.LogLevel = string(sl.GetLogLevel())
	}
	return mcpbackend.WithPeer(ctx, p)
}

// ID implements mcpbackend.Peer.
func (p *mcpPeer) ID() string { return p.id }

// Capabilities implements mcpbackend.Peer.
func (p *mcpPeer) Capabilities() mcpbackend.PeerCapabilities { return p.caps }

// Log implements mcpbackend.Peer: mcp-go drops a message below the session's level.
func (p *mcpPeer) Log(params json.RawMessage) {
	var m struct {
		Level  mcp.LoggingLevel `json:"level"`
		Logger string           `json:"logger"`
		Data   any              `json:"data"`
	}
	if err := json.Unmarshal(params, &m); err != nil {
		return
	}
	if p.stream != nil { // onto the call's response, filtered as mcp-go would
		if wantsLog(p.ctx, m.Level) {
			p.stream.send(logNotification(m.Level, m.Logger, m.Data))
		}
		return
	}
	if err := p.f.srv.SendLogMessageToClient(p.ctx, mcp.NewLoggingMessageNotification(m.Level, m.Logger, m.Data)); err != nil {
		p.f.log.DebugContext(p.ctx, "relaying an MCP log message", "err", err)
	}
}

// wantsLog reports whether the caller of ctx gets a log message of level, as mcp-go's
// SendLogMessageToClient decides: under 2026-07-28 by the request's own level (none: no
// messages), else by the session's.
func wantsLog(ctx context.Context, level mcp.LoggingLevel) bool {
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.LogLevel != "" && level.ShouldSendTo(info.LogLevel)
	}
	sl, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithLogging)
	return ok && level.ShouldSendTo(sl.GetLogLevel())
}

// Request implements mcpbackend.Peer. It ends when the client answers, ctx ends, or the
// call the peer belongs to ends.
func (p *mcpPeer) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	rctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	var res any
	var err error
	sid, relayed := p.f.relay.handles(p) // a streamable HTTP session: the face relays it (relay25.go)
	switch method {
	case string(mcp.MethodSamplingCreateMessage):
		req := mcp.CreateMessageRequest{}
		if err := json.Unmarshal(params, &req.CreateMessageParams); err != nil {
			return nil, gateway.NewError(schemas.CodeInvalidParams).With("reason", "malformed sampling/createMessage params")
		}
		if relayed {
			var out json.RawMessage
			if out, err = p.f.relay.request(rctx, sid, faceRequestOf(p.ctx), method, params); err == nil {
				res, err = parseRelayed[mcp.CreateMessageResult](out, method)
			}
			break
		}
		res, err = p.f.srv.RequestSampling(rctx, req) //nolint:staticcheck // relaying the upstream's request to a client of a revision that has sampling
	case string(mcp.MethodElicitationCreate):
		req := mcp.ElicitationRequest{}
		if err := json.Unmarshal(params, &req.Params); err != nil {
			return nil, gateway.NewError(schemas.CodeInvalidParams).With("reason", "malformed elicitation/create params")
		}
		if relayed {
			if err := req.Params.Validate(); err != nil {
				return nil, gateway.NewError(schemas.CodeInvalidParams).With("reason", err.Error())
			}
			var out json.RawMessage
			if out, err = p.f.relay.request(rctx, sid, faceRequestOf(p.ctx), method, params); err == nil {
				res, err = parseRelayed[mcp.ElicitationResult](out, method)
			}
			break
		}
		res, err = p.f.srv.RequestElicitation(rctx, req)
	default:
		return nil, gateway.NewError(schemas.CodeMethodNotFound).With("method", method)
	}
	var ge *gateway.Error
	if err != nil && errors.As(err, &ge) && ge.Code() != schemas.CodeInternal {
		return nil, ge // the relay's own word: no stream, the bus, a malformed answer
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, gateway.AsError(ctx.Err())
	case err != nil && rctx.Err() != nil:
		return nil, gateway.Errorf(schemas.CodeCancelled, "The call that caused %s ended before the client answered", method)
	case err != nil:
		return nil, gateway.Errorf(schemas.CodeInternal, "The calling MCP client did not answer %s", method).Wrap(err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, gateway.NewError(schemas.CodeInternal).Wrap(err)
	}
	return out, nil
}

// parseRelayed decodes a client's result to a relayed request as mcp-go would.
func parseRelayed[T any](raw json.RawMessage, method string) (*T, error) {
	var res T
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("failed to unmarshal %s response: %w", method, err)
	}
	if cm, ok := any(&res).(*mcp.CreateMessageResult); ok {
		content, err := mcp.ParseSamplingContent(cm.Content)
		if err != nil {
			return nil, fmt.Errorf("failed to parse sampling response content: %w", err)
		}
		cm.Content = content
	}
	return &res, nil
}

// faceCompletions answers completion/complete on the face by running it through the
// pipeline as the caller — the bridge's "<namespace>completion/complete", decided by the
// policy as the prompt or resource template it completes (read.go) — to the
// upstream that owns the referenced prompt or resource template (Bridge.Complete).
type faceCompletions struct{ f *Face }

var (
	_ mcpserver.PromptCompletionProvider   = faceCompletions{}
	_ mcpserver.ResourceCompletionProvider = faceCompletions{}
)

// CompletePromptArgument implements mcpserver.PromptCompletionProvider.
func (c faceCompletions) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return c.complete(ctx, mcp.PromptReference{Type: "ref/prompt", Name: name}, arg, cc)
}

// CompleteResourceArgument implements mcpserver.ResourceCompletionProvider.
func (c faceCompletions) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return c.complete(ctx, mcp.ResourceReference{Type: "ref/resource", URI: uri}, arg, cc)
}

func (c faceCompletions) complete(ctx context.Context, ref any, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	t := c.f.target()
	if t == nil {
		return nil, gateway.NewError(schemas.CodeCapabilityNotFound)
	}
	raw, err := c.f.runRead(ctx, t, mcpbackend.MethodCompletionComplete, mcp.CompleteParams{Ref: ref, Argument: arg, Context: cc}, nil)
	if err != nil {
		return nil, err
	}
	var res mcp.CompleteResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, gateway.Errorf(schemas.CodeInternal, "The upstream's completion result is malformed").Wrap(err)
	}
	return &res.Completion, nil
}

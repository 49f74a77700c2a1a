package gateway

import (
	"context"
	"crypto/x509"
	"net/netip"
	"strconv"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
)

// TrustZone is the trust zone of the listener a call arrived on.
type TrustZone uint8

// Trust zones, from least to most trusted.
const (
	ZoneExternal TrustZone = iota // the boundary listener
	ZoneInternal                  // the internal gRPC listener
	ZoneOperator                  // the admin listener
	ZoneLocal                     // stdio, a process on the same host
)

// unknownName is the name of a value outside its enumeration.
const unknownName = "unknown"

var zoneNames = [...]string{"external", "internal", "operator", "local"}

// String returns the zone's configuration name.
func (z TrustZone) String() string {
	if int(z) < len(zoneNames) {
		return zoneNames[z]
	}
	return unknownName
}

// Protocol is the ingress protocol a call arrived over.
type Protocol uint8

// Ingress protocols.
const (
	ProtocolHTTP Protocol = iota
	ProtocolWebSocket
	ProtocolGRPC
	ProtocolMCP
	ProtocolStdio
)

var protocolNames = [...]string{"http", "websocket", "grpc", "mcp", "stdio"}

// String returns the protocol's name as used in logs and metric labels.
func (p Protocol) String() string {
	if int(p) < len(protocolNames) {
		return protocolNames[p]
	}
	return unknownName
}

// Principal is the authenticated caller of a call.
type Principal struct {
	// Subject identifies the caller (a JWT subject, an API key's name, "anonymous").
	Subject string
	// Scopes are the scopes the caller holds.
	Scopes []string
	// Tier names the caller's client tier; limits such as the batch size are chosen by tier.
	Tier string
	// Anonymous is true when no credential was presented and anonymous access was allowed.
	Anonymous bool
	// Claims are the verified claims of the caller's token, as decoded from its JSON payload
	// (strings, bool, nil, json.Number, []any, map[string]any), for policies that decide on
	// claims other than the subject and scopes; nil for callers without a token (API keys,
	// anonymous). The map is shared: it must not be modified.
	Claims map[string]any
	// Bearer is the caller's verified bearer token, kept only to forward it to a backend
	// whose hop mode is passthrough; empty for callers without one. It is a credential:
	// never log it, never put it in an error or a result.
	Bearer string
	// Expires is the instant from which the credential is refused as expired (a token's exp
	// plus its issuer's leeway, a client certificate's NotAfter); the zero time for credentials that do not expire (API keys,
	// anonymous callers). Connections that outlive the request that authenticated them
	// close at it.
	Expires time.Time
}

// Owner is the key of what the caller owns across requests — tasks, MCP sessions and
// tasks, session-RPC sessions: its subject within its credential's namespace, so that
// equal subjects of two token issuers never share what they own. For a token it is the
// quoted issuer, a space and the subject (a quoted prefix cannot be forged by a subject);
// for API keys, client certificates and anonymous callers, whose names the operator
// configures, the subject alone.
func (p Principal) Owner() string {
	if p.Claims == nil {
		return p.Subject
	}
	iss, _ := p.Claims["iss"].(string)
	return strconv.Quote(iss) + " " + p.Subject
}

// Credentials are what a face extracted from the transport before decoding any payload.
type Credentials struct {
	// Bearer is the bearer token, without the "Bearer " prefix; empty when absent.
	Bearer string
	// APIKey is an API key presented by a machine client; empty when absent.
	APIKey string
	// Remote is the peer's address.
	Remote netip.AddrPort
	// Zone is the trust zone of the listener.
	Zone TrustZone
	// ClientCert is the leaf of the client certificate the listener's TLS handshake
	// verified against its client CAs; nil when the connection is not TLS or no certificate
	// was verified (an unverified one is never passed on).
	ClientCert *x509.Certificate
}

// Call is one JSON-RPC request on its way through the pipeline, whatever face it came from.
// A Call is owned by one goroutine at a time; middlewares may set fields before calling next.
type Call struct {
	// Method is the JSON-RPC method name.
	Method string
	// Params is the raw JSON of params (an object or an array) with the gateway's reserved
	// members removed; nil when the request had none. It may alias the face's read buffer:
	// it is valid until the handler returns, and a target that keeps it must copy it.
	Params []byte
	// ID is the request id; the zero ID marks a notification.
	ID jsonrpc.ID
	// Principal is the authenticated caller.
	Principal Principal
	// Deadline is the absolute deadline of the call; the zero time means none was resolved yet.
	Deadline time.Time
	// TraceID is the W3C trace id (32 lowercase hex digits) the call is recorded under.
	TraceID string
	// Zone is the trust zone of the listener the call arrived on.
	Zone TrustZone
	// Protocol is the ingress protocol.
	Protocol Protocol
	// Target is the backend the routing stage chose; nil before routing.
	Target Target
	// Input is the stream of messages the caller sends after the call has started (to a
	// client-streaming or bidirectional method); nil when the face offers none.
	Input Stream
	// Capability is the id of the NEKTE capability this call runs, set when the capability
	// layer (nekte.invoke, nekte.delegate) dispatches it; empty for a method called directly.
	// Policies that keep a zone from calling methods directly (routing.mcp.direct_zones) let
	// such calls through: capability invocation is the sanctioned path.
	Capability string
	// ServedBy names who served the call when its target says (the agent link: the ids of
	// the agents its task ran on); the access log records it. Empty otherwise.
	ServedBy string

	// vals are the per-call values the stages give what runs below them (the observer,
	// the hop budget and credential, whether the caller named the deadline), answered by
	// the call's one context (WithCall) instead of a context each.
	vals callValues
}

// callValues are a call's per-call context values (CallKey), set by the stages it passes.
type callValues struct {
	observer       Observer
	budget         *HopBudget
	hopToken       string
	hasHopToken    bool
	callerDeadline bool
}

// IsNotification reports whether the call expects no response.
func (c *Call) IsNotification() bool { return c.ID.IsZero() }

type callKey struct{}

// CallKey is a context key whose value the context of a call (WithCall) answers from the
// call itself: a call's per-call data — its log ids, its observer, its hop budget and
// credential — costs one context for the call, not one context per value.
type CallKey interface {
	// FromCall returns the key's value for c, whose context's parent is parent; ok false
	// leaves the lookup to parent.
	FromCall(c *Call, parent context.Context) (v any, ok bool)
}

// callCtx is the context of a call: it carries the call and answers its CallKeys.
type callCtx struct {
	context.Context
	call *Call
}

// Value implements context.Context.
func (x *callCtx) Value(key any) any {
	switch k := key.(type) {
	case callKey:
		return x.call
	case CallKey:
		if v, ok := k.FromCall(x.call, x.Context); ok {
			return v
		}
	}
	return x.Context.Value(key)
}

// String names the context for debugging, as the context package's own do.
func (x *callCtx) String() string { return "gateway.WithCall(" + x.call.Method + ")" }

// WithCall returns ctx carrying c, the call whose handler runs under it: what runs within
// the call (a NEKTE capability invoking its method) takes the caller from it. The context
// also carries the values the stages set on c (WithObserverFor, WithHopBudgetFor,
// WithHopTokenFor, MarkCallerDeadline) and answers every CallKey from c.
func WithCall(ctx context.Context, c *Call) context.Context {
	return &callCtx{Context: ctx, call: c}
}

// CallFrom returns the call ctx runs within (WithCall), nil outside one.
func CallFrom(ctx context.Context) *Call {
	if x, ok := ctx.(*callCtx); ok { // the common case: a stage's own context
		return x.call
	}
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// carries reports whether ctx is call's context or one derived from it with no other
// call in between: a value set on call is then what ctx's lookups find.
func carries(ctx context.Context, call *Call) bool {
	return call != nil && CallFrom(ctx) == call
}

package sessionrpc

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// UpstreamOptions are what the assembly hands an upstream target besides its
// configuration.
type UpstreamOptions struct {
	// Logger receives the upstream command's output and lifecycle; nil discards it.
	Logger *slog.Logger
	// TLS is the client TLS configuration for wss:// and https:// URLs (nil: the system
	// roots).
	TLS *tls.Config
	// Previous are the targets of the configuration serving, on a reload: an upstream
	// command of the same route running the same process is shared with it (one process,
	// stopped when the last target holding it closes) instead of started twice.
	Previous []gateway.Target
}

// Upstream is the target of a session route whose requests run on an agent server that
// speaks session RPC itself. Each call (method "session.<route>", params the chat.start
// payload) opens its own request upstream: over WebSocket, a connection per request
// (the gateway owns queueing, so a request never waits behind another upstream, an abort
// or a disconnect is scoped to one connection, and a broken connection fails exactly one
// request); over HTTP+SSE, a POST /session/chat whose response streams the request's
// messages. chat.start carries the call's hop token as bearer (the subprotocol
// "bearer.<token>" on WebSocket, Authorization on HTTP).
//
// The result stream yields codecs/sessionrpc Frames in the order the upstream sent them:
// its chat.event messages, then its chat.done or chat.error (the upstream's own task id
// removed: the face adds the gateway's). chat.accepted, chat.queued and chat.started are
// dropped: queueing is the gateway's. Cancelling the call sends chat.abort upstream and
// closes the request; a failure upstream (refused, closed early, silent for longer than
// idle_timeout, a message over max_frame_bytes) ends the stream with a typed error.
type Upstream struct {
	name   string
	cfg    UpstreamConfig
	hop    gateway.HopAuth
	log    *slog.Logger
	dialer *websocket.Dialer
	client *http.Client

	wsURL                        string
	chatURL, abortURL, statusURL string
	idPrefix                     string
	seq                          atomic.Uint64
	closed                       atomic.Bool
	proc                         *supervisor // nil without a command
}

var (
	_ gateway.Target           = (*Upstream)(nil)
	_ gateway.Readier          = (*Upstream)(nil)
	_ gateway.Closer           = (*Upstream)(nil)
	_ gateway.Backended        = (*Upstream)(nil)
	_ gateway.HopAuthenticated = (*Upstream)(nil)
)

// NewUpstream returns the target of the session route name; with cfg.Command set it
// starts the upstream process, which Close stops.
func NewUpstream(name string, cfg UpstreamConfig, opts UpstreamOptions) (*Upstream, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("session route %s: %w", name, err)
	}
	cfg = cfg.WithDefaults()
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("session_upstream", name)
	var salt [6]byte
	_, _ = rand.Read(salt[:])
	u := &Upstream{name: name, cfg: cfg, hop: cfg.DownstreamToken.HopAuth(name), log: log,
		idPrefix: "rpc_gh" + hex.EncodeToString(salt[:]) + "_"}
	netDialer := &net.Dialer{Timeout: cfg.DialTimeout}
	switch cfg.Transport {
	case TransportWebSocket:
		u.wsURL = cfg.URL
		u.dialer = &websocket.Dialer{NetDialContext: netDialer.DialContext, HandshakeTimeout: cfg.DialTimeout,
			TLSClientConfig: opts.TLS, ReadBufferSize: 4096, WriteBufferSize: 4096}
	case TransportSSE:
		base := strings.TrimSuffix(cfg.URL, "/")
		u.chatURL, u.abortURL, u.statusURL = base+"/session/chat", base+"/session/abort", base+"/session/status"
		u.client = &http.Client{Transport: &http.Transport{DialContext: netDialer.DialContext, TLSClientConfig: opts.TLS,
			TLSHandshakeTimeout: cfg.DialTimeout, ResponseHeaderTimeout: cfg.DialTimeout, MaxIdleConnsPerHost: 16,
			ForceAttemptHTTP2: opts.TLS != nil}}
	}
	if cfg.Command != "" {
		u.proc = sharedSupervisor(name, cfg, opts.Previous)
		if u.proc == nil {
			u.proc = startSupervisor(cfg, log)
		}
	}
	return u, nil
}

// sharedSupervisor returns the supervisor of the route name among previous when it runs
// the process cfg describes, with a share taken; nil when there is none to share.
func sharedSupervisor(name string, cfg UpstreamConfig, previous []gateway.Target) *supervisor {
	for _, t := range previous {
		if u, ok := t.(*Upstream); ok && u.name == name && u.proc != nil && u.proc.sameCommand(cfg) && u.proc.share() {
			return u.proc
		}
	}
	return nil
}

// Name implements gateway.Target.
func (u *Upstream) Name() string { return "session:" + u.name }

// Backend implements gateway.Backended: the route's upstream is one backend (one breaker,
// one admission queue).
func (u *Upstream) Backend(*gateway.Call) string { return "session:" + u.name }

// HopAuth implements gateway.HopAuthenticated.
func (u *Upstream) HopAuth(*gateway.Call) gateway.HopAuth { return u.hop }

// hopCredential is the bearer sent upstream, "" for none.
func (u *Upstream) hopCredential(ctx context.Context) string {
	if u.hop.Mode == gateway.HopNone {
		return ""
	}
	return gateway.HopToken(ctx)
}

// Invoke implements gateway.Target: it starts the request upstream and returns its frame
// stream. An error from Invoke means chat.start was not delivered.
func (u *Upstream) Invoke(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
	if u.closed.Load() {
		return nil, gateway.Errorf(schemas.CodeUnavailable, "the session upstream is closed").NotSent()
	}
	params := bytes.TrimSpace(call.Params)
	if len(params) == 0 || params[0] != '{' || !json.Valid(params) {
		return nil, gateway.Errorf(schemas.CodeInvalidParams, "the chat.start payload must be a JSON object")
	}
	reqID := u.idPrefix + strconv.FormatUint(u.seq.Add(1), 10)
	start := make([]byte, 0, len(params)+64)
	start = append(start, `{"id":"`...)
	start = append(start, reqID...)
	start = append(start, `","type":"chat.start","payload":`...)
	start = append(start, params...)
	start = append(start, '}')
	var s gateway.Stream
	var err error
	if u.cfg.Transport == TransportSSE {
		s, err = u.openSSE(ctx, reqID, start, params)
	} else {
		s, err = u.openWS(ctx, reqID, start)
	}
	if err != nil {
		return nil, err
	}
	return &gateway.Result{Stream: s}, nil
}

// Ready implements gateway.Readier: the upstream answers status.get (a 401 or 403 answer
// counts: the upstream is up, and calls carry the credential it wants).
func (u *Upstream) Ready(ctx context.Context) error {
	if u.closed.Load() {
		return errors.New("closed")
	}
	if u.proc != nil && !u.proc.running() {
		return fmt.Errorf("the upstream command is not running: %s", u.proc.lastExit())
	}
	ctx, cancel := context.WithTimeout(ctx, u.cfg.DialTimeout)
	defer cancel()
	if u.cfg.Transport == TransportSSE {
		return u.readySSE(ctx)
	}
	return u.readyWS(ctx)
}

// Close implements gateway.Closer: it stops the upstream command, if any. The server
// closes a target after its last call, so no stream is open any more.
func (u *Upstream) Close() error {
	if u.closed.Swap(true) {
		return nil
	}
	if u.proc != nil {
		u.proc.stop()
	}
	if u.client != nil {
		u.client.CloseIdleConnections()
	}
	return nil
}

// upstreamError maps a failure to reach or read the upstream to a typed error: the
// call's own cancellation or deadline when that is what ended it, else UNAVAILABLE.
func upstreamError(ctx context.Context, message string, err error) *gateway.Error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return gateway.ErrDeadline(gateway.LayerUpstream).Wrap(err)
	case ctx.Err() != nil:
		return gateway.NewError(schemas.CodeCancelled).Wrap(err)
	}
	return gateway.Errorf(schemas.CodeUnavailable, "%s", message).Wrap(err)
}

// abortEnvelope is the chat.abort sent upstream for request reqID.
func abortEnvelope(reqID, sessionID string) []byte {
	p := map[string]string{"requestId": reqID}
	if sessionID != "" {
		p["sessionId"] = sessionID
	}
	payload, _ := json.Marshal(p)
	b, _ := json.Marshal(sessionrpc.Envelope{ID: reqID + "_abort", Type: sessionrpc.TypeChatAbort, Payload: payload})
	return b
}

// redact returns raw's URL without credentials, for errors.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "the upstream"
}

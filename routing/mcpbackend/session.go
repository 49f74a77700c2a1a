package mcpbackend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// clientVersion is what the gateway calls itself in clientInfo.
const clientVersion = "1"

// session is one live MCP connection of an upstream: a client, its wire, and for stdio
// its child process.
type session struct {
	up      *upstream
	slot    int
	cli     *client.Client
	wire    *wire
	child   *child       // stdio only
	hc      *http.Client // HTTP transports only
	caps    mcp.ServerCapabilities
	version string
	started time.Time
	// listening: a streamable HTTP transport with the standalone GET stream open.
	listening bool
	// lean: the lean tools/call path's state (lean.go); nil when the session cannot use it.
	lean    *leanSession
	leanIDs atomic.Int64
	// ctx ends when the session is closed: the lean path's requests end with it.
	ctx    context.Context
	cancel context.CancelFunc

	inflight atomic.Int64
	calls    callers // the requests in flight and the peers they carry

	dead     chan struct{} // closed when the session is no longer usable
	deadOnce sync.Once
	reason   string // why it died; written before dead is closed
	expired  bool   // it died because the server forgot it: reconnect at once

	listenMu   sync.Mutex
	stopListen func()

	// caller is the hashed caller key of a session kept for one caller (affinity.go);
	// empty for a pool session. resumeID is the upstream session id it resumes.
	caller   string
	resumeID string
	// keepUpstream: closing the session leaves the upstream session alive (no DELETE),
	// for another replica, or this one later, to resume.
	keepUpstream atomic.Bool
	// probeNotes: what the handshake's server/discover probe saw (discover.go).
	probeNotes probeNotes

	closeOnce sync.Once
}

// errVersion is a server answering with a protocol version that is not configured.
type errVersion struct{ got string }

func (e errVersion) Error() string {
	return fmt.Sprintf("server chose protocol version %q, which is not configured", e.got)
}

// connect starts a session: spawns or dials, negotiates, and starts listening for
// notifications. On error, everything it started is stopped again.
func (u *upstream) connect(ctx context.Context, slot int) (*session, error) {
	s, err := u.dial(ctx, slot, u.httpLegacy.Load())
	if err != nil {
		return nil, err
	}
	// Over streamable HTTP, notifications outside a request (list_changed) only arrive on
	// the standalone GET stream, which mcp-go opens only when the transport was made with
	// continuous listening — which in turn rules out the stateless revision. A server that
	// turned out to speak a handshake revision is therefore dialled again with listening
	// on, and the upstream remembers it.
	if u.cfg.HTTP != nil && !mcp.IsModernProtocol(s.version) && !s.listening {
		s.close()
		u.httpLegacy.Store(true)
		s2, err := u.dial(ctx, slot, true)
		if err == nil {
			s2.probeNotes.refused = s2.probeNotes.refused || s.probeNotes.refused // the first dial probed
		}
		return s2, err
	}
	return s, nil
}

func (u *upstream) dial(ctx context.Context, slot int, legacyHTTP bool) (*session, error) {
	return u.establish(ctx, &session{up: u, slot: slot, dead: make(chan struct{}), started: u.owner().now()}, legacyHTTP, nil)
}

// establish builds s's transport and client and negotiates (handshake), or, with rec,
// resumes the caller's upstream session rec names without a handshake (affinity.go).
func (u *upstream) establish(ctx context.Context, s *session, legacyHTTP bool, rec *affinityRecord) (*session, error) {
	s.ctx, s.cancel = context.WithCancel(u.ctx)
	inner, err := s.transport(legacyHTTP)
	if err != nil {
		return nil, err
	}
	tr := newWire(inner, s)
	s.wire = wireOf(tr)
	opts := []client.ClientOption{client.WithClientCapabilities(u.clientCapabilities())}
	// Multi round-trip input requests (2026-07-28) reach mcp-go's handlers; setting one
	// declares its capability, so each is set only when the policy can answer.
	if u.canAnswer(methodSampling) {
		opts = append(opts, client.WithSamplingHandler(inputHandler{s}))
	}
	if u.canAnswer(methodElicitation) {
		opts = append(opts, client.WithElicitationHandler(inputHandler{s}))
	}
	if d := min(5*time.Second, u.cfg.ConnectTimeout/2); d > 0 {
		opts = append(opts, client.WithDiscoverTimeout(d))
	}
	if rec != nil {
		opts = append(opts, client.WithSession())
	}
	s.cli = client.NewClient(tr, opts...)
	s.cli.OnNotification(func(n mcp.JSONRPCNotification) { u.notification(s, n) })
	if rec != nil {
		if err := s.resume(rec); err != nil {
			s.close()
			return nil, err
		}
		return s, nil
	}
	if err := s.handshake(ctx, legacyHTTP); err != nil {
		s.close()
		return nil, err
	}
	s.lean = leanFor(s)
	if mcp.IsModernProtocol(s.version) {
		s.listen()
	} else {
		s.askForLogs(ctx)
	}
	return s, nil
}

// askForLogs asks a server on a handshake revision, whose log level is one per session,
// for every level: the gateway filters per caller (the MCP face by the calling session's
// own level) and logs each message at the matching level. On 2026-07-28 the level is
// asked per request instead (Bridge.CallTool).
func (s *session) askForLogs(ctx context.Context) {
	if s.caps.Logging == nil {
		return
	}
	req := mcp.SetLevelRequest{}
	req.Params.Level = mcp.LoggingLevelDebug
	if err := s.cli.SetLevel(ctx, req); err != nil { //nolint:staticcheck // the RPC, for servers before 2026-07-28
		s.up.log.Debug("logging/setLevel refused", "err", err)
	}
}

// transport builds the mcp-go transport for the upstream's configuration.
func (s *session) transport(legacyHTTP bool) (transport.Interface, error) {
	cfg := s.up.cfg
	switch {
	case cfg.Stdio != nil:
		c, err := startChild(cfg.Stdio, s.up.log.With("slot", s.slot))
		if err != nil {
			return nil, err
		}
		s.child = c
		return transport.NewIO(c.stdout, c.stdin, nil), nil
	case cfg.HTTP != nil:
		hc, err := httpClient(cfg.HTTP)
		if err != nil {
			return nil, err
		}
		s.hc = hc
		opts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(hc),
			transport.WithHTTPHeaders(cfg.HTTP.Headers), transport.WithHTTPHeaderFunc(s.up.hopHeaders), transport.WithHTTPLogger(s.up.log)}
		if s.caller != "" {
			// A caller's session: list_changed reaches the pool's sessions; this one only
			// serves the caller's requests, and may be resumed by id.
			hc.Transport = keepDelete{rt: hc.Transport, s: s}
			if s.resumeID != "" {
				opts = append(opts, transport.WithSession(s.resumeID))
			}
			return transport.NewStreamableHTTP(cfg.HTTP.URL, opts...)
		}
		if legacyHTTP || !slices.ContainsFunc(cfg.ProtocolVersions, mcp.IsModernProtocol) {
			s.listening = true
			opts = append(opts, transport.WithContinuousListening()) //nolint:staticcheck // the only way to get list_changed from a handshake-era server
		}
		return transport.NewStreamableHTTP(cfg.HTTP.URL, opts...)
	default:
		hc, err := httpClient(cfg.SSE)
		if err != nil {
			return nil, err
		}
		s.hc = hc
		return transport.NewSSE(cfg.SSE.URL, transport.WithHTTPClient(hc),
			transport.WithHeaders(cfg.SSE.Headers), transport.WithHeaderFunc(s.up.hopHeaders), transport.WithSSELogger(s.up.log))
	}
}

// httpClient returns a client of its own for one session, so closing the session closes
// its connections. It keeps cfg.MaxIdleConns idle connections to the server:
// http.DefaultTransport keeps two per host, so concurrent calls would close and dial a
// connection for nearly every call.
func httpClient(cfg *HTTPConfig) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	idle := cfg.MaxIdleConns
	if idle == 0 {
		idle = DefaultMaxIdleConns
	}
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = idle, idle
	if cfg.TLS != nil {
		tc, err := cfg.TLS.Load()
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = tc
	}
	return &http.Client{Transport: tr}, nil
}

// clientCapabilities are what the gateway declares: roots when some are configured,
// sampling and elicitation (form mode) when their policy can answer: "client", or "route"
// with a handler installed.
func (u *upstream) clientCapabilities() mcp.ClientCapabilities {
	var caps mcp.ClientCapabilities
	if len(u.cfg.Roots) > 0 {
		caps.Roots = &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{}
	}
	if u.canAnswer(methodSampling) {
		caps.Sampling = &mcp.SamplingCapability{}
	}
	if u.canAnswer(methodElicitation) {
		caps.Elicitation = &mcp.ElicitationCapability{Form: &struct{}{}}
	}
	return caps
}

// handshake starts the transport and negotiates the protocol version.
func (s *session) handshake(ctx context.Context, legacyHTTP bool) error {
	cfg := s.up.cfg
	if err := s.cli.Start(s.up.ctx); err != nil {
		return fmt.Errorf("starting transport: %w", err)
	}
	offer := cfg.ProtocolVersions[0]
	if (legacyHTTP || cfg.SSE != nil) && mcp.IsModernProtocol(offer) {
		offer = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = offer
	req.Params.ClientInfo = mcp.Implementation{Name: "gatehouse", Version: clientVersion}
	req.Params.Capabilities = s.up.clientCapabilities()
	res, err := s.cli.Initialize(ctx, req)
	if err != nil {
		if s.child != nil {
			select {
			case <-s.child.exited:
				return &childExit{reason: s.child.exitReason()}
			default:
			}
		}
		return fmt.Errorf("initialize: %w", err)
	}
	if !slices.Contains(cfg.ProtocolVersions, res.ProtocolVersion) {
		return errVersion{got: res.ProtocolVersion}
	}
	s.caps, s.version = res.Capabilities, res.ProtocolVersion
	return nil
}

// listen opens (or reopens with the current subscriptions) the subscriptions/listen
// stream through which a 2026-07-28 server sends list_changed and resources/updated.
func (s *session) listen() {
	f := mcp.SubscriptionFilter{ResourceSubscriptions: s.up.subscribedURIs()}
	if c := s.caps.Tools; c != nil && c.ListChanged {
		f.ToolsListChanged = true
	}
	if c := s.caps.Prompts; c != nil && c.ListChanged {
		f.PromptsListChanged = true
	}
	if c := s.caps.Resources; c != nil && c.ListChanged {
		f.ResourcesListChanged = true
	}
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	if s.stopListen != nil {
		s.stopListen()
		s.stopListen = nil
	}
	if f.IsEmpty() {
		return
	}
	stop, err := s.cli.ListenAsync(s.up.ctx, f, func(err error) {
		s.up.log.Debug("subscriptions/listen ended", "err", err)
	})
	if err == nil {
		s.stopListen = stop
	}
}

// ping checks the session is alive; on the stateless revision, where ping was removed,
// server/discover is the cheapest request.
func (s *session) ping(ctx context.Context) error {
	if mcp.IsModernProtocol(s.version) {
		_, err := s.cli.Discover(ctx, mcp.DiscoverRequest{})
		return err
	}
	return s.cli.Ping(ctx) //nolint:staticcheck // ping is the liveness check before 2026-07-28
}

// fail marks the session dead for reason. In-flight calls fail at once: a child's
// process group is killed and the client closed. An expired session is only retired:
// its in-flight requests may finish, and it is closed once they have.
func (s *session) fail(reason string, expired bool) {
	s.deadOnce.Do(func() {
		s.reason, s.expired = reason, expired
		close(s.dead)
		if expired {
			return
		}
		if s.child != nil {
			s.child.kill()
		}
		s.close()
	})
}

// isDead reports whether the session has failed.
func (s *session) isDead() bool {
	select {
	case <-s.dead:
		return true
	default:
		return false
	}
}

// close stops the session for good: listening ends, the client and transport close, and
// a child is stopped (gracefully unless it was killed) and reaped.
func (s *session) close() {
	s.closeOnce.Do(func() {
		if s.cancel != nil {
			s.cancel()
		}
		s.listenMu.Lock()
		if s.stopListen != nil {
			s.stopListen()
			s.stopListen = nil
		}
		s.listenMu.Unlock()
		if s.cli != nil {
			_ = s.cli.Close()
		} else if s.wire != nil {
			_ = s.wire.Close()
		}
		if s.child != nil {
			s.child.stop()
		}
		if s.hc != nil {
			s.hc.CloseIdleConnections()
		}
	})
}

// deathReason waits briefly for the supervisor to record why a session whose transport
// closed died, so the caller's error can say.
func (s *session) deathReason() string {
	if waitClosed(s.dead, 200*time.Millisecond) {
		return s.reason
	}
	if s.child != nil && waitClosed(s.child.exited, 0) {
		return s.child.exitReason()
	}
	return "connection closed"
}

// isExpiry reports whether err means the server no longer knows the session: a 404 on
// the stale Mcp-Session-Id (mcp-go's ErrSessionTerminated), or the 400 "No valid session
// ID" that servers built on the TypeScript SDK's examples (server-everything among them)
// answer instead.
func isExpiry(err error, x *exchange) bool {
	if errors.Is(err, transport.ErrSessionTerminated) {
		return true
	}
	return x != nil && x.rpcErr != nil && x.rpcErr.Code == -32000 && x.rpcErr.Message == "Bad Request: No valid session ID provided"
}

// childExit is a child that exited during the handshake.
type childExit struct{ reason string }

func (e *childExit) Error() string { return "initialize: " + e.reason }

package agentlink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/gateway"
	agentlinkv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/agentlink/v1"
)

// Authenticate authenticates the caller of an RPC: the principal the gateway's
// authenticator gives its credentials, and the credentials themselves (the remote
// address, whether any was presented); err when they were absent or refused.
type Authenticate = func(ctx context.Context) (gateway.Principal, gateway.Credentials, error)

// RegisterGRPC registers the agent link (AgentLinkService) on s; authn authenticates each
// connecting agent. It is how the internal gRPC face serves the hub.
func (h *Hub) RegisterGRPC(s grpc.ServiceRegistrar, authn func(ctx context.Context) (gateway.Principal, gateway.Credentials, error)) {
	agentlinkv1.RegisterAgentLinkServiceServer(s, &service{hub: h, authn: authn})
	h.registerPeerService(s)
}

type service struct {
	agentlinkv1.UnimplementedAgentLinkServiceServer
	hub   *Hub
	authn Authenticate
}

type stream = grpc.BidiStreamingServer[agentlinkv1.ConnectRequest, agentlinkv1.ConnectResponse]

// Connect implements AgentLinkService: one agent connection.
func (s *service) Connect(st stream) error {
	ad, err := s.admit(st.Context())
	if err != nil {
		return err
	}
	return s.hub.serve(st, ad)
}

// admission is who a connecting agent is: its principal, whether it is anonymous, and
// whether it is trusted (agents.auth.trusted_scope, trusted_cert_identities).
type admission struct {
	p                  gateway.Principal
	anonymous, trusted bool
}

// admit authenticates a connecting agent. A presented credential must be accepted; without
// one, the agent is anonymous, which agents.auth allows only when no credential is required
// or it connects from a loopback address and allow_loopback_anonymous is set. An anonymous
// agent is never trusted.
func (s *service) admit(ctx context.Context) (admission, error) {
	p, creds, err := s.authn(ctx)
	presented := creds.Bearer != "" || creds.APIKey != "" || creds.ClientCert != nil
	a := s.hub.cfg.Auth
	switch {
	case err == nil && !p.Anonymous:
		return admission{p: p, trusted: a.trusted(p, false, creds)}, nil
	case presented:
		return admission{}, status.Error(codes.Unauthenticated, "agent link: the credential was refused")
	}
	loopback := creds.Remote.IsValid() && creds.Remote.Addr().Unmap().IsLoopback()
	if a.requireCredential() && (!a.AllowLoopbackAnonymous || !loopback) {
		return admission{}, status.Error(codes.Unauthenticated,
			"agent link: a credential is required (mTLS or a bearer JWT with scope agent:serve; agents.auth)")
	}
	return admission{p: gateway.Principal{Subject: "anonymous", Anonymous: true}, anonymous: true}, nil
}

// authorize checks that p may serve every operator of ops: scope agent:serve, or
// agent:serve:<operator> for each.
func authorize(p gateway.Principal, anonymous bool, ops []*operatorSpec) error {
	if anonymous || slices.Contains(p.Scopes, ScopeServe) {
		return nil
	}
	for _, op := range ops {
		if !slices.Contains(p.Scopes, ScopeServePrefix+op.id) {
			return fmt.Errorf("the credential of %q does not allow serving operator %q (scope %s or %s%s)",
				p.Subject, op.id, ScopeServe, ScopeServePrefix, op.id)
		}
	}
	return nil
}

// inbound is what the receiving goroutine hands the connection.
type inbound struct {
	msg *agentlinkv1.ConnectRequest
	err error
}

// serve runs one connection: handshake, then messages until it ends.
func (h *Hub) serve(st stream, ad admission) error {
	ctx, cancel := context.WithCancel(st.Context())
	defer cancel()
	in := make(chan inbound)
	// The receiving goroutine ends once the handler has returned: gRPC then ends the
	// stream, and Recv fails.
	go func() {
		for {
			m, err := st.Recv()
			select {
			case in <- inbound{m, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	a, err := h.handshake(ctx, st, in, ad)
	if err != nil {
		return err
	}
	return h.run(ctx, st, in, a, ad.p)
}

// handshake reads the descriptor, checks it, negotiates the version, authorizes the
// operators and registers the agent, answering Welcome; or answers Reject and fails.
func (h *Hub) handshake(ctx context.Context, st stream, in <-chan inbound, ad admission) (*agent, error) {
	p, anonymous := ad.p, ad.anonymous
	timer := time.NewTimer(h.cfg.HandshakeTimeout)
	defer timer.Stop()
	var m *agentlinkv1.ConnectRequest
	select {
	case r := <-in:
		if r.err != nil {
			return nil, r.err
		}
		m = r.msg
	case <-timer.C:
		return nil, reject(st, codes.DeadlineExceeded, "no node descriptor within agents.handshake_timeout", h.cfg.Versions, nil)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	d := m.GetNodeDescriptor()
	if err := checkFrame(m, h.cfg.MaxFrameBytes); err != nil || d == nil {
		return nil, reject(st, codes.InvalidArgument, "the first message must be a node descriptor within agents.max_frame_bytes", h.cfg.Versions, nil)
	}
	ops, err := checkDescriptor(d, &h.cfg)
	if err != nil {
		return nil, reject(st, codes.InvalidArgument, err.Error(), h.cfg.Versions, d.GetProtocolVersions())
	}
	version, err := negotiate(h.cfg.Versions, d.GetProtocolVersions())
	if err != nil {
		return nil, reject(st, codes.FailedPrecondition, err.Error(), h.cfg.Versions, d.GetProtocolVersions())
	}
	if err := authorize(p, anonymous, ops); err != nil {
		return nil, reject(st, codes.PermissionDenied, err.Error(), h.cfg.Versions, d.GetProtocolVersions())
	}
	limit := h.cfg.MaxConcurrentTasks
	if n := int(d.GetMaxConcurrentTasks()); n > 0 && n < limit {
		limit = n
	}
	a := newAgent(d.GetAgentId(), limit)
	a.session, a.version, a.subject, a.desc, a.anonymous, a.trusted = h.newSession(), version, p.Subject, d, anonymous, ad.trusted
	a.ops = make(map[string]*operatorSpec, len(ops))
	for _, op := range ops {
		a.ops[op.id] = op
	}
	if err := h.register(a); err != nil {
		return nil, reject(st, codes.FailedPrecondition, err.Error(), h.cfg.Versions, d.GetProtocolVersions())
	}
	welcome := &agentlinkv1.Welcome{ProtocolVersion: version, HeartbeatIntervalMs: u32(h.cfg.HeartbeatInterval.Milliseconds()),
		MissedHeartbeats: u32(int64(h.cfg.MissedHeartbeats)), MaxFrameBytes: u32(int64(h.cfg.MaxFrameBytes)),
		MaxConcurrentTasks: u32(int64(limit)), SessionId: a.session}
	if err := st.Send(&agentlinkv1.ConnectResponse{Message: &agentlinkv1.ConnectResponse_Welcome{Welcome: welcome}}); err != nil {
		h.drop(a, "the welcome could not be sent")
		return nil, err
	}
	h.log.Info("agent connected", append(descriptorSummary(d), "session", a.session, "version", version, "subject", p.Subject,
		"trusted", ad.trusted)...)
	return a, nil
}

// reject answers Reject and returns the status the stream ends with.
func reject(st stream, code codes.Code, reason string, gatewayVersions, agentVersions []string) error {
	r := &agentlinkv1.Reject{Reason: reason, GatewayVersions: gatewayVersions, AgentVersions: agentVersions}
	_ = st.Send(&agentlinkv1.ConnectResponse{Message: &agentlinkv1.ConnectResponse_Reject{Reject: r}})
	return status.Error(code, "agent link: "+reason)
}

// run serves a registered agent until its connection ends: its messages in, the queued
// messages out (a goroutine of its own), heartbeats both ways.
func (h *Hub) run(ctx context.Context, st stream, in <-chan inbound, a *agent, p gateway.Principal) (err error) {
	var wg sync.WaitGroup
	sendErr := make(chan error, 1)
	wg.Go(func() { sendErr <- sendLoop(st, a) })
	reason, code := h.loop(ctx, in, a, p, sendErr)
	h.drop(a, reason) // fails its tasks, before the stream ends
	close(a.quit)
	wg.Wait()
	if code == codes.OK {
		return nil
	}
	_ = st.Send(&agentlinkv1.ConnectResponse{Message: &agentlinkv1.ConnectResponse_Disconnect{Disconnect: &agentlinkv1.Disconnect{Reason: reason}}})
	return status.Error(code, "agent link: "+reason)
}

// sendLoop sends what is queued for a until the connection ends.
func sendLoop(st stream, a *agent) error {
	for {
		select {
		case m := <-a.out:
			if err := st.Send(m); err != nil {
				return err
			}
		case <-a.quit:
			return nil
		}
	}
}

// loop handles a's messages until the connection ends, and returns why and the status
// it ends with (OK when the agent closed it).
func (h *Hub) loop(ctx context.Context, in <-chan inbound, a *agent, p gateway.Principal, sendErr <-chan error) (string, codes.Code) {
	k := time.Duration(h.cfg.MissedHeartbeats) * h.cfg.HeartbeatInterval
	silence := time.NewTimer(k)
	defer silence.Stop()
	beat := time.NewTicker(h.cfg.HeartbeatInterval)
	defer beat.Stop()
	var expiry <-chan time.Time
	switch {
	case h.watch != nil && !a.anonymous:
		stop := h.watch(p, func(err error) { a.kick("the agent's credential is no longer valid: " + err.Error()) })
		defer stop()
	case !p.Expires.IsZero():
		t := time.NewTimer(p.Expires.Sub(h.now()))
		defer t.Stop()
		expiry = t.C
	}
	bucket := newBucket(h.cfg.MaxMessagesPerSecond, h.now())
	var seq uint64
	last := h.now() // the agent's last message
	for {
		select {
		case r := <-in:
			if r.err != nil {
				if errors.Is(r.err, io.EOF) {
					return "the agent closed the stream", codes.OK
				}
				return "the stream failed: " + status.Convert(r.err).Message(), codes.Unavailable
			}
			silence.Reset(k)
			now := h.now()
			h.obs.AgentHeartbeatGap(now.Sub(last))
			last = now
			if !bucket.take(h.now()) {
				return fmt.Sprintf("more than %d messages per second (agents.max_messages_per_second)", h.cfg.MaxMessagesPerSecond), codes.ResourceExhausted
			}
			if err := h.handle(a, r.msg); err != nil {
				h.log.Warn("agent disconnected for a protocol breach", "agent", a.id, "session", a.session, "reason", err.Error())
				return err.Error(), codes.InvalidArgument
			}
		case <-beat.C:
			seq++
			hb := &agentlinkv1.ConnectResponse{Message: &agentlinkv1.ConnectResponse_Heartbeat{Heartbeat: &agentlinkv1.Heartbeat{Sequence: seq}}}
			select {
			case a.out <- hb:
			default: // the queue is full: the agent is not reading; its silence will tell
			}
		case <-silence.C:
			h.obs.AgentHeartbeatGap(h.now().Sub(last))
			h.log.Warn("agent silent; its tasks fail", "agent", a.id, "session", a.session, "missed_heartbeats", h.cfg.MissedHeartbeats)
			return fmt.Sprintf("no message for %d heartbeat intervals (%s)", h.cfg.MissedHeartbeats, k), codes.DeadlineExceeded
		case <-expiry:
			return "the agent's credential expired", codes.Unauthenticated
		case reason := <-a.kicked:
			return reason, codes.Unavailable
		case err := <-sendErr:
			if err == nil {
				err = errors.New("sender stopped")
			}
			return "sending failed: " + status.Convert(err).Message(), codes.Unavailable
		case <-ctx.Done():
			return "the agent's connection ended", codes.OK
		}
	}
}

// handle handles one message of a registered agent; an error is a breach.
func (h *Hub) handle(a *agent, m *agentlinkv1.ConnectRequest) error {
	if err := checkFrame(m, h.cfg.MaxFrameBytes); err != nil {
		return err
	}
	switch msg := m.GetMessage().(type) {
	case *agentlinkv1.ConnectRequest_Heartbeat:
		return nil
	case *agentlinkv1.ConnectRequest_Ack:
		return a.onAck(msg.Ack)
	case *agentlinkv1.ConnectRequest_Progress:
		return a.onProgress(msg.Progress)
	case *agentlinkv1.ConnectRequest_Result:
		return a.onResult(msg.Result)
	case *agentlinkv1.ConnectRequest_NodeDescriptor:
		return breach("a second node descriptor")
	default:
		return breach("an unknown message")
	}
}

// drop removes a from the hub and fails each of its outstanding tasks with AGENT_GONE.
func (h *Hub) drop(a *agent, reason string) {
	h.unregister(a)
	for _, t := range a.end(reason) {
		t.finish(nil, errGone(t, reason))
	}
	h.log.Info("agent disconnected", "agent", a.id, "session", a.session, "reason", reason)
}

// bucket is a token bucket of messages per second with a burst of the same size.
type bucket struct {
	rate, tokens float64
	last         time.Time
}

func newBucket(perSecond int, now time.Time) *bucket {
	return &bucket{rate: float64(perSecond), tokens: float64(perSecond), last: now}
}

func (b *bucket) take(now time.Time) bool {
	b.tokens = min(b.rate, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// String describes the hub for logs.
func (h *Hub) String() string {
	return "agentlink.Hub(" + strings.Join(h.cfg.Versions, ",") + ")"
}

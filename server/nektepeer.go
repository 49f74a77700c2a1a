package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/routing/nekte"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
	"github.com/gatehouse-dev/gatehouse/state"
)

// Replicas reach each other's persist: false NEKTE context envelopes through
// gatehouse.v1.PeerService on the internal listener (routing/nekte's peer.go tells the
// whole story). This file serves it, calls it, and wires both into the NEKTE service.

// maxPeerConns bounds the connections the peer client keeps open, one per replica
// address; past it the least recently used is closed.
const maxPeerConns = 64

// startPeers registers gatehouse.v1.PeerService on gs and lets the NEKTE service reach
// other replicas, when there can be any: NEKTE is on and the state store is shared (not
// the embedded backend the server opened itself). It advertises
// server.internal.advertise, or the address the internal listener is bound to unless
// that is an unspecified IP (0.0.0.0, ::), which other replicas cannot dial: then this
// replica's persist: false envelopes stay local, and a warning says so.
func (s *Server) startPeers(gs *grpc.Server, cfg InternalConfig) error {
	if s.nekte == nil || !s.sharedState() {
		return nil
	}
	gatehousev1.RegisterPeerServiceServer(gs, &peerService{svc: s.nekte.svc})
	advertise := cfg.Advertise
	if advertise == "" && s.internalLn != nil {
		advertise = reachable(s.internalLn.Addr())
		if advertise == "" {
			s.log.Warn("the internal listener is bound to an unspecified address and server.internal.advertise is not set: "+
				"persist: false NEKTE context envelopes stored here are not reachable from other replicas",
				"internal", s.internalLn.Addr().String())
		}
	}
	return s.nekte.svc.UsePeers(nekte.Peers{Advertise: advertise, Client: newPeerClient(cfg.MaxRecvBytes)})
}

// sharedState reports whether other replicas may share the state store: one the embedder
// passed in (Options.State), or a backend other than the embedded one.
func (s *Server) sharedState() bool {
	return s.opts.State != nil || (s.stateCfg.Backend != "" && s.stateCfg.Backend != state.BackendEmbedded)
}

// reachable returns addr as other replicas dial it: "" when it is not a TCP address or
// its IP is unspecified.
func reachable(addr net.Addr) string {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil || ap.Addr().IsUnspecified() {
		return ""
	}
	return ap.String()
}

// validateAdvertise checks server.internal.advertise (empty is valid: it defaults to the
// bound address).
func validateAdvertise(addr string) error {
	if addr == "" {
		return nil
	}
	return nekte.ValidateAdvertise(addr)
}

// peerService is gatehouse.v1.PeerService over the NEKTE service.
type peerService struct {
	gatehousev1.UnimplementedPeerServiceServer
	svc *nekte.Service
}

// GetEnvelope implements gatehouse.v1.PeerService/GetEnvelope.
func (p *peerService) GetEnvelope(ctx context.Context, req *gatehousev1.GetEnvelopeRequest) (*gatehousev1.GetEnvelopeResponse, error) {
	raw, err := p.svc.PeerEnvelope(ctx, peerRef(req.GetRef()))
	if err != nil {
		return nil, peerStatus(err)
	}
	return &gatehousev1.GetEnvelopeResponse{Envelope: raw}, nil
}

// RevokeEnvelope implements gatehouse.v1.PeerService/RevokeEnvelope.
func (p *peerService) RevokeEnvelope(ctx context.Context, req *gatehousev1.RevokeEnvelopeRequest) (*gatehousev1.RevokeEnvelopeResponse, error) {
	if err := p.svc.PeerRevoke(ctx, peerRef(req.GetRef())); err != nil {
		return nil, peerStatus(err)
	}
	return &gatehousev1.RevokeEnvelopeResponse{}, nil
}

// peerRef is the routing/nekte form of a reference.
func peerRef(r *gatehousev1.EnvelopeRef) nekte.PeerRef {
	ref := nekte.PeerRef{Owner: r.GetOwner(), Secret: r.GetSecret()}
	switch t := r.GetTarget().(type) {
	case *gatehousev1.EnvelopeRef_ContextId:
		ref.ID = t.ContextId
	case *gatehousev1.EnvelopeRef_TaskId:
		ref.ID, ref.Task = t.TaskId, true
	}
	return ref
}

// envelopeRef is the wire form of a reference.
func envelopeRef(ref nekte.PeerRef) *gatehousev1.EnvelopeRef {
	r := &gatehousev1.EnvelopeRef{Owner: ref.Owner, Secret: ref.Secret}
	if ref.Task {
		r.Target = &gatehousev1.EnvelopeRef_TaskId{TaskId: ref.ID}
	} else {
		r.Target = &gatehousev1.EnvelopeRef_ContextId{ContextId: ref.ID}
	}
	return r
}

// peerStatus maps the NEKTE service's answer to a status, with no detail beyond its kind.
func peerStatus(err error) error {
	switch {
	case errors.Is(err, nekte.ErrPeerNotFound):
		return status.Error(codes.NotFound, "no such envelope")
	case errors.Is(err, nekte.ErrPeerRef):
		return status.Error(codes.InvalidArgument, nekte.ErrPeerRef.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	default:
		return status.Error(codes.Unavailable, "the envelope store is unavailable")
	}
}

// errPeerClientClosed answers calls after the peer client is closed.
var errPeerClientClosed = errors.New("the peer client is closed")

// peerClient is the NEKTE service's nekte.PeerClient: gatehouse.v1.PeerService calls over
// plaintext gRPC (as the internal listener serves), one connection per replica address,
// at most maxPeerConns of them, answers bounded to maxBytes.
type peerClient struct {
	maxBytes int

	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	order  []string // addresses, least recently used first
	closed bool
}

var _ nekte.PeerClient = (*peerClient)(nil)

// newPeerClient returns a client whose messages are at most maxBytes each way.
func newPeerClient(maxBytes int) *peerClient {
	return &peerClient{maxBytes: maxBytes, conns: map[string]*grpc.ClientConn{}}
}

// GetEnvelope implements nekte.PeerClient.
func (c *peerClient) GetEnvelope(ctx context.Context, addr string, ref nekte.PeerRef) ([]byte, error) {
	conn, err := c.conn(addr)
	if err != nil {
		return nil, &nekte.PeerError{Op: "get", Addr: addr, Err: err}
	}
	res, err := gatehousev1.NewPeerServiceClient(conn).GetEnvelope(ctx, &gatehousev1.GetEnvelopeRequest{Ref: envelopeRef(ref)})
	if err != nil {
		return nil, peerError("get", addr, err)
	}
	return res.GetEnvelope(), nil
}

// RevokeEnvelope implements nekte.PeerClient.
func (c *peerClient) RevokeEnvelope(ctx context.Context, addr string, ref nekte.PeerRef) error {
	conn, err := c.conn(addr)
	if err != nil {
		return &nekte.PeerError{Op: "revoke", Addr: addr, Err: err}
	}
	if _, err := gatehousev1.NewPeerServiceClient(conn).RevokeEnvelope(ctx, &gatehousev1.RevokeEnvelopeRequest{Ref: envelopeRef(ref)}); err != nil {
		return peerError("revoke", addr, err)
	}
	return nil
}

// peerError maps a failed call: NOT_FOUND is nekte.ErrPeerNotFound, anything else a
// *nekte.PeerError.
func peerError(op, addr string, err error) error {
	if status.Code(err) == codes.NotFound {
		return nekte.ErrPeerNotFound
	}
	return &nekte.PeerError{Op: op, Addr: addr, Err: err}
}

// conn returns the connection to addr, opening it (lazily: grpc connects on the first
// call) when there is none, and closing the least recently used past maxPeerConns.
func (c *peerClient) conn(addr string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errPeerClientClosed
	}
	if cc, ok := c.conns[addr]; ok {
		c.touch(addr)
		return cc, nil
	}
	cc, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(c.maxBytes), grpc.MaxCallSendMsgSize(c.maxBytes)))
	if err != nil {
		return nil, fmt.Errorf("dialling %s: %w", addr, err)
	}
	if len(c.order) >= maxPeerConns {
		oldest := c.order[0]
		c.order = c.order[1:]
		_ = c.conns[oldest].Close() // calls in flight on it fail: their replica counts as gone
		delete(c.conns, oldest)
	}
	c.conns[addr] = cc
	c.order = append(c.order, addr)
	return cc, nil
}

// touch moves addr to the most recently used end of order. Under mu.
func (c *peerClient) touch(addr string) {
	for i, a := range c.order {
		if a == addr {
			c.order = append(append(c.order[:i:i], c.order[i+1:]...), addr)
			return
		}
	}
}

// Close closes every connection; later calls fail.
func (c *peerClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for _, cc := range c.conns {
		errs = append(errs, cc.Close())
	}
	c.conns, c.order = nil, nil
	return errors.Join(errs...)
}

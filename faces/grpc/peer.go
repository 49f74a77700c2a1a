package grpcface

import (
	"context"
	"errors"
	"net"
	"net/netip"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/routing/nekte"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// Replicas reach each other's persist: false NEKTE context envelopes through
// gatehouse.v1.PeerService on the internal listener (routing/nekte's peer.go tells the
// whole story). This file serves it and wires it, with the client (peerclient.go), into
// the NEKTE service.

// startPeers registers gatehouse.v1.PeerService and lets the NEKTE service reach other
// replicas, when there can be any (p.Peers is set: NEKTE is on and the state store is
// shared). It advertises server.internal.advertise, or the address the internal listener
// is bound to unless that is an unspecified IP (0.0.0.0, ::), which other replicas cannot
// dial: then this replica's persist: false envelopes stay local, and a warning says so.
func (f *Face) startPeers(p Params) error {
	if p.Peers == nil {
		return nil
	}
	gatehousev1.RegisterPeerServiceServer(f.gs, &peerService{svc: p.Peers})
	advertise := p.Config.Advertise
	if advertise == "" && p.Addr != nil {
		advertise = reachable(p.Addr)
		if advertise == "" {
			f.log.Warn("the internal listener is bound to an unspecified address and server.internal.advertise is not set: "+
				"persist: false NEKTE context envelopes stored here are not reachable from other replicas",
				"internal", p.Addr.String())
		}
	}
	return p.Peers.UsePeers(nekte.Peers{Advertise: advertise, Client: newPeerClient(p.Config.MaxRecvBytes, p.PeerTLS)})
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

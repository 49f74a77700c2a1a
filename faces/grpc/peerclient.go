package grpcface

import (
	"context"
	"crypto/tls"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/routing/peerconn"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// peerClient is the NEKTE service's nekte.PeerClient: gatehouse.v1.PeerService calls over
// the connections to the other replicas' internal listeners (peerconn.Pool: TLS with the
// listener's certificate or plaintext, at most peerconn.MaxConns of them, messages bounded
// to maxBytes).
type peerClient struct{ pool *peerconn.Pool }

var _ nekte.PeerClient = (*peerClient)(nil)

// newPeerClient returns a client whose messages are at most maxBytes each way, dialling
// with conf (nil: plaintext).
func newPeerClient(maxBytes int, conf *tls.Config) *peerClient {
	return &peerClient{pool: peerconn.New(maxBytes, conf)}
}

// GetEnvelope implements nekte.PeerClient.
func (c *peerClient) GetEnvelope(ctx context.Context, addr string, ref nekte.PeerRef) ([]byte, error) {
	conn, err := c.pool.Conn(addr)
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
	conn, err := c.pool.Conn(addr)
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

// Close closes every connection; later calls fail.
func (c *peerClient) Close() error { return c.pool.Close() }

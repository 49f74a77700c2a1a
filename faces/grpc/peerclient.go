package grpcface

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/routing/nekte"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// maxPeerConns bounds the connections the peer client keeps open, one per replica
// address; past it the least recently used is closed.
const maxPeerConns = 64

// errPeerClientClosed answers calls after the peer client is closed.
var errPeerClientClosed = errors.New("the peer client is closed")

// peerClient is the NEKTE service's nekte.PeerClient: gatehouse.v1.PeerService calls over
// gRPC as the internal listener serves it (TLS with the listener's certificate, or
// plaintext), one connection per replica address, at most maxPeerConns of them, answers
// bounded to maxBytes.
type peerClient struct {
	maxBytes int
	creds    grpccreds.TransportCredentials

	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	order  []string // addresses, least recently used first
	closed bool
}

var _ nekte.PeerClient = (*peerClient)(nil)

// newPeerClient returns a client whose messages are at most maxBytes each way, dialling
// with conf (nil: plaintext).
func newPeerClient(maxBytes int, conf *tls.Config) *peerClient {
	creds := insecure.NewCredentials()
	if conf != nil {
		creds = grpccreds.NewTLS(conf)
	}
	return &peerClient{maxBytes: maxBytes, creds: creds, conns: map[string]*grpc.ClientConn{}}
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
		grpc.WithTransportCredentials(c.creds),
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

package agentlink

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// maxPeerConns bounds the connections a GRPCPeerClient keeps open, one per replica
// address; past it one is closed (calls in flight on it fail with AGENT_GONE).
const maxPeerConns = 64

// errPeerClientClosed answers calls after the client is closed.
var errPeerClientClosed = errors.New("agentlink: the peer client is closed")

// GRPCPeerClient is the PeerClient that calls gatehouse.v1.AgentPeerService over gRPC as
// the internal listener serves it (TLS with conf, or plaintext), one connection per
// replica address, messages bounded to maxBytes each way.
type GRPCPeerClient struct {
	maxBytes int
	creds    grpccreds.TransportCredentials

	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	closed bool
}

// NewGRPCPeerClient returns a client dialling with conf (nil: plaintext), messages at most
// maxBytes each way.
func NewGRPCPeerClient(maxBytes int, conf *tls.Config) *GRPCPeerClient {
	creds := insecure.NewCredentials()
	if conf != nil {
		creds = grpccreds.NewTLS(conf)
	}
	return &GRPCPeerClient{maxBytes: maxBytes, creds: creds, conns: map[string]*grpc.ClientConn{}}
}

// DispatchTask implements PeerClient; the call carries ctx's trace context.
func (c *GRPCPeerClient) DispatchTask(ctx context.Context, addr string, req *gatehousev1.DispatchTaskRequest) (*gatehousev1.DispatchTaskResponse, error) {
	conn, err := c.conn(addr)
	if err != nil {
		return nil, err
	}
	return gatehousev1.NewAgentPeerServiceClient(conn).DispatchTask(traceMetadata(ctx), req)
}

func (c *GRPCPeerClient) conn(addr string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errPeerClientClosed
	}
	if cc, ok := c.conns[addr]; ok {
		return cc, nil
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(c.creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(c.maxBytes), grpc.MaxCallSendMsgSize(c.maxBytes)))
	if err != nil {
		return nil, fmt.Errorf("dialling %s: %w", addr, err)
	}
	if len(c.conns) >= maxPeerConns {
		for a, old := range c.conns { // any one: replicas come and go
			_ = old.Close()
			delete(c.conns, a)
			break
		}
	}
	c.conns[addr] = cc
	return cc, nil
}

// Close closes every connection; later calls fail.
func (c *GRPCPeerClient) Close() error {
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
	c.conns = nil
	return errors.Join(errs...)
}

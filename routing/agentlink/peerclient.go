package agentlink

import (
	"context"
	"crypto/tls"

	"github.com/gatehouse-dev/gatehouse/routing/peerconn"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// GRPCPeerClient is the PeerClient that calls gatehouse.v1.AgentPeerService over the
// connections to the other replicas' internal listeners (peerconn.Pool: TLS with conf or
// plaintext, at most peerconn.MaxConns of them — past it the least recently used is
// closed and calls in flight on it fail with AGENT_GONE —, messages bounded to maxBytes).
type GRPCPeerClient struct{ pool *peerconn.Pool }

// NewGRPCPeerClient returns a client dialling with conf (nil: plaintext), messages at most
// maxBytes each way.
func NewGRPCPeerClient(maxBytes int, conf *tls.Config) *GRPCPeerClient {
	return &GRPCPeerClient{pool: peerconn.New(maxBytes, conf)}
}

// DispatchTask implements PeerClient; the call carries ctx's trace context.
func (c *GRPCPeerClient) DispatchTask(ctx context.Context, addr string, req *gatehousev1.DispatchTaskRequest) (*gatehousev1.DispatchTaskResponse, error) {
	conn, err := c.pool.Conn(addr)
	if err != nil {
		return nil, err
	}
	return gatehousev1.NewAgentPeerServiceClient(conn).DispatchTask(traceMetadata(ctx), req)
}

// Close closes every connection; later calls fail.
func (c *GRPCPeerClient) Close() error { return c.pool.Close() }

package agentlink

import (
	"context"
	"crypto/tls"
	"errors"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

// DispatchTaskStream implements PeerClient; the call carries ctx's trace context.
func (c *GRPCPeerClient) DispatchTaskStream(ctx context.Context, addr string, req *gatehousev1.DispatchTaskStreamRequest,
	progress func(*gatehousev1.ForwardedProgress)) (*gatehousev1.DispatchTaskResponse, error) {
	conn, err := c.pool.Conn(addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream when the answer has come (or the call failed)
	stream, err := gatehousev1.NewAgentPeerServiceClient(conn).DispatchTaskStream(traceMetadata(ctx), req)
	if err != nil {
		return nil, err
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, status.Error(codes.Unavailable, "the replica ended the stream without an answer")
			}
			return nil, err
		}
		if res := ev.GetResult(); res != nil {
			return res, nil
		}
		if p := ev.GetProgress(); p != nil && progress != nil {
			progress(p)
		}
	}
}

// Close closes every connection; later calls fail.
func (c *GRPCPeerClient) Close() error { return c.pool.Close() }

package grpcface

import (
	"context"
	"net/netip"
	"strings"

	"google.golang.org/grpc"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// gatewayService is gatehouse.v1.GatewayService: the generic invocation path for internal
// gRPC callers, through the same pipeline as the boundary.
type gatewayService struct {
	gatehousev1.UnimplementedGatewayServiceServer
	gw Gateway
}

// Invoke implements gatehouse.v1.GatewayService/Invoke; a streamed result is collected
// into an array.
func (g *gatewayService) Invoke(ctx context.Context, req *gatehousev1.InvokeRequest) (*gatehousev1.InvokeResponse, error) {
	out := runInternal(ctx, g.gw, req.GetMethod(), req.GetParams(), nil)
	if out.Err != nil {
		return nil, toStatus(out.Err, out.TraceID)
	}
	return &gatehousev1.InvokeResponse{Result: out.Result}, nil
}

// InvokeStream implements gatehouse.v1.GatewayService/InvokeStream: each message of a
// streamed result is one response; a result that is not streamed is one response.
func (g *gatewayService) InvokeStream(req *gatehousev1.InvokeStreamRequest, stream grpc.ServerStreamingServer[gatehousev1.InvokeStreamResponse]) error {
	send := func(msg []byte) error { return stream.Send(&gatehousev1.InvokeStreamResponse{Message: msg}) }
	out := runInternal(stream.Context(), g.gw, req.GetMethod(), req.GetParams(), send)
	if out.Err != nil {
		return toStatus(out.Err, out.TraceID)
	}
	if !out.Streamed {
		return send(out.Result)
	}
	return nil
}

// runInternal runs a method for an internal gRPC caller: it authenticates the caller from
// metadata, decodes method and params as a JSON-RPC request (strictly, as at the boundary)
// and runs it through the pipeline of the configuration in force under the caller's gRPC
// deadline.
func runInternal(ctx context.Context, gw Gateway, method string, params []byte, send func([]byte) error) faces.Invoked {
	rt := gw.Acquire()
	defer rt.Release()
	principal, err := rt.Authenticator().Authenticate(ctx, credentials(ctx))
	if err != nil {
		return faces.Invoked{Err: gateway.AsError(err), TraceID: observability.TraceIDOf(ctx)}
	}
	who := faces.Caller{Principal: principal, Zone: gateway.ZoneInternal, Protocol: gateway.ProtocolGRPC}
	return rt.Pipeline().RunAs(ctx, who, method, params, send)
}

// credentials extracts the caller's credentials from gRPC metadata and the peer.
func credentials(ctx context.Context) gateway.Credentials {
	creds := gateway.Credentials{Zone: gateway.ZoneInternal}
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("authorization"); len(v) > 0 {
		if len(v[0]) > 7 && strings.EqualFold(v[0][:7], "bearer ") {
			creds.Bearer = strings.TrimSpace(v[0][7:])
		} else {
			creds.Bearer = v[0]
		}
	}
	if v := md.Get("x-api-key"); len(v) > 0 {
		creds.APIKey = v[0]
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		creds.Remote, _ = netip.ParseAddrPort(p.Addr.String())
		if info, ok := p.AuthInfo.(grpccreds.TLSInfo); ok && len(info.State.VerifiedChains) > 0 {
			creds.ClientCert = info.State.VerifiedChains[0][0]
		}
	}
	return creds
}

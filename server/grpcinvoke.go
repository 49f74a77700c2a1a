package server

import (
	"context"
	"encoding/json"
	"maps"
	"net/netip"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/faces"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/schemas"
	gatehousev1 "github.com/gatehouse-dev/gatehouse/schemas/gen/gatehouse/v1"
)

// gatewayService is gatehouse.v1.GatewayService: the generic invocation path for internal
// gRPC callers, through the same pipeline as the boundary.
type gatewayService struct {
	gatehousev1.UnimplementedGatewayServiceServer
	s *Server
}

// Invoke implements gatehouse.v1.GatewayService/Invoke; a streamed result is collected
// into an array.
func (g *gatewayService) Invoke(ctx context.Context, req *gatehousev1.InvokeRequest) (*gatehousev1.InvokeResponse, error) {
	out := g.s.runInternal(ctx, req.GetMethod(), req.GetParams(), nil)
	if out.err != nil {
		return nil, toStatus(out.err, out.traceID)
	}
	return &gatehousev1.InvokeResponse{Result: out.result}, nil
}

// InvokeStream implements gatehouse.v1.GatewayService/InvokeStream: each message of a
// streamed result is one response; a result that is not streamed is one response.
func (g *gatewayService) InvokeStream(req *gatehousev1.InvokeStreamRequest, stream grpc.ServerStreamingServer[gatehousev1.InvokeStreamResponse]) error {
	send := func(msg []byte) error { return stream.Send(&gatehousev1.InvokeStreamResponse{Message: msg}) }
	out := g.s.runInternal(stream.Context(), req.GetMethod(), req.GetParams(), send)
	if out.err != nil {
		return toStatus(out.err, out.traceID)
	}
	if !out.streamed {
		return send(out.result)
	}
	return nil
}

// invokeOutcome is the outcome of a call made on behalf of a caller a face authenticated
// (runAs): exactly one of res and err is set.
type invokeOutcome struct {
	// res is the call's result; result is its value. A capability call's streamed result
	// is in res.Stream, unread; any other call's stream has been delivered through send
	// (streamed is then true) or collected into result.
	res      *gateway.Result
	result   []byte
	streamed bool
	err      *gateway.Error
	traceID  string
}

// runInternal runs a method for an internal gRPC caller: it authenticates the caller from
// metadata, decodes method and params as a JSON-RPC request (strictly, as at the boundary)
// and runs it through the pipeline under the caller's gRPC deadline.
func (s *Server) runInternal(ctx context.Context, method string, params []byte, send func([]byte) error) invokeOutcome {
	rt := s.acquire()
	defer rt.release()
	principal, err := rt.auth.Authenticate(ctx, grpcCredentials(ctx))
	if err != nil {
		return invokeOutcome{err: gateway.AsError(err), traceID: observability.TraceIDOf(ctx)}
	}
	return rt.runAs(ctx, principal, gateway.ZoneInternal, gateway.ProtocolGRPC, method, params, send)
}

// runAs runs one method for a caller already authenticated by its face, decoding method
// and params strictly as a JSON-RPC request, under ctx's deadline.
func (rt *runtime) runAs(ctx context.Context, principal gateway.Principal, zone gateway.TrustZone, proto gateway.Protocol,
	method string, params []byte, send func([]byte) error) invokeOutcome {
	return rt.runAsCaller(ctx, asCaller{principal: principal, zone: zone, protocol: proto}, method, params, send)
}

// asCaller is who a call made on a caller's behalf runs as.
type asCaller struct {
	principal gateway.Principal
	zone      gateway.TrustZone
	protocol  gateway.Protocol
	// traceID is the trace the call is recorded under; empty starts a new trace.
	traceID string
	// capability is the NEKTE capability the call runs (gateway.Call.Capability), empty for
	// a method called directly. Its params are the capability's input, which the call gets
	// as it is: the reserved members (deadline_ms, depends_on) belong to JSON-RPC requests,
	// not to a capability's input. Its streamed result is handed back unread.
	capability string
}

// runAsCaller is runAs for any caller, a capability's included (faces.Pipeline.RunAs).
func (rt *runtime) runAsCaller(ctx context.Context, who asCaller, method string, params []byte, send func([]byte) error) invokeOutcome {
	o := rt.pipe.RunAs(ctx, faces.Caller{Principal: who.principal, Zone: who.zone, Protocol: who.protocol, TraceID: who.traceID,
		Capability: who.capability}, method, params, send)
	return invokeOutcome{res: o.Res, result: o.Result, streamed: o.Streamed, err: o.Err, traceID: o.TraceID}
}

// grpcCredentials extracts the caller's credentials from gRPC metadata and the peer.
func grpcCredentials(ctx context.Context) gateway.Credentials {
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
	}
	return creds
}

// toStatus maps a gateway error to a gRPC status through the error table; the JSON-RPC code
// and error.data travel in an ErrorInfo detail.
func toStatus(err *gateway.Error, traceID string) error {
	kind := schemas.KindOf(err.Code())
	data := make(map[string]any, len(err.Data())+1)
	maps.Copy(data, err.Data())
	data["trace_id"] = traceID
	raw, _ := json.Marshal(data)
	st := status.New(kind.GRPC, err.Message())
	if withInfo, e := st.WithDetails(&errdetails.ErrorInfo{
		Reason:   kind.Name,
		Domain:   "gatehouse",
		Metadata: map[string]string{"jsonrpc_code": strconv.Itoa(int(err.Code())), "data": string(raw)},
	}); e == nil {
		st = withInfo
	}
	return st.Err()
}

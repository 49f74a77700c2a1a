package demo

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	calculatorv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/calculator/v1"
)

// Limits of the calculator's streaming methods, so a demo backend cannot be made to run
// forever.
const (
	MaxCount         = 10_000
	MaxCountInterval = 10 * time.Second
)

// Calculator implements calculator.v1.CalculatorService.
type Calculator struct {
	calculatorv1.UnimplementedCalculatorServiceServer
}

var _ calculatorv1.CalculatorServiceServer = (*Calculator)(nil)

// NewCalculatorServer returns a gRPC server with the calculator, health and reflection registered.
func NewCalculatorServer(opts ...grpc.ServerOption) *grpc.Server {
	gs := grpc.NewServer(opts...)
	calculatorv1.RegisterCalculatorServiceServer(gs, &Calculator{})
	hs := health.NewServer()
	hs.SetServingStatus(calculatorv1.CalculatorService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	return gs
}

// ServeCalculator runs the calculator on ln until ctx is done, then stops gracefully.
func ServeCalculator(ctx context.Context, ln net.Listener) error {
	gs := NewCalculatorServer()
	errc := make(chan error, 1)
	go func() { errc <- gs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		gs.GracefulStop()
		return <-errc // nil after GracefulStop
	}
}

// StartCalculator serves the calculator on a new listener at addr ("127.0.0.1:0" picks a free port)
// and returns the bound address and a function that stops it gracefully.
func StartCalculator(addr string) (string, func() error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeCalculator(ctx, ln) }()
	return ln.Addr().String(), func() error { cancel(); return <-done }, nil
}

// Subtract returns minuend − subtrahend.
func (*Calculator) Subtract(_ context.Context, r *calculatorv1.SubtractRequest) (*calculatorv1.SubtractResponse, error) {
	return &calculatorv1.SubtractResponse{Result: r.GetMinuend() - r.GetSubtrahend()}, finite(r.GetMinuend() - r.GetSubtrahend())
}

// Sum returns the sum of the values.
func (*Calculator) Sum(_ context.Context, r *calculatorv1.SumRequest) (*calculatorv1.SumResponse, error) {
	var s float64
	for _, v := range r.GetValues() {
		s += v
	}
	return &calculatorv1.SumResponse{Result: s}, finite(s)
}

// Update accepts values and does nothing with them (the specification's notification).
func (*Calculator) Update(context.Context, *calculatorv1.UpdateRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// NotifyHello accepts a value and does nothing with it.
func (*Calculator) NotifyHello(context.Context, *calculatorv1.NotifyHelloRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// NotifySum accepts values and does nothing with them.
func (*Calculator) NotifySum(context.Context, *calculatorv1.NotifySumRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// GetData returns ["hello", 5].
func (*Calculator) GetData(context.Context, *calculatorv1.GetDataRequest) (*calculatorv1.GetDataResponse, error) {
	return &calculatorv1.GetDataResponse{Result: []*structpb.Value{structpb.NewStringValue("hello"), structpb.NewNumberValue(5)}}, nil
}

// Count streams the integers from..to (inclusive), one every interval.
func (*Calculator) Count(r *calculatorv1.CountRequest, stream grpc.ServerStreamingServer[calculatorv1.CountResponse]) error {
	from, to := r.GetFrom(), r.GetTo()
	interval := r.GetInterval().AsDuration()
	switch {
	case to < from:
		return status.Error(codes.InvalidArgument, "to must not be less than from")
	case to-from >= MaxCount:
		return status.Errorf(codes.InvalidArgument, "at most %d values per call", MaxCount)
	case interval < 0 || interval > MaxCountInterval:
		return status.Errorf(codes.InvalidArgument, "interval must be between 0 and %s", MaxCountInterval)
	}
	for v := from; v <= to; v++ {
		if v > from && interval > 0 {
			select {
			case <-stream.Context().Done():
				return status.FromContextError(stream.Context().Err()).Err()
			case <-time.After(interval):
			}
		}
		if err := stream.Send(&calculatorv1.CountResponse{Value: v}); err != nil {
			return err
		}
	}
	return nil
}

// SumStream sums the values the client streams.
func (*Calculator) SumStream(stream grpc.ClientStreamingServer[calculatorv1.SumStreamRequest, calculatorv1.SumStreamResponse]) error {
	var sum float64
	var n uint64
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&calculatorv1.SumStreamResponse{Result: sum, Count: n})
		}
		if err != nil {
			return err
		}
		sum += r.GetValue()
		n++
	}
}

// Accumulate answers each delta with the running total.
func (*Calculator) Accumulate(stream grpc.BidiStreamingServer[calculatorv1.AccumulateRequest, calculatorv1.AccumulateResponse]) error {
	var total int64
	var n uint64
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		total += r.GetDelta()
		n++
		if err := stream.Send(&calculatorv1.AccumulateResponse{Total: total, Count: n}); err != nil {
			return err
		}
	}
}

func finite(v float64) error {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return status.Error(codes.OutOfRange, "result out of range")
	}
	return nil
}

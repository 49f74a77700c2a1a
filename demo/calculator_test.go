package demo_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/gatehouse-dev/gatehouse/demo"
	calculatorv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/calculator/v1"
)

func dial(t *testing.T) calculatorv1.CalculatorServiceClient {
	t.Helper()
	addr, stop, err := demo.StartCalculator("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return calculatorv1.NewCalculatorServiceClient(conn)
}

func TestUnary(t *testing.T) {
	c := dial(t)
	ctx := context.Background()
	if r, err := c.Subtract(ctx, &calculatorv1.SubtractRequest{Minuend: 42, Subtrahend: 23}); err != nil || r.GetResult() != 19 {
		t.Fatalf("subtract: %v %v", r, err)
	}
	if r, err := c.Sum(ctx, &calculatorv1.SumRequest{Values: []float64{1, 2, 4}}); err != nil || r.GetResult() != 7 {
		t.Fatalf("sum: %v %v", r, err)
	}
	r, err := c.GetData(ctx, &calculatorv1.GetDataRequest{})
	if err != nil || len(r.GetResult()) != 2 || r.GetResult()[0].GetStringValue() != "hello" || r.GetResult()[1].GetNumberValue() != 5 {
		t.Fatalf("get_data: %v %v", r, err)
	}
	if _, err := c.Sum(ctx, &calculatorv1.SumRequest{Values: []float64{1e308, 1e308}}); status.Code(err) != codes.OutOfRange {
		t.Fatalf("overflow: %v", err)
	}
}

func TestStreaming(t *testing.T) {
	c := dial(t)
	ctx := context.Background()
	t.Run("server streaming", func(t *testing.T) {
		s, err := c.Count(ctx, &calculatorv1.CountRequest{From: 3, To: 6})
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for {
			r, err := s.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r.GetValue())
		}
		if len(got) != 4 || got[0] != 3 || got[3] != 6 {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("count limits", func(t *testing.T) {
		s, err := c.Count(ctx, &calculatorv1.CountRequest{From: 0, To: demo.MaxCount})
		if err == nil {
			_, err = s.Recv()
		}
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("over the limit: %v", err)
		}
	})
	t.Run("client streaming", func(t *testing.T) {
		s, err := c.SumStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []float64{1, 2, 4} {
			if err := s.Send(&calculatorv1.SumStreamRequest{Value: v}); err != nil {
				t.Fatal(err)
			}
		}
		r, err := s.CloseAndRecv()
		if err != nil || r.GetResult() != 7 || r.GetCount() != 3 {
			t.Fatalf("got %v %v", r, err)
		}
	})
	t.Run("bidi", func(t *testing.T) {
		s, err := c.Accumulate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range []int64{5, -2, 10} {
			if err := s.Send(&calculatorv1.AccumulateRequest{Delta: d}); err != nil {
				t.Fatal(err)
			}
			r, err := s.Recv()
			want := []int64{5, 3, 13}[i]
			if err != nil || r.GetTotal() != want {
				t.Fatalf("step %d: %v %v", i, r, err)
			}
		}
		_ = s.CloseSend()
		if _, err := s.Recv(); !errors.Is(err, io.EOF) {
			t.Fatalf("after CloseSend: %v", err)
		}
	})
}

package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func TestAsError(t *testing.T) {
	secret := errors.New("dial tcp 10.0.0.7:5432: password=hunter2")
	tests := []struct {
		name string
		err  error
		code schemas.Code
	}{
		{"coded error passes through", gateway.NewError(schemas.CodeRateLimited), schemas.CodeRateLimited},
		{"wrapped coded error is found", fmt.Errorf("calling: %w", gateway.NewError(schemas.CodeToolFailed)), schemas.CodeToolFailed},
		{"deadline", context.DeadlineExceeded, schemas.CodeDeadlineExceeded},
		{"wrapped deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), schemas.CodeDeadlineExceeded},
		{"cancel", context.Canceled, schemas.CodeCancelled},
		{"anything else is internal", secret, schemas.CodeInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := gateway.AsError(tt.err)
			if got.Code() != tt.code {
				t.Fatalf("code %d, want %d", got.Code(), tt.code)
			}
			if strings.Contains(got.Message(), "hunter2") || strings.Contains(fmt.Sprint(got.Data()), "hunter2") {
				t.Fatal("internal detail leaked into the client-visible parts")
			}
		})
	}
	if gateway.AsError(nil) != nil {
		t.Fatal("AsError(nil) != nil")
	}
	if !errors.Is(gateway.AsError(secret), secret) {
		t.Fatal("the cause is not kept for errors.Is")
	}
}

func TestErrorWithCopies(t *testing.T) {
	base := gateway.NewError(schemas.CodeInvalidParams)
	a := base.With("reason", "a")
	b := a.With("field", "x")
	if len(base.Data()) != 0 || len(a.Data()) != 1 || len(b.Data()) != 2 {
		t.Fatalf("With mutated its receiver: %v %v %v", base.Data(), a.Data(), b.Data())
	}
	if !errors.Is(a, base) || errors.Is(gateway.NewError(schemas.CodeInternal), base) {
		t.Fatal("errors.Is compares codes")
	}
}

func TestChainOrderAndNil(t *testing.T) {
	var order []string
	mw := func(name string) gateway.Middleware {
		return func(next gateway.Handler) gateway.Handler {
			return func(ctx context.Context, c *gateway.Call) (*gateway.Result, error) {
				order = append(order, name)
				return next(ctx, c)
			}
		}
	}
	h := gateway.Chain(func(context.Context, *gateway.Call) (*gateway.Result, error) {
		order = append(order, "end")
		return gateway.NewResult(nil), nil
	}, mw("a"), nil, mw("b"))
	if _, err := h(context.Background(), &gateway.Call{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ","); got != "a,b,end" {
		t.Fatalf("order %s", got)
	}
}

package gateway_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func TestNotSent(t *testing.T) {
	refused := errors.New("connect: connection refused")
	unavailable := gateway.NewError(schemas.CodeUnavailable).With("backend", "calc")
	tests := []struct {
		name      string
		err       error
		notSent   bool
		keepCause bool
	}{
		{"an unmarked error", unavailable.Wrap(refused), false, true},
		{"marked, without a cause", unavailable.NotSent(), true, false},
		{"marked, its cause kept", unavailable.Wrap(refused).NotSent(), true, true},
		{"marked and wrapped again by a caller", fmt.Errorf("calling: %w", unavailable.Wrap(refused).NotSent()), true, true},
		{"Wrap after NotSent replaces the mark", unavailable.NotSent().Wrap(refused), false, true},
		{"the mark survives With", unavailable.NotSent().With("reason", "x"), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(tt.err, gateway.ErrNotSent); got != tt.notSent {
				t.Errorf("errors.Is(err, ErrNotSent) = %v, want %v", got, tt.notSent)
			}
			if got := errors.Is(tt.err, refused); got != tt.keepCause {
				t.Errorf("errors.Is(err, cause) = %v, want %v", got, tt.keepCause)
			}
			e := gateway.AsError(tt.err)
			if e.Code() != schemas.CodeUnavailable || e.Data()["backend"] != "calc" {
				t.Errorf("the mark changed what the client sees: %v %v", e.Code(), e.Data())
			}
			if strings.Contains(e.Message(), "not sent") {
				t.Errorf("the mark leaked into the message: %q", e.Message())
			}
		})
	}
	if unavailable.Unwrap() != nil {
		t.Error("NotSent modified the error it was called on")
	}
}

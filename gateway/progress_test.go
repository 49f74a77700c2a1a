package gateway_test

import (
	"context"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

func TestProgressContext(t *testing.T) {
	var got []gateway.Progress
	sink := func(p gateway.Progress) { got = append(got, p) }
	total := 2.0
	tests := []struct {
		name     string
		ctx      context.Context //nolint:containedctx // each case is a context to look into
		wantSink bool
	}{
		{"absent", context.Background(), false},
		{"set", gateway.WithProgress(context.Background(), sink), true},
		{"nil sink leaves the context as it is", gateway.WithProgress(context.Background(), nil), false},
		{"inner sink wins", gateway.WithProgress(gateway.WithProgress(context.Background(), func(gateway.Progress) {
			t.Error("the outer sink was called")
		}), sink), true},
		{"survives derived contexts", func() context.Context {
			ctx, cancel := context.WithCancel(gateway.WithProgress(context.Background(), sink))
			t.Cleanup(cancel)
			return context.WithoutCancel(ctx)
		}(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			fn := gateway.ProgressFrom(tt.ctx)
			if (fn != nil) != tt.wantSink {
				t.Fatalf("ProgressFrom: sink present %v, want %v", fn != nil, tt.wantSink)
			}
			if fn == nil {
				return
			}
			fn(gateway.Progress{Progress: 1, Total: &total, Message: "half"})
			if len(got) != 1 || got[0].Progress != 1 || *got[0].Total != 2 || got[0].Message != "half" {
				t.Fatalf("sink got %+v, want one report {1, 2, half}", got)
			}
		})
	}
}

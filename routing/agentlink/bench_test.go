package agentlink_test

import (
	"context"
	"testing"

	"github.com/gatehouse-dev/gatehouse/routing/agentlink"
)

// BenchmarkDispatch measures one task through the hub to an echoing agent over loopback
// gRPC and back (dispatch, ack, result), with 1 and 4 agents serving in parallel.
func BenchmarkDispatch(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run(map[int]string{1: "agents=1", 4: "agents=4"}[n], func(b *testing.B) {
			cfg := fastConfig()
			cfg.MaxConcurrentTasks = 64
			cfg.MaxMessagesPerSecond = 1 << 30
			h, addr := startHubB(b, cfg)
			for i := range n {
				a := connect(b, addr, "all", descriptor("a"+string(rune('0'+i))))
				a.welcome()
				a.serveEcho()
			}
			task := agentlink.Task{Operator: "echo", Input: echoInput("x")}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := h.Dispatch(context.Background(), task); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

package server

import (
	"fmt"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/demo"
)

// BenchmarkBatchPerMember measures a member call of a batch against a single call: one op
// is one call, so a batch of k counts k ops and ns/op, B/op and allocs/op are per member
// call. The demo target runs in process (the gateway's own cost dominates); the gRPC
// backend adds a hop per member.
func BenchmarkBatchPerMember(b *testing.B) {
	b.Run("demo", func(b *testing.B) {
		benchBatchSizes(b, benchGatewayYAML(b, "batch: {max_size: 100}\nrouting: {demo: {}}\n"))
	})
	b.Run("grpc", func(b *testing.B) {
		addr, stop, err := demo.StartCalculator("127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = stop() })
		url := benchGatewayYAML(b, fmt.Sprintf(`
batch: {max_size: 100}
routing:
  grpc:
    - name: calculator
      address: %q
      descriptors: {reflection: true}
      methods: {subtract: calculator.v1.CalculatorService/Subtract}
      unwrap: {subtract: result}
`, addr))
		waitBackend(b, url)
		benchBatchSizes(b, url)
	})
}

func benchBatchSizes(b *testing.B, url string) {
	for _, k := range []int{1, 10, 100} {
		parts := make([]string, k)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":%d}`, i)
		}
		body, name := "["+strings.Join(parts, ",")+"]", fmt.Sprintf("batch%d", k)
		if k == 1 {
			body, name = subtractBody, "single"
		}
		b.Run(name, func(b *testing.B) { benchMembers(b, url, body, k) })
	}
}

// benchMembers posts body, a batch of k members (a single call when k is 1), and reports
// ns/op, B/op and allocs/op per member sent, and cpu-ns/op: the process's CPU time (the
// gateway and its clients) per member, less sensitive than ns/op to other load.
func benchMembers(b *testing.B, url, body string, k int) {
	client := benchClient()
	var sent atomic.Int64 // members sent: b.N rounded up to whole batches
	var before, after goruntime.MemStats
	b.SetParallelism(benchParallelism)
	goruntime.ReadMemStats(&before)
	cpu := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := post(client, url, body, `"result":19`); err != nil {
				b.Error(err)
				return
			}
			sent.Add(int64(k))
			for j := 1; j < k && pb.Next(); j++ { // the batch's other members' ops
			}
		}
	})
	b.StopTimer()
	cpu = processCPU() - cpu
	goruntime.ReadMemStats(&after)
	n := float64(sent.Load())
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/op")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/op")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/op")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/op")
}

// processCPU is the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

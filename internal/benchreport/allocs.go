package main

import (
	"fmt"
	"strings"
)

// stageAllocsBench is the benchmark that runs the small call through the pipeline in
// process with the stages added one at a time; each sub-benchmark (one per stage) reports
// the allocations its stage adds per call (stage-allocs) and the stage's budget
// (budget-allocs).
const stageAllocsBench = "server.BenchmarkStageAllocs/"

// wholePathAllocs are the benchmarks whose allocations per call are the whole path's: the
// small JSON-RPC→gRPC call end to end (every side in one process) and a direct gRPC call
// of the same method, for scale.
var wholePathAllocs = []struct{ title, bench string }{
	{"JSON-RPC→gRPC small call through the gateway, whole process (client, gateway, gRPC client, backend)", grpcE2E + "/gateway"},
	{"the same call from a grpc-go client directly, whole process (client, backend)", grpcE2E + "/direct"},
}

// allocSection writes the allocation budget of the small call: what each stage adds per
// call against its budget, then the whole path's allocations per call; nothing when
// neither was measured.
func allocSection(res *results) string {
	var stages []string
	for _, k := range res.order {
		if strings.HasPrefix(k, stageAllocsBench) {
			stages = append(stages, k)
		}
	}
	var whole []string
	for _, w := range wholePathAllocs {
		if v := res.samples[w.bench]["allocs/op"]; len(v) > 0 {
			whole = append(whole, fmt.Sprintf("| %s | %.0f |\n", w.title, median(v)))
		}
	}
	if len(stages) == 0 && len(whole) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Allocations per small call\n\n")
	if len(stages) > 0 {
		b.WriteString("The small call (`subtract`, decoded, run through the pipeline to an in-process target, its response\n")
		b.WriteString("encoded) with the pipeline's stages added one at a time; `TestStageAllocBudgets` fails when a stage\n")
		b.WriteString("exceeds its budget.\n\n| stage | allocations it adds per call | budget | pipeline so far, allocations per call |\n|---|---:|---:|---:|\n")
		for _, k := range stages {
			s := res.samples[k]
			added, budget := median(s["stage-allocs"]), median(s["budget-allocs"])
			verdict := ""
			if len(s["budget-allocs"]) > 0 && added > budget {
				verdict = " (over budget)"
			}
			fmt.Fprintf(&b, "| %s | %.1f%s | %.0f | %.0f |\n", strings.TrimPrefix(k, stageAllocsBench), added, verdict, budget, median(s["allocs/op"]))
		}
	}
	if len(whole) > 0 {
		b.WriteString("\n| whole path | allocations per call |\n|---|---:|\n")
		for _, row := range whole {
			b.WriteString(row)
		}
	}
	return b.String()
}

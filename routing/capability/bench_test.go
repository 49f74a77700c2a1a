package capability_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
)

// hundred returns a registry of 100 MCP-like capabilities over 4 categories.
func hundred(b *testing.B) *capability.Registry {
	b.Helper()
	caps := make([]capability.Capability, 100)
	for i := range caps {
		caps[i] = capability.Capability{
			ID: fmt.Sprintf("tool_%03d", i), Description: fmt.Sprintf("Does task number %d with the given path and options.", i),
			Input:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer"}},"required":["path"]}`),
			Method: fmt.Sprintf("mcp.tool_%03d", i), Kind: capability.KindMCPTool, Source: fmt.Sprintf("up%d", i%4),
		}
	}
	return newRegistry(b, capability.Config{}, caps...)
}

func BenchmarkDiscover(b *testing.B) {
	r := hundred(b)
	cases := []struct {
		name string
		p    nekte.DiscoverParams
		o    capability.DiscoverOptions
	}{
		{"L0/100", nekte.DiscoverParams{Level: 0}, capability.DiscoverOptions{}},
		{"L0-compact/100", nekte.DiscoverParams{Level: 0}, capability.DiscoverOptions{Shape: capability.ShapeCompact}},
		{"L1/100", nekte.DiscoverParams{Level: 1}, capability.DiscoverOptions{}},
		{"L2/100", nekte.DiscoverParams{Level: 2}, capability.DiscoverOptions{}},
		{"query/100", nekte.DiscoverParams{Filter: &nekte.DiscoverFilter{Query: "task path options 42"}}, capability.DiscoverOptions{}},
		{"page20/100", nekte.DiscoverParams{}, capability.DiscoverOptions{Limit: 20}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.DiscoverWith(c.p, c.o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInvoke measures what Invoke adds around the Invoker (lookup, hash check, input
// validation, levels, budget resolution with token counting, cost hint), against calling
// the same Invoker directly.
func BenchmarkInvoke(b *testing.B) {
	r := hundred(b)
	c, _ := r.Lookup("tool_042")
	result := []byte(`{"content":[{"type":"text","text":"Done: 42 items processed in /data/reports, nothing left to do."}]}`)
	inv := invokerFunc(func(context.Context, capability.Capability, json.RawMessage) (*gateway.Result, error) {
		return gateway.NewResult(result), nil
	})
	p := nekte.InvokeParams{Cap: "tool_042", H: c.Hash, In: json.RawMessage(`{"path":"/data/reports","n":3}`)}
	ctx := context.Background()
	b.Run("registry", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Invoke(ctx, inv, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := inv.Invoke(ctx, c, p.In); err != nil {
				b.Fatal(err)
			}
		}
	})
}

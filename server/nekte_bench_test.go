package server

import "testing"

// NEKTE calls through the gateway over a real loopback HTTP/1.1 connection, beside the
// JSON-RPC call they stand for on the same server: nekte.invoke of the demo capability
// subtract (with its hash and a full budget) and nekte.discover at level 0 of the demo
// catalog, each ÷ calling subtract directly. The figures of interest are subtract ns/op ÷
// nekte ns/op (NEKTE calls/s as a fraction of plain calls/s).

const (
	nekteInvokeBody   = `{"jsonrpc":"2.0","method":"nekte.invoke","params":{"cap":"subtract","h":"0350b67e","in":{"minuend":42,"subtrahend":23},"budget":{"max_tokens":50,"detail_level":"full"}},"id":1}`
	nekteDiscoverBody = `{"jsonrpc":"2.0","method":"nekte.discover","params":{"level":0},"id":1}`
	subtractNamedBody = `{"jsonrpc":"2.0","method":"subtract","params":{"minuend":42,"subtrahend":23},"id":1}`
)

func BenchmarkNekte(b *testing.B) {
	url := benchGatewayYAML(b, "routing: {demo: {}}\nnekte: {}\n")
	b.Run("invoke", func(b *testing.B) { benchPost(b, url, nekteInvokeBody, `"out":19`) })
	b.Run("discover_l0", func(b *testing.B) { benchPost(b, url, nekteDiscoverBody, `"h":"0350b67e"`) })
	b.Run("subtract", func(b *testing.B) { benchPost(b, url, subtractNamedBody, `"result":19`) })
}

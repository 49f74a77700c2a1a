package jsonrpc_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func batchBody(n int, elem string) []byte {
	return []byte("[" + strings.TrimSuffix(strings.Repeat(elem+",", n), ",") + "]")
}

func TestMaxBatch(t *testing.T) {
	const req = `{"jsonrpc":"2.0","method":"m","id":1}`
	lim := jsonrpc.Limits{MaxBatch: 3}
	tests := []struct {
		name  string
		body  []byte
		code  schemas.Code
		limit string
	}{
		{"at the limit", batchBody(3, req), 0, ""},
		{"one over", batchBody(4, req), schemas.CodeInvalidRequest, jsonrpc.LimitMaxBatch},
		{"non-objects count too", batchBody(4, "1"), schemas.CodeInvalidRequest, jsonrpc.LimitMaxBatch},
		{"broken JSON past the limit is still a parse error", []byte(`[` + req + `,` + req + `,` + req + `,` + req + `,{"x"]`), schemas.CodeParseError, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := jsonrpc.Decode(tt.body, lim)
			if tt.code == 0 {
				if err != nil || len(p.Members) != 3 {
					t.Fatalf("got %v, %d members", err, len(p.Members))
				}
				return
			}
			if err == nil || err.Code != tt.code || err.Limit != tt.limit {
				t.Fatalf("got %+v, want code %d limit %q", err, tt.code, tt.limit)
			}
			if tt.limit != "" && err.Max != 3 {
				t.Fatalf("max %d", err.Max)
			}
		})
	}
	if _, err := jsonrpc.Decode(batchBody(jsonrpc.DefaultMaxBatch+1, "1"), jsonrpc.Limits{}); err == nil || err.Limit != jsonrpc.LimitMaxBatch {
		t.Fatalf("zero MaxBatch must mean DefaultMaxBatch: %+v", err)
	}
}

// TestOversizedBatchCostsNoMemoryPerMember guards against a small body of many tiny
// elements turning into a large allocation.
func TestOversizedBatchCostsNoMemoryPerMember(t *testing.T) {
	body := batchBody(200_000, "1") // ~400 KB of "1,"
	lim := jsonrpc.Limits{MaxBatch: 10}
	allocBytes := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = jsonrpc.Decode(body, lim)
		}
	}).AllocedBytesPerOp()
	if allocBytes > 64<<10 {
		t.Fatalf("decoding an oversized batch allocated %d bytes", allocBytes)
	}
}

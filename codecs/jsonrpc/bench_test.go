package jsonrpc_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/jsonrpc"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

// Benchmark workloads: a typical MCP-style tool call, a batch of ten of them, and one with
// both reserved params members.
var (
	benchSingle   = []byte(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"search","arguments":{"query":"gateway latency p99","limit":10,"filters":{"lang":"en","after":"2025-01-01"}}},"id":42}`)
	benchBatch    = []byte(`[` + strings.TrimSuffix(strings.Repeat(string(benchSingle)+`,`, 10), `,`) + `]`)
	benchReserved = []byte(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"search","depends_on":["a",7],"arguments":{"query":"gateway latency p99","limit":10},"deadline_ms":1767225600000},"id":"b"}`)
	benchResult   = []byte(`{"content":[{"type":"text","text":"42 results"}],"isError":false}`)
	benchData     = []byte(`{"reason":"backend timed out","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}`)
)

func BenchmarkDecode(b *testing.B) {
	for _, bm := range []struct {
		name string
		body []byte
	}{
		{"single", benchSingle},
		{"batch10", benchBatch},
		{"reserved", benchReserved},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bm.body)))
			for b.Loop() {
				p, err := jsonrpc.Decode(bm.body, jsonrpc.Limits{})
				if err != nil || p.Members[0].Err != nil {
					b.Fatal(err, p.Members[0].Err)
				}
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	id := jsonrpc.NumberID(42)
	buf := make([]byte, 0, 512)
	b.Run("result", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(jsonrpc.AppendResult(nil, id, benchResult))))
		for b.Loop() {
			buf = jsonrpc.AppendResult(buf[:0], id, benchResult)
		}
	})
	b.Run("error", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(jsonrpc.AppendError(nil, id, schemas.CodeDeadlineExceeded, "Deadline exceeded", benchData))))
		for b.Loop() {
			buf = jsonrpc.AppendError(buf[:0], id, schemas.CodeDeadlineExceeded, "Deadline exceeded", benchData)
		}
	})
}

// stdRequest is the lenient encoding/json baseline: case-insensitive names, duplicates
// and unknown members accepted, no limits.
type stdRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	ID      json.RawMessage `json:"id"`
}

// stdReserved reads the reserved params members; the baseline does not remove them.
type stdReserved struct {
	DependsOn  []json.RawMessage `json:"depends_on"`
	DeadlineMs int64             `json:"deadline_ms"`
}

func BenchmarkStdlibDecode(b *testing.B) {
	b.Run("single", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchSingle)))
		for b.Loop() {
			var r stdRequest
			if err := json.Unmarshal(benchSingle, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("batch10", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchBatch)))
		for b.Loop() {
			var rs []stdRequest
			if err := json.Unmarshal(benchBatch, &rs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reserved", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchReserved)))
		for b.Loop() {
			var r stdRequest
			var res stdReserved
			if err := json.Unmarshal(benchReserved, &r); err != nil {
				b.Fatal(err)
			}
			if err := json.Unmarshal(r.Params, &res); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// stdResult and stdError are the encoding/json baseline for responses.
type (
	stdResult struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		ID      json.RawMessage `json:"id"`
	}
	stdErrorBody struct {
		Code    schemas.Code    `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	stdError struct {
		JSONRPC string          `json:"jsonrpc"`
		Error   stdErrorBody    `json:"error"`
		ID      json.RawMessage `json:"id"`
	}
)

func BenchmarkStdlibEncode(b *testing.B) {
	id := json.RawMessage(`42`)
	b.Run("result", func(b *testing.B) {
		b.ReportAllocs()
		out, _ := json.Marshal(stdResult{"2.0", benchResult, id})
		b.SetBytes(int64(len(out)))
		for b.Loop() {
			if _, err := json.Marshal(stdResult{"2.0", benchResult, id}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("error", func(b *testing.B) {
		b.ReportAllocs()
		v := stdError{"2.0", stdErrorBody{schemas.CodeDeadlineExceeded, "Deadline exceeded", benchData}, id}
		out, _ := json.Marshal(v)
		b.SetBytes(int64(len(out)))
		for b.Loop() {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package msgpack_test

import (
	"encoding/json"
	"strings"
	"testing"

	vmsgpack "github.com/vmihailenco/msgpack/v5"

	"github.com/gatehouse-dev/gatehouse/codecs/msgpack"
)

// benchDocs are a small JSON-RPC request and a larger response with a mix of values.
var benchDocs = []struct{ name, json string }{
	{"request", `{"jsonrpc":"2.0","method":"nekte.invoke","params":{"cap":"sentiment","h":"a1b2c3d4","in":{"text":"The product is excellent but shipping was slow"},"budget":{"max_tokens":100,"detail_level":"compact"}},"id":1}`},
	{"response", `{"jsonrpc":"2.0","id":1,"result":{"items":[` + strings.TrimSuffix(strings.Repeat(`{"id":12345,"name":"review text with some words","score":0.8125,"tags":["a","bb","ccc"],"ok":true,"ref":null},`, 40), ",") + `]}}`},
}

func BenchmarkToJSON(b *testing.B) {
	for _, d := range benchDocs {
		src, err := msgpack.FromJSON([]byte(d.json))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(d.name+"/gatehouse", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := msgpack.ToJSON(src, msgpack.Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(d.name+"/baseline", func(b *testing.B) {
			// The naive way: decode into interface values, then encoding/json.
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				var v any
				if err := vmsgpack.Unmarshal(src, &v); err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkFromJSON(b *testing.B) {
	for _, d := range benchDocs {
		src := []byte(d.json)
		b.Run(d.name+"/gatehouse", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := msgpack.FromJSON(src); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(d.name+"/baseline", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				var v any
				if err := json.Unmarshal(src, &v); err != nil {
					b.Fatal(err)
				}
				if _, err := vmsgpack.Marshal(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package nekte_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/canonical"
	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

// hashVector is one entry of testdata/hash-vectors.json, a copy of the published NEKTE
// version hash vectors.
type hashVector struct {
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	Output       json.RawMessage `json:"output"`
	ExpectedHash string          `json:"expected_hash"`
}

func TestHashVectors(t *testing.T) {
	data, err := os.ReadFile("testdata/hash-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []hashVector
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) < 7 {
		t.Fatalf("only %d vectors", len(vectors))
	}
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			for _, n := range []int{0, nekte.HashLen} {
				if got, err := nekte.Hash(v.Input, v.Output, n); err != nil || got != v.ExpectedHash {
					t.Errorf("Hash(len %d) = %q, %v; want %q", n, got, err, v.ExpectedHash)
				}
			}
			long, err := nekte.Hash(v.Input, v.Output, nekte.HashLenLong)
			if err != nil || len(long) != nekte.HashLenLong || !strings.HasPrefix(long, v.ExpectedHash) {
				t.Errorf("Hash(len 16) = %q, %v; want an extension of %q", long, err, v.ExpectedHash)
			}
		})
	}
}

func TestHash(t *testing.T) {
	in := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)
	out := json.RawMessage(`{"type":"object","properties":{"score":{"type":"number"}}}`)
	base, err := nekte.Hash(in, out, 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		in, out   string
		wantEqual bool
	}{
		{"whitespace and key order do not matter", ` { "properties" : {"text":{"type":"string"}}, "type":"object" } `, string(out), true},
		{"number spelling does not matter", string(in), `{"type":"object","properties":{"score":{"type":"number","maximum":1.0}}}`, false},
		{"input change", `{"type":"object","properties":{"text":{"type":"number"}}}`, string(out), false},
		{"output change", string(in), `{"type":"object"}`, false},
		{"swapped schemas", string(out), string(in), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nekte.Hash(json.RawMessage(tt.in), json.RawMessage(tt.out), 0)
			if err != nil {
				t.Fatal(err)
			}
			if (got == base) != tt.wantEqual {
				t.Errorf("Hash = %s, base %s, want equal %v", got, base, tt.wantEqual)
			}
		})
	}
	a, _ := nekte.Hash(json.RawMessage(`{"maximum":1.0}`), nil, 0)
	b, _ := nekte.Hash(json.RawMessage(`{"maximum":1}`), json.RawMessage(`null`), 0)
	if a != b {
		t.Errorf("1.0 and 1, nil and null hash differently: %s %s", a, b)
	}
}

func TestHashErrors(t *testing.T) {
	if _, err := nekte.Hash(nil, nil, 12); !errors.Is(err, nekte.ErrHashLength) {
		t.Errorf("length 12: %v", err)
	}
	var se *canonical.SyntaxError
	// A schema cannot smuggle members beside itself into the hashed document.
	if _, err := nekte.Hash(json.RawMessage(`{},"output":{}`), json.RawMessage(`{}`), 0); !errors.As(err, &se) {
		t.Errorf("injected input: %v", err)
	}
	if _, err := nekte.Hash(json.RawMessage(`{}`), json.RawMessage(`{`), 0); !errors.As(err, &se) {
		t.Errorf("broken output: %v", err)
	}
}

func BenchmarkHash(b *testing.B) {
	in := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","maxLength":10000},"lang":{"type":"string","default":"auto"}},"required":["text"]}`)
	out := json.RawMessage(`{"type":"object","properties":{"label":{"type":"string","enum":["positive","negative","neutral"]},"score":{"type":"number","minimum":0,"maximum":1}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := nekte.Hash(in, out, 0); err != nil {
			b.Fatal(err)
		}
	}
}

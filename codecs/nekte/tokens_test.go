package nekte_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

func TestTokens(t *testing.T) {
	// Counts as the reference tokenizer (js-tiktoken with the cl100k_base ranks) reports them.
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{"tiktoken is great!", 6},
		{`{"id":"sentiment","cat":"nlp","h":"a1b2c3d4"}`, 22},
		{"<|endoftext|>", 7}, // special tokens count as ordinary text
		{strings.Repeat(" ", 1000), 9},
		{"日本語のテキスト", 8},
		{"The quick brown fox jumps over the lazy dog.", 10},
	}
	for _, tt := range tests {
		if got := nekte.Tokens([]byte(tt.text)); got != tt.want {
			t.Errorf("Tokens(%.30q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

func TestTokensConcurrent(t *testing.T) {
	const text = "The quick brown fox jumps over the lazy dog."
	want := nekte.Tokens([]byte(text))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if got := nekte.Tokens([]byte(text)); got != want {
					t.Errorf("Tokens = %d, want %d", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkTokens(b *testing.B) {
	for _, size := range []struct {
		name string
		text string
	}{
		{"short", `{"label":"positive","score":0.95}`},
		{"4KiB", strings.Repeat(`{"id":"sentiment","cat":"nlp","h":"a1b2c3d4","desc":"Analyzes text sentiment."},`, 60)[:4096]},
	} {
		b.Run(size.name, func(b *testing.B) {
			text := []byte(size.text)
			nekte.Tokens(text) // load the tables outside the timing
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				nekte.Tokens(text)
			}
		})
	}
}

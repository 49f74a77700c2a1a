package nekte

import (
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"

	"github.com/pkoukk/tiktoken-go"
)

// cl100kPattern is tiktoken's pre-tokenizer pattern for cl100k_base, which bpe
// implements by hand.
const cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// reference is tiktoken-go's encoder over the same ranks: the implementation bpe must
// agree with.
var reference = sync.OnceValue(func() *tiktoken.Tiktoken {
	b, err := loadTokenizer()
	if err != nil {
		panic(err)
	}
	core, err := tiktoken.NewCoreBPE(b.ranks, map[string]int{}, cl100kPattern)
	if err != nil {
		panic(err)
	}
	return tiktoken.NewTiktoken(core, &tiktoken.Encoding{Name: "cl100k_base", PatStr: cl100kPattern, MergeableRanks: b.ranks}, map[string]any{})
})

// referenceEnds returns the end offsets of tiktoken-go's tokens of text (in the text with
// invalid UTF-8 repaired, as both read it).
func referenceEnds(text string) []int {
	ref := reference()
	var ends []int
	end := 0
	for _, tok := range ref.EncodeOrdinary(text) {
		end += len(ref.Decode([]int{tok}))
		ends = append(ends, end)
	}
	return ends
}

// tokenizerCases reach every alternative of the pattern and the merges.
var tokenizerCases = []string{
	"", "a", "hello world", "tiktoken is great!", "I'm here, they're there; we've, he'll, she'd, it's, don't",
	"I'M HERE THEY'RE WE'VE HE'LL SHE'D IT'S DON'T", "'sup 'tis 'rex 'x '", "rock'n'roll''s",
	"12345678901234567890 1 12 123 1234", "3.14159 -42 1e10 ½ ² Ⅻ ٣٤٥",
	"  leading and trailing  ", "tab\there\tand\ttabs", "line\nbreaks\r\nand\rreturns\n\n\n",
	"spaces   before\n   and after\n  \n  x", " \n \n ", "\t\n", "   ", "a   ", "a \t b",
	"!!! ??? ... --- *** ''' \"\"\"", " !x !", "(parens) [brackets] {braces}", "x!\n\ny",
	`{"id":"sentiment","cat":"nlp","h":"a1b2c3d4"}`, "<|endoftext|> <|fim_prefix|>",
	"日本語のテキスト", "中文分词测试", "한국어 텍스트", "Привет, мир!", "مرحبا بالعالم", "שלום עולם",
	"emoji 😀👍🏽 🇫🇷 family 👨‍👩‍👧", "é è ê ë ñ ç ß ſ ﬁ", "K Å ǅ", "\u00a0nbsp\u2003em\u3000ideographic\u2028sep\u0085nel",
	"\x00\x01\x1f control", "invalid \xff\xfe bytes \xc3", "\xe2\x82", "mixed123abc456", "abc'DEF'ghi",
	strings.Repeat("a", 300), strings.Repeat(" ", 300) + "x", strings.Repeat("=", 200), strings.Repeat("🙂", 50),
	strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20),
}

func TestBPEMatchesTiktoken(t *testing.T) {
	b, err := loadTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range tokenizerCases {
		want := referenceEnds(text)
		var got []int
		b.walk([]byte(text), func(end int) bool { got = append(got, end); return true })
		if !equalInts(got, want) {
			t.Errorf("%q:\n got  %v\n want %v", text, got, want)
		}
	}
}

func TestTokenEndsLimit(t *testing.T) {
	text := []byte("one two three four five")
	if got := tokenEnds(text, 3); !equalInts(got, []int{3, 7, 13}) {
		t.Errorf("tokenEnds = %v", got)
	}
	if got := tokenEnds(text, 100); len(got) != 5 || got[4] != len(text) {
		t.Errorf("tokenEnds = %v", got)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzBPE checks the hand-written tokenizer against tiktoken-go token for token.
func FuzzBPE(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, s := range fuzzseed.Strings(f, 512, fuzzseed.MCPResult, fuzzseed.NEKTERequest) {
		f.Add(s)
	}
	for _, text := range tokenizerCases {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		b, err := loadTokenizer()
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		b.walk([]byte(text), func(end int) bool { got = append(got, end); return true })
		if want := referenceEnds(text); !equalInts(got, want) {
			t.Fatalf("%q (valid UTF-8 %v):\n got  %v\n want %v", text, utf8.ValidString(text), got, want)
		}
	})
}

func BenchmarkTiktokenGo(b *testing.B) {
	text := strings.Repeat(`{"id":"sentiment","cat":"nlp","h":"a1b2c3d4","desc":"Analyzes text sentiment."},`, 60)[:4096]
	ref := reference()
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		ref.EncodeOrdinary(text)
	}
}

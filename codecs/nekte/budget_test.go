package nekte_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
)

func TestBudgetEffective(t *testing.T) {
	tests := []struct {
		name string
		in   *nekte.Budget
		want nekte.Budget
	}{
		{"none", nil, nekte.Budget{MaxTokens: 500, DetailLevel: nekte.Compact}},
		{"given", &nekte.Budget{MaxTokens: 70, DetailLevel: nekte.Full}, nekte.Budget{MaxTokens: 70, DetailLevel: nekte.Full}},
		{"full default", &nekte.Budget{DetailLevel: nekte.Full}, nekte.Budget{MaxTokens: 4096, DetailLevel: nekte.Full}},
		{"compact default", &nekte.Budget{DetailLevel: nekte.Compact}, nekte.Budget{MaxTokens: 500, DetailLevel: nekte.Compact}},
		{"minimal default", &nekte.Budget{DetailLevel: nekte.Minimal}, nekte.Budget{MaxTokens: 50, DetailLevel: nekte.Minimal}},
		{"no level", &nekte.Budget{MaxTokens: 9}, nekte.Budget{MaxTokens: 9, DetailLevel: nekte.Compact}},
		{"unknown level", &nekte.Budget{DetailLevel: "huge"}, nekte.Budget{MaxTokens: 500, DetailLevel: nekte.Compact}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.Effective(); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	all := nekte.Levels{
		Minimal: "ok: 3 reviews",
		Compact: json.RawMessage(`{"summary":"` + strings.Repeat("good ", 40) + `"}`),
		Full:    json.RawMessage(`{"reviews":["` + strings.Repeat("a long review text ", 100) + `"]}`),
	}
	tm := nekte.Tokens([]byte(`"ok: 3 reviews"`))
	tc, tf := nekte.Tokens(all.Compact), nekte.Tokens(all.Full)
	if tm >= tc || tc >= tf || tf > 4096 {
		t.Fatalf("token counts %d %d %d are not ordered", tm, tc, tf)
	}
	without := func(drop string) nekte.Levels {
		lv := all
		if strings.Contains(drop, "m") {
			lv.Minimal = ""
		}
		if strings.Contains(drop, "c") {
			lv.Compact = nil
		}
		if strings.Contains(drop, "f") {
			lv.Full = nil
		}
		return lv
	}
	budget := func(n int, l nekte.DetailLevel) *nekte.Budget { return &nekte.Budget{MaxTokens: n, DetailLevel: l} }
	tests := []struct {
		name   string
		levels nekte.Levels
		budget *nekte.Budget
		want   nekte.DetailLevel
	}{
		{"no budget: compact at 500", all, nil, nekte.Compact},
		{"full fits exactly", all, budget(tf, nekte.Full), nekte.Full},
		{"full one token short: compact", all, budget(tf-1, nekte.Full), nekte.Compact},
		{"compact does not fit: minimal", all, budget(tc-1, nekte.Full), nekte.Minimal},
		{"nothing fits: minimal", all, budget(tm-1, nekte.Full), nekte.Minimal},
		{"compact never goes up to full", all, budget(100000, nekte.Compact), nekte.Compact},
		{"minimal never goes up", all, budget(100000, nekte.Minimal), nekte.Minimal},
		{"full absent: compact", without("f"), budget(100000, nekte.Full), nekte.Compact},
		{"compact absent: minimal", without("c"), budget(100000, nekte.Compact), nekte.Minimal},
		{"full too big, compact absent: minimal", without("c"), budget(tf-1, nekte.Full), nekte.Minimal},
		{"minimal asked but absent: compact", without("m"), budget(100000, nekte.Minimal), nekte.Compact},
		{"nothing fits, minimal absent: compact", without("m"), budget(1, nekte.Full), nekte.Compact},
		{"nothing fits, only full: full", without("mc"), budget(1, nekte.Compact), nekte.Full},
		{"full default 4096", all, &nekte.Budget{DetailLevel: nekte.Full}, nekte.Full},
		{"minimal default 50", all, &nekte.Budget{DetailLevel: nekte.Minimal}, nekte.Minimal},
		{"level defaults to compact", all, &nekte.Budget{MaxTokens: tc}, nekte.Compact},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, level, tokens := nekte.Resolve(tt.levels, tt.budget)
			if level != tt.want {
				t.Fatalf("level = %s, want %s", level, tt.want)
			}
			want := map[nekte.DetailLevel]string{nekte.Minimal: `"` + all.Minimal + `"`, nekte.Compact: string(all.Compact), nekte.Full: string(all.Full)}[level]
			if string(out) != want {
				t.Errorf("out = %s, want %s", out, want)
			}
			if tokens != nekte.Tokens(out) {
				t.Errorf("tokens = %d, want %d", tokens, nekte.Tokens(out))
			}
		})
	}
}

func TestResolveNothing(t *testing.T) {
	out, level, tokens := nekte.Resolve(nekte.Levels{}, nil)
	if string(out) != "null" || level != nekte.Full || tokens != 1 {
		t.Errorf("Resolve(no levels) = %s, %s, %d", out, level, tokens)
	}
}

func TestResolveHugeFull(t *testing.T) {
	// A full form far larger than any budget is passed over without being tokenized.
	lv := nekte.Levels{Minimal: "big", Full: json.RawMessage(`"` + strings.Repeat("x", 4<<20) + `"`)}
	if _, level, _ := nekte.Resolve(lv, &nekte.Budget{MaxTokens: 100, DetailLevel: nekte.Full}); level != nekte.Minimal {
		t.Errorf("level = %s", level)
	}
}

func BenchmarkResolve(b *testing.B) {
	lv, err := nekte.JSONLevels(json.RawMessage(`{"label":"positive","score":0.95,"reviews":["` + strings.Repeat("great product, fast shipping. ", 60) + `"]}`))
	if err != nil {
		b.Fatal(err)
	}
	nekte.Tokens(nil)
	b.ReportAllocs()
	for b.Loop() {
		nekte.Resolve(lv, &nekte.Budget{MaxTokens: 200, DetailLevel: nekte.Full})
	}
}

func BenchmarkJSONLevels(b *testing.B) {
	v := json.RawMessage(`{"label":"positive","score":0.95,"reviews":["` + strings.Repeat("great product, fast shipping. ", 60) + `"],"ids":[1,2,3,4,5,6,7,8,9,10,11,12,13,14]}`)
	nekte.Tokens(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		if _, err := nekte.JSONLevels(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMCPLevels(b *testing.B) {
	v := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("great product, fast shipping. ", 60) + `"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}`)
	nekte.Tokens(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		if _, err := nekte.MCPLevels(v); err != nil {
			b.Fatal(err)
		}
	}
}

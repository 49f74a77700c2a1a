package capability

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fuzzseed"
)

func TestTerms(t *testing.T) {
	tests := []struct{ in, want string }{
		{"getTinyImage", "get tiny image"},
		{"read_text_file", "read text file"},
		{"HTTPServer v2", "http server v2"},
		{"everything__trigger-long-running-operation", "everything trigger long running operation"},
		{"Lists the files and directories of a path.", "list file directory path"},
		{"processes boxes queries echoes uses", "process box query echo us"},
		{"Ünïcode Straße", "ünïcode straße"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(terms(tt.in), " "); got != tt.want {
			t.Errorf("terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		s     string
		limit int
		mark  string
		want  string
	}{
		{"short", 10, "…", "short"},
		{"abcdefghij", 5, "…", "abcd…"},
		{"ab  cdefgh", 5, "…", "ab…"},
		{"😀😀😀", 4, "", "😀😀"}, // two UTF-16 units each
		{"😀😀😀", 4, "…", "😀…"},
		{"a😀", 2, "", "a"},
	}
	for _, tt := range tests {
		if got := clip(tt.s, tt.limit, tt.mark); got != tt.want || utf16Len(got) > tt.limit {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.s, tt.limit, got, tt.want)
		}
	}
}

func TestSearchScores(t *testing.T) {
	entries := []*entry{
		{Capability: Capability{ID: "read_file", Description: "Read a file."}},
		{Capability: Capability{ID: "write_file", Description: "Write a file."}},
		{Capability: Capability{ID: "search", Description: strings.Repeat("filler words here ", 20) + "file"}},
	}
	ix := newIndex(entries)
	hits := ix.search("read file", nil, 0, 0)
	if len(hits) != 3 || hits[0].doc != 0 {
		t.Fatalf("hits %+v", hits)
	}
	if s := hits[0].score; math.Abs(s-1) > 1e-9 {
		t.Fatalf("read_file matches the whole query: score %v", s)
	}
	for _, h := range hits {
		if h.score < 0 || h.score > 1 {
			t.Fatalf("score %v out of [0, 1]", h.score)
		}
	}
	if hits[1].doc != 1 || hits[2].doc != 2 || hits[2].score >= hits[1].score {
		t.Fatalf("a long description must rank below: %+v", hits)
	}
	if got := ix.search("read file", nil, 1, 0); len(got) != 1 {
		t.Fatalf("top_k: %+v", got)
	}
	if got := ix.search("read file", nil, 0, 0.9); len(got) != 1 {
		t.Fatalf("threshold: %+v", got)
	}
	if got := ix.search("SEARCH", nil, 0, 0); len(got) != 1 || got[0].score != 1 {
		t.Fatalf("exact id: %+v", got)
	}
}

func TestValidatorCacheIsBounded(t *testing.T) {
	c := newValidatorCache(3)
	schema := func(i int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"maxLength":%d}`, i)) }
	var first *validator
	for i := range 10 {
		v := c.get(sha256.Sum256(schema(i)), schema(i))
		if i == 0 {
			first = v
		}
		if again := c.get(sha256.Sum256(schema(i)), schema(i)); again != v {
			t.Fatal("a cached validator was compiled again")
		}
	}
	if n := c.len(); n != 3 {
		t.Fatalf("%d cached, want 3", n)
	}
	if c.get(sha256.Sum256(schema(0)), schema(0)) == first {
		t.Fatal("the least recently used validator was kept")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { c.get(sha256.Sum256(schema(i%4)), schema(i%4)) })
	}
	wg.Wait()
	if n := c.len(); n != 3 {
		t.Fatalf("%d cached after concurrent use", n)
	}
}

func TestCostCell(t *testing.T) {
	c := newCostCell()
	if c.hint() != (Cost{}) {
		t.Fatal("a new cell has a cost")
	}
	c.observe(0, 0)
	c.observe(100*time.Millisecond, 50)
	if got := c.hint(); got != (Cost{AvgMs: 20, AvgTokens: 10}) {
		t.Fatalf("cost %+v", got)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	for _, c := range []cursor{{"0a1b2c3d", "ffffffff", 0}, {"0123456789abcdef", "00000000", 12345}} {
		got, err := decodeCursor(c.encode())
		if err != nil || got != c {
			t.Fatalf("%+v → %+v, %v", c, got, err)
		}
	}
}

func FuzzDecodeCursor(f *testing.F) {
	// Seeds from real traffic: the golden files' and the recorded peers' frames (internal/fuzzseed).
	for _, v := range fuzzseed.Find(f, "next_cursor", fuzzseed.NEKTEResponse) {
		var s string
		if json.Unmarshal(v, &s) == nil {
			f.Add(s)
		}
	}
	f.Add(cursor{"0a1b2c3d", "ffffffff", 7}.encode())
	f.Add("YzF8eHh4fDF8Mg")
	f.Add("")
	f.Add("YzF8YWJ8Y2R8MDE") // offset "01"
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCursor(s)
		if err != nil {
			return
		}
		if c.offset < 0 || !isHex(c.version) || !isHex(c.filter) {
			t.Fatalf("accepted %+v", c)
		}
		if again, err := decodeCursor(c.encode()); err != nil || again != c {
			t.Fatalf("round trip %+v → %+v, %v", c, again, err)
		}
	})
}
